"""Per-cycle harness overhead of the real loop with the mock policy, against one screen capture.

    python -m scripts.bench.bench_loop --cycles 1000

Runs the real `Loop` on a temporary home (real journal with the durable intent,
real state.json writes, real files) with a mock script that alternates two
file appends (so every cycle has a side effect and its synced intent), and
times each part of every cycle: the bare mock decision, context building,
journal appends, state writes, memory, the tool itself and every fsync or
fdatasync.

The reference, measured in the same run on a private Xvfb screen of
1280x800 showing an editor (needs Xvfb, xdotool and tkinter; skipped with the
reason otherwise): one mss capture plus the JPEG q85 encode of that frame, what
every real cycle pays before the model sees anything. Harness overhead is
everything but the (synthetic) observation, the mock decision and the tool;
it is reported with and without the syncs (the intent's fdatasync, a property of the disk).

`--observe screen`: the loop observes that Xvfb screen itself, through the observer a real run builds
(`ScreenObserver.from_config`: capture, exact hash, the change test, the screenshot archive); each
observation's own time is left out of the harness as the synthetic one's is. The harness then pays for
what a real frame leaves behind (caches cold after several passes over 4 MB of pixels), which a cached
synthetic PNG does not show. The observation's median in the loop is printed beside the same observer's
taken alone between the runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from conway.config import load_config
from conway.loop.control import Clock
from conway.loop.cycle import Loop
from conway.loop.parts import LoopParts
from conway.observe.synthetic import SyntheticObserver
from conway.policies.mock import MockPolicy, MockScript
from conway.store.home import Home, init_home
from conway.store.journal import Journal
from conway.tools.registry import build_toolbox


class NoSleepClock(Clock):
    def __init__(self):
        self.offset = 0.0

    def monotonic(self):
        return time.monotonic() + self.offset

    def sleep(self, seconds):
        self.offset += seconds


class Meter:
    """Seconds per part, per call and per cycle; fsyncs and fdatasyncs counted apart, outside the tool only."""

    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = defaultdict(list)
        self.cycles: list[dict[str, float]] = []
        self.fsync_calls: list[float] = []
        self._in_tool = False

    def timed(self, name: str, fn):
        def wrapper(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                took = time.perf_counter() - t
                self.calls[name].append(took)
                if self.cycles:
                    cycle = self.cycles[-1]
                    cycle[name] = cycle.get(name, 0.0) + took
        return wrapper

    def cycle(self, fn):
        """The loop's progress write (`RunState.progress`) runs first in every cycle: it opens the cycle's record."""
        def wrapper(*a, **kw):
            self.cycles.append({"_start": time.perf_counter()})
            return fn(*a, **kw)
        return wrapper

    def tool(self, fn):
        def wrapper(*a, **kw):
            self._in_tool = True
            try:
                return fn(*a, **kw)
            finally:
                self._in_tool = False
        return wrapper

    def fsync(self, real):
        def wrapper(fd):
            t = time.perf_counter()
            try:
                return real(fd)
            finally:
                if not self._in_tool:
                    took = time.perf_counter() - t
                    self.fsync_calls.append(took)
                    if self.cycles:
                        self.cycles[-1]["fsync"] = self.cycles[-1].get("fsync", 0.0) + took
        return wrapper

    def close_cycles(self, end: float) -> None:
        """Each cycle's wall time runs to the next cycle's start (the last one to `end`)."""
        for cycle, nxt in zip(self.cycles, self.cycles[1:] + [{"_start": end}]):
            cycle.setdefault("_wall", nxt["_start"] - cycle["_start"])


OBSERVE_SCREEN = "observe (screen: capture, hash, change, archive)"
NOT_HARNESS = ("decide (bare mock)", "tool (append_file)", "observe (synthetic PNG, cached)", OBSERVE_SCREEN)


class Reference:
    """One mss capture + JPEG q85 encode of a 1280x800 frame on a private Xvfb showing an editor."""

    size = (1280, 800)

    def __init__(self) -> None:
        self.times: list[float] = []
        self.observe_times: list[float] = []
        """The loop's own screen observer, observing alone (`--observe screen`)."""
        self.display: str | None = None
        self.why_not: str | None = None
        self._procs: list = []
        self._screen = None

    def __enter__(self) -> "Reference":
        import shutil

        for tool in ("Xvfb", "xdotool"):
            if shutil.which(tool) is None:
                self.why_not = f"{tool} is not installed"
                return self
        try:
            import tkinter  # noqa: F401  (the scene is a Tk editor)
        except ImportError:
            self.why_not = "tkinter is not available"
            return self
        from conway.observe.screen import ScreenObserver
        from scripts.bench.bench_observe import start_scene, start_xvfb

        self._tmp = tempfile.TemporaryDirectory()
        xvfb, display = start_xvfb(*self.size)
        self._procs.append(xvfb)
        self._procs.append(start_scene("ui", display, self.size, Path(self._tmp.name)))
        self.display = display
        self._screen = ScreenObserver(display=display)
        self._screen.capture()  # connect once, as a running agent is
        return self

    def grab(self, frames: int) -> None:
        if self._screen is None:
            return
        from conway.imaging import encode_jpeg

        for _ in range(frames):
            t = time.perf_counter()
            encode_jpeg(self._screen.capture().image())
            self.times.append(time.perf_counter() - t)

    def observe_alone(self, observer, frames: int) -> None:
        """Time `observer.observe()` alone (the loop's own observer, `--observe screen`)."""
        if observer is None:
            return
        for _ in range(frames):
            t = time.perf_counter()
            observer.observe()
            self.observe_times.append(time.perf_counter() - t)

    def __exit__(self, *exc) -> None:
        from scripts.bench.bench_observe import stop

        if self._screen is not None:
            self._screen.close()
        for proc in reversed(self._procs):
            stop(proc)
        if self._procs:
            self._tmp.cleanup()


