"""Per-cycle harness overhead of the real loop with the mock policy.

    python scripts/bench_loop.py --cycles 1000

Runs the real `Loop` on a temporary home (real journal with fsync of intents,
real state.json writes, real files) with a mock script that alternates two
file appends, and times each part of every cycle: the bare mock decision,
context building, journal appends, state writes and the tool itself. Reports
medians and totals as ratios against the bare decision measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conway.config import load_config  # noqa: E402
from conway.home import Home, init_home  # noqa: E402
from conway.journal import Journal  # noqa: E402
from conway.loop import Clock, Loop, LoopParts  # noqa: E402
from conway.observe.synthetic import SyntheticObserver  # noqa: E402
from conway.policies.mock import MockPolicy, MockScript  # noqa: E402
from conway.state import StateStore  # noqa: E402
from conway.tools.registry import build_toolbox  # noqa: E402


class NoSleepClock(Clock):
    def __init__(self):
        self.offset = 0.0

    def monotonic(self):
        return time.monotonic() + self.offset

    def sleep(self, seconds):
        self.offset += seconds


def timed(bucket: dict, name: str, fn):
    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            bucket[name].append(time.perf_counter() - t)
    return wrapper


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=1000, help="cycles to run (>= 1000 for the README numbers)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        init_home(home)
        cfg = load_config(None, [f"agent.max_steps={args.cycles}", "agent.repetition_limit=1000000"])
        steps = [{"action": {"type": "append_file", "path": "bench.txt", "text": t}} for t in ("a", "b")]
        policy = MockPolicy(MockScript.model_validate({"steps": steps, "repeat": True}))
        times: dict[str, list[float]] = defaultdict(list)
        policy.decide = timed(times, "decide (bare mock)", policy.decide)
        toolbox = build_toolbox(cfg.tools, home.scratch, gui=False)
        toolbox.run = timed(times, "tool (append_file)", toolbox.run)
        journal = Journal(home.journal_dir, fsync=cfg.journal.fsync)
        journal.append = timed(times, "journal append (+fsync of intents)", journal.append)
        observer = SyntheticObserver()
        observer.observe = timed(times, "observe (synthetic PNG, cached)", observer.observe)
        loop = Loop(LoopParts(home=home, config=cfg, policy=policy, observer=observer, toolbox=toolbox,
                              journal=journal, session="bench", clock=NoSleepClock(), say=lambda s: None))
        loop.build_context = timed(times, "context build", loop.build_context)
        loop.state_store.save = timed(times, "state.json write (atomic)", loop.state_store.save)
        loop.memory.add = timed(times, "memory.md update (atomic)", loop.memory.add)
        started = time.perf_counter()
        loop.run()
        wall = time.perf_counter() - started
        journal.close()
    n = args.cycles
    base = sum(times["decide (bare mock)"]) / n
    print(f"{n} cycles in {wall:.2f} s ({wall / n * 1e3:.3f} ms per cycle)")
    print(f"{'part':38} {'per cycle ms':>12} {'median call ms':>15} {'x bare decision':>16}")
    for name, values in times.items():
        per_cycle = sum(values) / n
        print(f"{name:38} {per_cycle * 1e3:12.3f} {statistics.median(values) * 1e3:15.3f} {per_cycle / base:16.1f}")
    harness = wall / n - base - sum(times["tool (append_file)"]) / n
    print(f"{'whole harness overhead':38} {harness * 1e3:12.3f} {'':15} {harness / base:16.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
