"""vision-check throughput: cases per second serially vs `--parallel K` on one llama-server with K slots.

    .venv/bin/python -m scripts.bench.bench_vision_check --slots 4 --samples 32

Starts llama.cpp's `llama-server` (runtime.server=llama-server: configured,
on PATH, or built by scripts/build/build_llama_server.sh into .cache/llama-server)
with `--parallel K` on the tiny random-weight VLM in tests/fixtures/tiny-vlm
(or --model/--mmproj), through Conway's own runtime, then runs the same seeded
vision-check twice against that one server: once with one request at a time,
once with K at a time. Prints cases/s for both and the ratio. Hit rates of
the random-weight model mean nothing; only the speed is measured. Everything
(reports, the server log) goes to a temporary folder that is removed, unless
--keep. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

from conway.config import load_config  # noqa: E402
from conway.errors import UserError  # noqa: E402
from conway.evals.vision_check import vision_check  # noqa: E402
from conway.store.home import Home  # noqa: E402

TINY = REPO / "tests" / "fixtures" / "tiny-vlm"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=4, help="K: llama-server --parallel slots and vision-check --parallel")
    ap.add_argument("--samples", type=int, default=32, help="cases per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", default="448x280", help="image size WxH (default 448x280: 160 image tokens)")
    ap.add_argument("--model", default=str(TINY / "tiny-vlm.gguf"))
    ap.add_argument("--mmproj", default=str(TINY / "tiny-vlm-mmproj.gguf"))
    ap.add_argument("--ctx-per-slot", type=int, default=4096, help="context tokens per slot (n_ctx = K x this)")
    ap.add_argument("--threads", type=int, default=None, help="llama-server threads (default: Conway's default)")
    ap.add_argument("--max-tokens", type=int, default=64, help="generated tokens per decision")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON to FILE")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (reports, server log)")
    args = ap.parse_args(argv)
    if args.slots < 2:
        ap.error("--slots must be at least 2 (it is compared with 1)")

    work = Path(tempfile.mkdtemp(prefix="conway-bench-vision-"))
    home = Home(work / "home")
    home.ensure_dirs()
    overrides = ["policy=generic", "policy.backend=http", f"policy.model_path={args.model}",
                 f"policy.mmproj_path={args.mmproj}", f"policy.max_tokens={args.max_tokens}",
                 "runtime.server=llama-server", f"runtime.parallel={args.slots}",
                 f"runtime.n_ctx={args.ctx_per_slot * args.slots}"]
    if args.threads:
        overrides.append(f"runtime.n_threads={args.threads}")
    results: dict = {"slots": args.slots, "samples": args.samples, "size": args.size, "seed": args.seed,
                     "model": args.model, "overrides": overrides, "cpus": os.cpu_count()}
    policy = None
    try:
        cfg = load_config(None, overrides)
        from conway.policies.factory import build_policy
        started = time.perf_counter()
        policy = build_policy(cfg, home)
        results["server_start_s"] = round(time.perf_counter() - started, 2)
        print("\n".join(getattr(policy, "description", [])), file=sys.stderr)
        quiet = lambda _s: None  # noqa: E731

        def run(name: str, parallel: int, samples: int) -> dict:
            out = work / f"{name}.json"
            code = vision_check(home, cfg, output=str(out),
                                samples=samples, seed=args.seed, size=args.size, parallel=parallel,
                                argv=["vision-check", "--parallel", str(parallel)], progress=False,
                                policy=policy, say=quiet)
            data = json.loads(out.read_text())
            s = data["summary"]
            return {"exit_code": code, "cases_per_s": s["cases_per_s"], "wall_s": s["wall_s"],
                    "latency_p50_s": s["latency_s"]["p50"], "latency_p95_s": s["latency_s"]["p95"],
                    "hits": s["hits"], "errors": s["errors"]}

        run("warmup", 1, 2)  # first requests load caches; not measured
        results["serial"] = run("serial", 1, args.samples)
        results["parallel"] = run("parallel", args.slots, args.samples)
        results["speedup"] = round(results["parallel"]["cases_per_s"] / results["serial"]["cases_per_s"], 2)
    except UserError as exc:
        print(f"bench_vision_check: {exc}", file=sys.stderr)
        return 1
    finally:
        if policy is not None:
            policy.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    s, p = results["serial"], results["parallel"]
    print(f"vision-check on {Path(args.model).name}, {args.samples} cases at {args.size}, llama-server with "
          f"{args.slots} slots, {os.cpu_count()} CPUs")
    print(f"  serial      {s['cases_per_s']:.2f} cases/s  (p50 {s['latency_p50_s']:.3f} s, wall {s['wall_s']:.1f} s)")
    print(f"  parallel {args.slots}  {p['cases_per_s']:.2f} cases/s  (p50 {p['latency_p50_s']:.3f} s, "
          f"wall {p['wall_s']:.1f} s)")
    print(f"  speed-up    {results['speedup']:.2f}x")
    if args.keep:
        print(f"  reports and server log kept in {work}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