class KeepSizeJournal(Journal):
    """Blocks set aside past the file's end (fallocate, FALLOC_FL_KEEP_SIZE): readers see the data alone, but
    each append moves the file's length, metadata the intent's fdatasync then commits (issue 32 measured it)."""

    preallocate_way = "keep_size"


class GrowingFsyncJournal(Journal):
    """The journal before issue 26: appends grow the file, and each intent is fsynced (data and inode)."""

    preallocate_bytes = 0
    sync_call = "fsync"


class FallocatedJournal(Journal):
    """Space reserved with posix_fallocate instead of zeros: unwritten extents, which a write must convert."""

    def _preallocate(self, end: int) -> None:
        assert self._fd is not None
        target = min(self.max_file_bytes, end + self.preallocate_bytes)
        if target > max(end, self._alloc):
            os.posix_fallocate(self._fd, self._alloc, target - self._alloc)
            os.fsync(self._fd)
            self._alloc = target


VARIANTS = {"fdatasync": Journal, "fsync": GrowingFsyncJournal, "fallocate": FallocatedJournal,
            "keep_size": KeepSizeJournal}
"""--sync: the journal as it is (appends into a zero-filled tail, fdatasync), as it was, or with fallocate."""
LABELS = {"fdatasync": "a zero-filled tail, fdatasync (the journal as it is)",
          "keep_size": "blocks set aside past the end (FALLOC_FL_KEEP_SIZE), fdatasync",
          "fsync": "a growing file, fsync (the journal before issue 26)",
          "fallocate": "a posix_fallocate'd tail, fdatasync"}


def screen_observer(home: Home, display: str):
    """The observer a real run builds for `display` (its screenshot archive in `home`)."""
    from conway.observe.screen import ScreenObserver

    os.environ["DISPLAY"] = display
    return ScreenObserver.from_config(load_config(None, ["observe.source=screen"]), home)


