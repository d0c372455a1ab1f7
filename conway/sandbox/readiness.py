"""When a disposable desktop is ready: measured instead of slept (the `tasks.waits: measured` deviation).

OSWorld's runner sleeps fixed times (60 s after setup, 20 s before evaluation) so that applications have
started and have written what the checkers read. Measured readiness ends such a wait once the desktop is
quiet, never later than the fixed time:

- its windows: the same mapped windows for `quiet_s` (an application still opening one is not ready);
- its files: no file under the task's home created, grown or rewritten for `quiet_s` (a browser commits its
  bookmarks a few seconds after the click, an office suite its settings on exit);
- its processes: the desktop's sandboxed processes used under `CPU_IDLE` of one core over the last `quiet_s`.
  A process that keeps a steady load (a playing video) would hold every wait at its cap, so windows and files
  unchanged for `STEADY_FACTOR` × `quiet_s` count as ready whatever the CPU does.

Some applications keep a write back on purpose: Chromium commits `Preferences` up to 10 s after a change
(its ImportantFileWriter's commit interval), so while Chromium runs, the quiet time before an evaluation is
at least `LAZY_WRITERS["chromium"]` (what OSWorld's 20 s settle covers by its length).

Everything is read from outside the sandbox: the X display through xdotool (`conway.sandbox.windows`), the
home's files through the host's view of it, the processes as the bubblewrap processes whose command line
binds the home, and their children.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil

from conway.sandbox import windows

CPU_IDLE = 0.05
"""The desktop counts as idle below this share of one core, all its processes together."""
STEADY_FACTOR = 3.0
LAZY_WRITERS = {"chromium": 10.5}
"""Programs that write their state back late on purpose → the least quiet time (s) before an evaluation while
one of them runs."""
POLL_S = 0.25


@dataclass(frozen=True)
class Waited:
    """How a wait ended: its length, and whether the desktop was found ready (False: the cap, or a stop)."""

    seconds: float
    ready: bool
    why: str

    def record(self) -> dict[str, object]:
        return {"seconds": round(self.seconds, 3), "ready": self.ready, "why": self.why}


def desktop_processes(home: Path) -> list[psutil.Process]:
    """The processes of the sandbox whose bubblewrap binds `home` (every command of one desktop), with their
    children."""
    found: dict[int, psutil.Process] = {}
    home_s = str(home)
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if p.info["name"] == "bwrap" and home_s in (p.info["cmdline"] or []):
                found[p.pid] = p
                found.update((c.pid, c) for c in p.children(recursive=True))
        except psutil.Error:
            continue
    return list(found.values())


def _cpu_seconds(procs: list[psutil.Process]) -> tuple[float, set[str]]:
    total, names = 0.0, set()
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
            names.add(p.name())
        except psutil.Error:
            continue
    return total, names


IGNORED = (".cache",)
"""Top-level folders of the home left out of the files' signature: caches (a browser's disk cache) are not what
a checker reads, and would keep a browser's desktop from ever looking quiet."""


def files_signature(root: Path) -> int:
    """A hash of every file under `root` (but `IGNORED`) with its size and modification time (links not
    followed)."""
    entries: list[tuple[str, int, int]] = []
    skipped = {str(root / name) for name in IGNORED}
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            if e.path not in skipped:
                                stack.append(e.path)
                        else:
                            st = e.stat(follow_symlinks=False)
                            entries.append((e.path, st.st_size, st.st_mtime_ns))
                    except OSError:
                        continue
        except OSError:
            continue
    return hash(tuple(sorted(entries)))


def wait_until_ready(display: str, home: Path, cap_s: float, quiet_s: float, *, before_evaluation: bool = False,
                     stopped: Callable[[], bool] = lambda: False, poll_s: float = POLL_S) -> Waited:
    """Wait until the desktop on `display` with its home at `home` is ready (the module's rules), at most
    `cap_s`; `stopped` ends it early (Ctrl+C). `before_evaluation` adds the lazy writers' quiet time."""
    start = time.monotonic()
    if cap_s <= 0:
        return Waited(0.0, True, "no wait")
    shown, files = frozenset(windows.visible_windows(display)), files_signature(home)
    procs = desktop_processes(home)
    cpu, names = _cpu_seconds(procs)
    samples = [(start, cpu)]  # (time, the desktop's CPU seconds)
    changed = start  # when windows or files last changed
    while True:
        now = time.monotonic()
        if stopped():
            return Waited(now - start, False, "stopped")
        if now - start >= cap_s:
            return Waited(now - start, False, f"not quiet within {cap_s:g} s")
        time.sleep(min(poll_s, max(0.0, cap_s - (now - start))))
        now = time.monotonic()
        shown_now, files_now = frozenset(windows.visible_windows(display)), files_signature(home)
        if shown_now != shown or files_now != files:
            shown, files, changed = shown_now, files_now, now
            procs = desktop_processes(home)  # a new window may be a new process
        cpu, names = _cpu_seconds(procs)
        samples.append((now, cpu))
        quiet = quiet_s
        if before_evaluation:
            quiet = max([quiet_s] + [s for n, s in LAZY_WRITERS.items() if any(x.startswith(n) for x in names)])
        still = now - changed
        if still < quiet:
            continue
        window = [s for s in samples if s[0] >= now - quiet]
        span = window[-1][0] - window[0][0]
        load = (window[-1][1] - window[0][1]) / span if span > 0 else 0.0
        if load < CPU_IDLE:
            return Waited(now - start, True, f"quiet for {still:.1f} s, CPU {load:.0%} of a core")
        if still >= STEADY_FACTOR * quiet:
            return Waited(now - start, True, f"windows and files unchanged for {still:.1f} s (CPU steady at "
                                             f"{load:.0%} of a core)")
