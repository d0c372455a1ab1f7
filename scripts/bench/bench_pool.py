"""Worker-pool throughput: vision-check cases (or rollouts) per minute at 1, 2 and 4 workers, as ratios to 1 worker.

    .venv/bin/python -m scripts.bench.bench_pool --samples 24 --model-s 0.5
    .venv/bin/python -m scripts.bench.bench_pool --rollouts --samples 24 --model-s 2 --workers 1,2,4,8

`--rollouts` measures `conway rollouts` instead: `--samples` rollouts (6 tasks of a generated suite, `--samples`
/ 6 each) through the real loop, each on its own disposable desktop (bubblewrap, Xvfb, a session bus) that the
worker starts and removes, three decisions a rollout (write the file the checker wants, look, finish) and the
checker's score as the reward; every reward must be 1.

The model is a FAKE: a scripted OpenAI-compatible server started here that
answers every request with the same click after `--model-s` seconds and takes
requests in parallel (a server with enough slots). So the figures are the
pool's own: what it costs to start workers (each a fresh process that imports
Conway and builds its policy), to make and encode each case's image in the
worker and to hand cases out, against a model time that parallel workers hide.
Every run is the same seeded vision-check in one process; only `--workers`
changes. Everything goes to a temporary folder that is removed, unless --keep.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from conway.config import load_config
from conway.evals.pool import PolicyRecipe, Pool, PoolSpec
from conway.evals.vision_check import vision_check
from conway.store.home import Home

ANSWER = json.dumps({"thought": "", "action": {"type": "click", "x": 10, "y": 10}})
WRITE_OK = json.dumps({"thought": "", "action": {"type": "shell", "command": "echo ok > ~/out.txt"}})
"""Every decision of a rollout: write the file the task's checker wants (idempotent, so any number of steps)."""
ROLLOUT_TASKS = 6


class FakeModel:
    """A FAKE model server: the same answer after a fixed delay, any number of requests at once."""

    def __init__(self, delay_s: float, answer: str = ANSWER):
        self.delay_s = delay_s
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fake._lock:
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                time.sleep(fake.delay_s)
                with fake._lock:
                    fake.in_flight -= 1
                self._send({"id": "x", "object": "chat.completion", "created": 0, "model": "fake-model",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": answer}}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _suite(folder: Path) -> Path:
    """ROLLOUT_TASKS tasks checked by `cat ~/out.txt` against `ok` (OSWorld's format)."""
    tasks = folder / "examples" / "os"
    tasks.mkdir(parents=True)
    for n in range(ROLLOUT_TASKS):
        tasks.joinpath(f"t{n}.json").write_text(json.dumps({
            "id": f"t{n}", "instruction": "Write ok into ~/out.txt.", "config": [], "related_apps": ["os"],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_command_line", "command": "cat ~/out.txt", "shell": True},
                          "expected": {"type": "rule", "rules": {"expected": "ok\n"}}}}))
    return folder


def _silent(_line: str) -> None:
    """Says nothing (module level: the rollout runner goes to the pool's workers by pickle)."""


def _rollouts(home: Home, config: Any, suite: Path, out: Path, samples: int, steps: int, pool: Pool | None
              ) -> tuple[int, dict[str, Any]]:
    from conway.evals.rollouts import rollouts
    code = rollouts(home, config, str(suite), output=str(out), samples=max(1, samples // ROLLOUT_TASKS),
                    max_steps=steps, quiet=True, pool=pool, say=_silent)
    manifest = json.loads((out / "manifest.json").read_text()) if (out / "manifest.json").exists() else {}
    return code, manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=24, help="cases (or rollouts) per run (default 24)")
    ap.add_argument("--model-s", type=float, default=0.5, help="the fake model's seconds per answer (default 0.5)")
    ap.add_argument("--workers", default="1,2,4", help="worker counts to compare, the first the baseline")
    ap.add_argument("--size", default="1280x800", help="image size of the cases (default 1280x800)")
    ap.add_argument("--rollouts", action="store_true",
                    help="measure `conway rollouts` on disposable desktops instead of vision-check")
    ap.add_argument("--steps", type=int, default=3, help="decisions a rollout with --rollouts (default 3)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (reports)")
    args = ap.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]
    work = Path(tempfile.mkdtemp(prefix="conway-bench-pool-"))
    home = Home(work / "home")
    home.ensure_dirs()
    fake = FakeModel(args.model_s, WRITE_OK if args.rollouts else ANSWER)
    suite = _suite(work / "suite") if args.rollouts else None
    samples = max(1, args.samples // ROLLOUT_TASKS) * ROLLOUT_TASKS if args.rollouts else args.samples
    rows = []
    try:
        config = load_config(None, ["policy=generic", f"policy.endpoint={fake.url}", "policy.structured_output=none"])
        for n in counts:
            pool = Pool(PoolSpec(workers=n), PolicyRecipe(config, str(home.root))) if n > 1 else None
            fake.max_in_flight = 0
            started = time.perf_counter()
            row: dict[str, Any] = {"workers": n}
            if suite is not None:
                code, manifest = _rollouts(home, config, suite, work / f"r{n}", samples, args.steps, pool)
                rewards = [r["reward"] for r in manifest.get("rollouts", [])]
                if len(rewards) != samples or set(rewards) != {1.0}:
                    raise SystemExit(f"{n} worker(s): rewards {rewards} (exit {code}); want {samples} of 1.0")
            else:
                code = vision_check(home, config, output=str(work / f"w{n}.json"), samples=samples, seed=0,
                                    size=args.size, progress=False, pool=pool, say=lambda _line: None)
            wall = time.perf_counter() - started
            row.update({"exit_code": code, "wall_s": round(wall, 3), "cases_per_min": round(samples / wall * 60, 2),
                        "max_in_flight": fake.max_in_flight})
            rows.append(row)
    finally:
        fake.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    base = rows[0]["cases_per_min"]
    what = (f"rollouts, {samples} of {ROLLOUT_TASKS} tasks on disposable desktops, {args.steps} decisions each"
            if args.rollouts else f"vision-check, {samples} cases of {args.size}")
    print(f"{what}, fake model {args.model_s} s per answer")
    print(f"{'workers':>7} {'wall s':>8} {'cases/min':>10} {'× 1st':>6} {'in flight':>9}")
    for r in rows:
        r["ratio"] = round(r["cases_per_min"] / base, 3)
        print(f"{r['workers']:>7} {r['wall_s']:>8.2f} {r['cases_per_min']:>10.1f} {r['ratio']:>6.2f} "
              f"{r['max_in_flight']:>9}")
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": samples, "model_s": args.model_s, "size": args.size,
                                               "rollouts": args.rollouts, "steps": args.steps, "rows": rows},
                                              indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