def run_block(home: Home, cycles: int, meter: Meter, journal_class: type[Journal] = Journal,
              screen: str | None = None) -> None:
    """One run of the real loop for `cycles` cycles, every part timed (`screen`: an X display to observe)."""
    cfg = load_config(None, [f"agent.max_steps={cycles}", "agent.repetition_limit=1000000"])
    steps = [{"action": {"type": "append_file", "path": "bench.txt", "text": t}} for t in ("a", "b")]
    policy = MockPolicy(MockScript.model_validate({"steps": steps, "repeat": True}))
    policy.decide = meter.timed("decide (bare mock)", policy.decide)
    toolbox = build_toolbox(cfg.tools, home.scratch, gui=False)
    toolbox.run = meter.tool(meter.timed("tool (append_file)", toolbox.run))
    journal = journal_class(home.journal_dir, fsync=cfg.journal.fsync)
    journal.append = meter.timed("journal append (+sync of intents)", journal.append)
    if screen is not None:
        observer = screen_observer(home, screen)
        observer.observe = meter.timed(OBSERVE_SCREEN, observer.observe)
    else:
        observer = SyntheticObserver()
        observer.observe = meter.timed("observe (synthetic PNG, cached)", observer.observe)
    loop = Loop(LoopParts(home=home, config=cfg, policy=policy, observer=observer, toolbox=toolbox,
                          journal=journal, session="bench", clock=NoSleepClock(), say=lambda s: None))
    loop.state.progress = meter.cycle(loop.state.progress)
    loop.contexts.build = meter.timed("context build", loop.contexts.build)
    loop.state.store.save = meter.timed("state.json write (atomic, + previous)", loop.state.store.save)
    loop.state.store.save_current = meter.timed("state.json pending copy (atomic)",
                                                loop.state.store.save_current)
    loop.memory.memory.add = meter.timed("memory.md append", loop.memory.memory.add)
    first = len(meter.cycles)
    real = os.fsync, os.fdatasync
    os.fsync, os.fdatasync = meter.fsync(real[0]), meter.fsync(real[1])
    try:
        loop.run()
    finally:
        os.fsync, os.fdatasync = real
        journal.close()
        observer.close()
    meter.close_cycles(time.perf_counter())
    if len(meter.cycles) > first + 1:
        meter.cycles.pop()  # the last one also carries the session's end (final state write, end event)


