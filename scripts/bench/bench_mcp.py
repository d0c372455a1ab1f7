"""python -m scripts.bench.bench_mcp [--steps 40] [--json out.json]

What an MCP tool costs in the real loop, against a direct tool in the same run:
the mock policy drives `--steps` cycles of each, in a fresh home, on this machine:

* baseline: `read_file` of a small file (no side effect, no intent);
* `mcp` read-only: the fixture server's `lookup` (tests/fixtures/mcp_server.py,
  a stdio server written with the SDK's server API);
* `mcp` with a side effect: `append_line` (intent fsynced first, then the call);
* the server's start-up (spawn, handshake, tool listing) as the run measures it.

Each figure is wall time per cycle (observe, context, decide, validate, act,
record); the ratio is against the baseline. Prints a Markdown table; `--json`
also writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from conway.config import load_config  # noqa: E402
from conway.observe.synthetic import SyntheticObserver  # noqa: E402
from conway.policies.mock import MockPolicy, MockScript  # noqa: E402
from conway.session.app import RunRequest, run_agent  # noqa: E402
from conway.store.home import Home, init_home  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "mcp_server.py"


def run(home: Home, action: dict, steps: int) -> tuple[float, float]:
    """(seconds per cycle, seconds from run start to the first cycle) for `steps` cycles of `action`."""
    cfg = load_config(home.config, [f"agent.max_steps={steps}", "agent.repetition_limit=100000"])
    policy = MockPolicy(MockScript.model_validate({"steps": [{"action": action}], "repeat": True}))
    marks: list[float] = []
    started = time.perf_counter()

    def say(line: str) -> None:
        if line.startswith("step "):
            marks.append(time.perf_counter())

    run_agent(home, cfg, RunRequest(single_session=False, policy=policy, observer=SyntheticObserver()), say=say)
    first, last = marks[0], marks[-1]
    return (last - first) / max(1, len(marks) - 1), first - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="conway-bench-mcp-") as tmp:
        home = Home(Path(tmp) / "home")
        os.environ["CONWAY_HOME"] = str(home.root)
        init_home(home)
        (home.scratch / "small.txt").write_text("hello\n")
        out = Path(tmp) / "appended.txt"
        rows = {}
        rows["read_file (baseline)"] = run(home, {"type": "read_file", "path": "small.txt"}, args.steps)
        home.config.write_text(json.dumps({"tools": {"mcp_servers": [  # from here on the server starts each run
            {"name": "fx", "command": sys.executable, "args": [str(FIXTURE)], "startup_timeout_s": 120}]}}))
        rows["mcp read-only (lookup)"] = run(
            home, {"type": "mcp", "server": "fx", "tool": "lookup", "arguments": {"key": "alpha"}}, args.steps)
        rows["mcp side effect (append_line)"] = run(
            home, {"type": "mcp", "server": "fx", "tool": "append_line",
                   "arguments": {"path": str(out), "text": "x"}}, args.steps)
    base = rows["read_file (baseline)"][0]
    print(f"{args.steps} cycles each, {os.cpu_count()} CPUs\n")
    print("| action | ms per cycle | ratio to read_file | run start to first step (s) |")
    print("| --- | --- | --- | --- |")
    for name, (per, start) in rows.items():
        print(f"| {name} | {per * 1000:.1f} | {per / base:.2f}x | {start:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({k: {"s_per_cycle": v[0], "start_s": v[1]} for k, v in rows.items()},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
