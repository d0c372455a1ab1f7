"""A per-task wall-clock limit for `conway tasks run`: stop the task's loop as `conway stop` does, then tear its
desktop down if the loop does not end.

    with TaskWatchdog(home, limit_s=720, grace_s=15, teardown=desk.kill) as dog:
        run = run_task(home, ...)
    dog.fired, dog.torn_down, dog.elapsed_s

The loop's own `--max-seconds` is checked between steps; a step that blocks (a tool that hangs, a model
server that trickles) is not bounded by it. The watchdog is a thread beside the loop: once `limit_s` has
passed since the loop began it writes a stop request into the task's home (control.json, for the session
that holds the home's lock: what `conway stop` writes), which the loop honours within about a second (an
abortable decision or a shell command is cut short). If the loop has still not ended `grace_s` later (a
tool that ignores stops), `teardown` runs: the desktop's processes are killed (its X server, bus,
applications and every command in its sandbox), so what the step waits on goes away and the loop returns.
A step blocked inside Conway's own process on nothing the desktop holds is beyond it.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from conway.store.home import Home
from conway.store.state import InstanceLock, write_control

STOP_GRACE_S = 15.0
"""How long the loop has, after the stop request, to end before its desktop is torn down."""
TIMEOUT_MARGIN_S = 120.0
"""The default limit is the task's time budget (--max-seconds) plus this: the loop stops itself at its budget
between steps, so the watchdog bounds only a step that blocks past it (one slow decision or command)."""
_POLL_S = 0.1


def default_timeout(max_seconds: float) -> float:
    """The default `--task-timeout-s`: the task's time budget plus `TIMEOUT_MARGIN_S`."""
    return float(max_seconds) + TIMEOUT_MARGIN_S


class TaskWatchdog:
    """A context manager around one task's loop; see the module docstring."""

    def __init__(self, home: Home, limit_s: float, grace_s: float, teardown: Callable[[], Any]):
        self.home = home
        self.limit_s = float(limit_s)
        self.grace_s = float(grace_s)
        self.teardown = teardown
        self.fired = False
        """The limit passed while the loop ran: a stop was requested."""
        self.stop_sent = False
        """The stop request reached the home (the run had written its session into the lock)."""
        self.torn_down = False
        """The loop did not end within the grace: the desktop was torn down."""
        self.teardown_error: str | None = None
        self.started = 0.0
        self.ended: float | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def elapsed_s(self) -> float:
        """Seconds from the loop's start to its end (or to now, while it runs)."""
        end = self.ended if self.ended is not None else time.monotonic()
        return round(end - self.started, 3)

    def __enter__(self) -> "TaskWatchdog":
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._watch, name="conway-task-watchdog", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ended = time.monotonic()
        self._done.set()
        if self._thread is not None:
            self._thread.join()  # a teardown under way finishes first: nothing of it runs into the next task

    def _watch(self) -> None:
        if self._done.wait(self.limit_s):
            return
        self.fired = True
        deadline = time.monotonic() + self.grace_s
        while not self._done.is_set() and time.monotonic() < deadline:
            if not self.stop_sent:  # before the run holds the lock there is no session to stop yet: try again
                self.stop_sent = self._request_stop()
            self._done.wait(_POLL_S)
        if self._done.is_set():
            return
        self.torn_down = True
        try:
            self.teardown()
        except Exception as exc:  # the task is recorded as an error either way; say what went wrong here too
            self.teardown_error = f"{type(exc).__name__}: {exc}"

    def _request_stop(self) -> bool:
        held = InstanceLock(self.home.lock).held() if self.home.lock.exists() else None
        if not held or not held[1]:
            return False
        write_control(self.home.control, held[1], "stop")
        return True