def report(meter: Meter, reference: float | None, title: str) -> float:
    """Print one variant's table; returns its median harness overhead per cycle (seconds)."""
    n = len(meter.cycles)
    base = statistics.median(meter.calls["decide (bare mock)"])
    print(f"\n{title}: {n} cycles")
    print(f"{'part':40} {'ms per cycle':>12} {'median call ms':>15} {'x bare decision':>16} {'% of capture+encode':>20}")

    def row(name: str, per_cycle: float, median: str = "") -> None:
        share = f"{per_cycle / reference * 100:19.1f}%" if reference else f"{'n/a':>20}"
        print(f"{name:40} {per_cycle * 1e3:12.3f} {median:>15} {per_cycle / base:16.1f} {share}")

    for name, values in meter.calls.items():
        row(name, sum(values) / n, f"{statistics.median(values) * 1e3:.3f}")
    fs = meter.fsync_calls
    row(f"(f|fdata)sync outside the tool ({len(fs)})", sum(fs) / n, f"{statistics.median(fs) * 1e3:.3f}" if fs else "")
    harness = [c["_wall"] - sum(c.get(k, 0.0) for k in NOT_HARNESS) for c in meter.cycles]
    bare = [h - c.get("fsync", 0.0) for h, c in zip(harness, meter.cycles)]
    print(f"{'harness overhead per cycle':40} {'median ms':>12} {'mean ms':>15} {'':16} {'% (median)':>20}")
    for name, values in (("whole (all but observe, decide, tool)", harness), ("  without the syncs", bare)):
        med, mean = statistics.median(values), statistics.fmean(values)
        share = f"{med / reference * 100:19.1f}%" if reference else f"{'n/a':>20}"
        print(f"{name:40} {med * 1e3:12.3f} {mean * 1e3:15.3f} {'':16} {share}")
    return statistics.median(harness)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=1000, help="cycles to run per variant (>= 1000 for the figures in docs/measurements.md)")
    ap.add_argument("--blocks", type=int, default=5, help="loop runs per variant, with reference frames before, between and after")
    ap.add_argument("--frames", type=int, default=60, help="capture+encode reference frames in all")
    ap.add_argument("--sync", default="fdatasync", help="the intent's sync, or several comma-separated, their runs "
                    "taking turns: fdatasync (the journal as it is: a zero-filled tail, fdatasync), fsync (as "
                    "before: a growing file, fsync), fallocate (a posix_fallocate'd tail, fdatasync), keep_size (blocks set aside past the "
                    "end, FALLOC_FL_KEEP_SIZE, fdatasync); all: the four")
    ap.add_argument("--observe", choices=("synthetic", "screen"), default="synthetic",
                    help="synthetic: a cached PNG (the harness alone); screen: the loop observes the reference's "
                         "Xvfb screen through a real run's observer, with the journal as it is (needs Xvfb, "
                         "xdotool, tkinter)")
    args = ap.parse_args()
    if args.cycles < args.blocks or args.blocks < 1:
        print("bench_loop: --cycles must be at least --blocks (>= 1)", file=sys.stderr)
        return 1
    names = list(VARIANTS) if args.sync == "all" else [n.strip() for n in args.sync.split(",") if n.strip()]
    if args.observe == "screen" and args.sync != "fdatasync":
        print("bench_loop: --sync compares journals with the synthetic observer; --observe screen runs the journal "
              "as it is", file=sys.stderr)
        return 1
    if args.observe == "screen":
        names = ["screen"]
    elif not names or any(n not in VARIANTS for n in names):
        print(f"bench_loop: --sync takes {', '.join(VARIANTS)} (comma-separated) or all, not {args.sync!r}",
              file=sys.stderr)
        return 1
    meters = {n: Meter() for n in names}
    runs = args.blocks * len(names)
    per_gap = max(1, args.frames // (runs + 1))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, Reference() as ref:
        if args.observe == "screen" and ref.display is None:
            print(f"bench_loop: --observe screen needs the reference's screen: {ref.why_not}", file=sys.stderr)
            return 1
        homes = {n: Home(Path(tmp) / f"home-{n}") for n in names}
        for home in homes.values():
            init_home(home)
        alone = screen_observer(homes[names[0]], ref.display) if args.observe == "screen" else None

        def gap() -> None:
            ref.grab(per_gap)
            ref.observe_alone(alone, per_gap)

        for b in range(args.blocks):
            for n in names:  # the variants take turns, so load and disk state weigh on each alike
                gap()
                size = args.cycles // args.blocks + (1 if b < args.cycles % args.blocks else 0)
                if alone is not None:
                    run_block(homes[n], size, meters[n], Journal, screen=ref.display)
                else:
                    run_block(homes[n], size, meters[n], VARIANTS[n])
        gap()
        if alone is not None:
            alone.close()
    wall = time.perf_counter() - started
    reference = statistics.median(ref.times) if ref.times else None
    print(f"{runs} loop run(s), {wall:.1f} s in all with the reference; under {tempfile.gettempdir()}; "
          f"load average {os.getloadavg()[0]:.2f}")
    if reference is None:
        print(f"capture+encode reference not measured: {ref.why_not}")
    else:
        print(f"reference: one mss capture + JPEG q85 encode of a 1280x800 frame (Xvfb, editor scene), median of "
              f"{len(ref.times)} taken between the loop runs: {reference * 1e3:.3f} ms")
    if ref.observe_times:
        print(f"the loop's screen observer alone, between the runs: median {statistics.median(ref.observe_times) * 1e3:.3f} "
              f"ms of {len(ref.observe_times)}; in the loop: " + ", ".join(
                  f"{n} {statistics.median(meters[n].calls[OBSERVE_SCREEN]) * 1e3:.3f} ms" for n in names))
    medians = {n: report(meters[n], reference, f"intent sync: {n}, {LABELS[n]}" if n in LABELS else
                         "the loop observing the screen, the journal as it is") for n in names}
    if len(names) > 1 and reference:
        print("\nharness overhead, median per cycle: " + ", ".join(
            f"{n} {m * 1e3:.3f} ms = {m / reference * 100:.1f}%" for n, m in medians.items()))
        print("median sync call outside the tool: " + ", ".join(
            f"{n} {statistics.median(meters[n].fsync_calls) * 1e3:.3f} ms" for n in names if meters[n].fsync_calls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
