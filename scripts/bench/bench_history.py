"""The history row of `bench_model`: a UI-TARS conversation's faithful 5-screenshot window, the opt-in half slide and
one screenshot, side by side.

    python -m scripts.bench.bench_history [--cycles 8] [--threads 1] [--no-server]

The tiny VLM (random weights) in-process and on llama-server decides `--cycles` times on a screen that
changes every cycle (and a latest result that does), through Conway's UI-TARS conversation: with its agent's constant 5-screenshot window (the faithful default:
each step past the fifth lets the oldest screenshot go), with the opt-in half slide (`policy.deviations=
[half_slide]`: the window only grows, then slides by half), and with one screenshot. The latest result that
changes every cycle is sent in all three (`latest_result`), so they differ in the window alone. Every request is real; the past answers replayed are a
STAND-IN (one fixed short UI-TARS answer: random weights write garbage of any length), the past screenshots
the ones the policy sent. Printed per run: the share of prompt tokens served from cache from cycle 2 on (and
the median and the lowest cycle's), prompt tokens and time to first token (medians from cycle 2).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before llama.cpp loads
ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "tiny-vlm"
STAND_IN_ANSWER = "Thought: The dialog is still loading.\nAction: wait()"


def _observation(step: int):
    from PIL import Image

    from conway.protocols import Observation
    buf = io.BytesIO()
    Image.new("RGB", (640, 400), (37 * step % 256, 90, (200 - 23 * step) % 256)).save(buf, format="PNG")
    return Observation(png=buf.getvalue(), captured_size=(640, 400), source="synthetic", content_hash=f"h{step}",
                       change_key=f"k{step}")


def run(backend: str, images: int, cycles: int, threads: int, home: Path, *extra: str, window: str = "faithful"
        ) -> dict:
    from conway.config import load_config
    from conway.history import PastImage, TurnHistory
    from conway.policies.factory import build_model_policy
    from conway.policies.images import prepare_image
    from conway.protocols import ContextPart, DecisionContext
    from conway.store.home import Home

    cfg = load_config(None, ["policy=uitars-1.5-7b", f"policy.backend={backend}",
                             f"policy.model_path={TINY / 'tiny-vlm.gguf'}",
                             f"policy.mmproj_path={TINY / 'tiny-vlm-mmproj.gguf'}", "policy.max_tokens=8",
                             "policy.image_max_tokens=256", f"policy.history_images={images}", "runtime.n_ctx=4096",
                             f"runtime.n_threads={threads}", "runtime.startup_timeout_s=120",
                             "policy.deviations=[latest_result" + (",half_slide]" if window == "half_slide" else "]"),
                             *extra])
    kept_images, turns, slide = cfg.policy.history_window(12)
    history = TurnHistory(max_images=kept_images, max_turns=turns, slide=slide)
    rows = []
    with build_model_policy(cfg, Home(home)) as policy:
        for step in range(1, cycles + 1):
            obs = _observation(step)
            parts = [ContextPart("constitution.md", "I am the owner's agent."), ContextPart("goals.md", "Wait."),
                     ContextPart("latest result", f"wait() → ok (cycle {step})")]  # changes every cycle
            d = policy.decide(DecisionContext(parts=parts, observation=obs, step=step,
                                              action_types=["wait", "finish"], history=history))
            rows.append({"prompt": d.usage.get("prompt_tokens") or 0, "cached": d.usage.get("cached_tokens") or 0,
                         "ttft_ms": d.meta.get("timings", {}).get("ttft_ms") or round(d.latency_s * 1000, 1),
                         "images": d.meta.get("history", {}).get("past_images", 0) + 1})
            sent = prepare_image(obs, policy.settings.resize_rule, policy.rule, policy.settings.image_encoding)
            history.discard()
            history.propose(STAND_IN_ANSWER, PastImage(sent.data, sent.mime, sent.sent_size, sent.image_tokens))
            history.commit()
    later = rows[1:]
    shares = [r["cached"] / r["prompt"] for r in later if r["prompt"]]
    return {"backend": backend, "images": images, "window": window, "cycles": rows,
            "cache_share_after_first": round(sum(r["cached"] for r in later) / max(1, sum(r["prompt"] for r in later)), 3),
            "lowest_cycle_share": round(min(shares), 3) if shares else None,
            "median_cycle_share": round(statistics.median(shares), 3) if shares else None,
            "median_prompt_tokens": statistics.median(r["prompt"] for r in later),
            "median_ttft_ms": statistics.median(r["ttft_ms"] for r in later),
            "max_images": max(r["images"] for r in rows)}


def bench(cycles: int, threads: int, server: bool) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix="conway-bench-history-"))
    out = []
    backends = [("llama_cpp", ())]
    if server:
        backends.append(("http", ("runtime.server=llama-server",)))
    for backend, extra in backends:
        for images, window in ((5, "faithful"), (5, "half_slide"), (1, "faithful")):
            try:
                out.append(run(backend, images, cycles, threads, work / f"{backend}-{images}-{window}", *extra,
                               window=window))
            except Exception as exc:  # a missing llama-server or llama-cpp-python: said, the rest still runs
                print(f"(history row {backend} {window} with {images} screenshot(s) skipped: {exc})",
                      file=sys.stderr)
    return out


def print_rows(rows: list[dict]) -> None:
    print("\n== history · tiny-vlm · UI-TARS conversation, stand-in answers")
    print(f"{'backend':<10} {'window':<10} {'screens':>7} {'max sent':>8} {'prompt':>7} {'TTFT ms':>8} "
          f"{'cache share':>11} {'median':>7} {'lowest':>7}")
    for r in rows:
        print(f"{r['backend']:<10} {r['window']:<10} {r['images']:>7} {r['max_images']:>8} "
              f"{r['median_prompt_tokens']!s:>7} "
              f"{r['median_ttft_ms']!s:>8} {r['cache_share_after_first']!s:>11} {r['median_cycle_share']!s:>7} "
              f"{r['lowest_cycle_share']!s:>7}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-server", action="store_true")
    args = ap.parse_args()
    if args.cycles < 2:
        print("bench_history: --cycles must be at least 2 (cache figures start at the second cycle)", file=sys.stderr)
        return 1
    print_rows(bench(args.cycles, args.threads, not args.no_server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
