"""Worker-pool throughput: vision-check cases per minute at 1, 2 and 4 workers, as ratios to 1 worker.

    .venv/bin/python -m scripts.bench.bench_pool --samples 24 --model-s 0.5

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


class FakeModel:
    """A FAKE model server: the same answer after a fixed delay, any number of requests at once."""

    def __init__(self, delay_s: float):
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
                                         "message": {"role": "assistant", "content": ANSWER}}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=24, help="cases per run (default 24)")
    ap.add_argument("--model-s", type=float, default=0.5, help="the fake model's seconds per answer (default 0.5)")
    ap.add_argument("--workers", default="1,2,4", help="worker counts to compare, the first the baseline")
    ap.add_argument("--size", default="1280x800", help="image size of the cases (default 1280x800)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (reports)")
    args = ap.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]
    work = Path(tempfile.mkdtemp(prefix="conway-bench-pool-"))
    home = Home(work / "home")
    home.ensure_dirs()
    fake = FakeModel(args.model_s)
    rows = []
    try:
        config = load_config(None, ["policy=generic", f"policy.endpoint={fake.url}", "policy.structured_output=none"])
        for n in counts:
            pool = Pool(PoolSpec(workers=n), PolicyRecipe(config, str(home.root))) if n > 1 else None
            fake.max_in_flight = 0
            started = time.perf_counter()
            code = vision_check(home, config, output=str(work / f"w{n}.json"), samples=args.samples, seed=0,
                                size=args.size, progress=False, pool=pool, say=lambda _line: None)
            wall = time.perf_counter() - started
            rows.append({"workers": n, "exit_code": code, "wall_s": round(wall, 3),
                         "cases_per_min": round(args.samples / wall * 60, 2), "max_in_flight": fake.max_in_flight})
    finally:
        fake.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    base = rows[0]["cases_per_min"]
    print(f"vision-check, {args.samples} cases of {args.size}, fake model {args.model_s} s per answer")
    print(f"{'workers':>7} {'wall s':>8} {'cases/min':>10} {'× 1st':>6} {'in flight':>9}")
    for r in rows:
        r["ratio"] = round(r["cases_per_min"] / base, 3)
        print(f"{r['workers']:>7} {r['wall_s']:>8.2f} {r['cases_per_min']:>10.1f} {r['ratio']:>6.2f} "
              f"{r['max_in_flight']:>9}")
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": args.samples, "model_s": args.model_s, "size": args.size,
                                               "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
