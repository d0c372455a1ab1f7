"""state.json of the running session, as the loop writes it: what `status` shows and recovery falls back on.

Every write is atomic (`state.StateStore`). The journal, not this file, is the authority on
side effects: the pending action's copy here is kept for actions that may take a while (a shell
command), written without fsync, and its clearing waits for the next write.
Progress (the step number) is refreshed at most once a second.
"""

from __future__ import annotations

import errno
import os
import traceback
from typing import Any, Callable

from conway.loop.ending import RunEnd, StopRun
from conway.store.home import Home
from conway.store.journal import JournalUnwritable
from conway.store.state import StateStore


def disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def crash_report(exc: BaseException) -> tuple[StopRun, dict[str, Any]]:
    """How a run that an exception ended ended (its reason one line), and its journal error record."""
    if disk_full(exc):
        end = StopRun(f"disk full: {exc.strerror}" + (f" ({exc.filename})" if exc.filename else ""), RunEnd.DISK_FULL)
    elif isinstance(exc, JournalUnwritable):  # nothing more goes on the record: state.json says why
        end = StopRun(f"journal not writable: {exc.strerror} ({exc.filename})", RunEnd.CRASHED)
    else:
        end = StopRun(f"crashed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", RunEnd.CRASHED)
    return end, {"stage": "loop", "error": end.reason, "exception": type(exc).__name__,
                 "traceback": "".join(traceback.format_exception(exc))[-4000:]}


def best_effort(write: Callable[[], None]) -> bool:
    """A write on the way out: a full disk or a gone terminal must not hide why the run ended."""
    try:
        write()
        return True
    except OSError:
        return False


class RunState:
    def __init__(self, home: Home, clock: Any):
        self.store = StateStore(home.state, home.state_previous)
        self.clock = clock
        self.data: dict[str, Any] = {}
        self._saved_at = 0.0  # monotonic time of the last write (progress writes are rate-limited)
        self._dirty = False  # changed in memory only (a cleared pending copy): goes out with the next write

    def begin(self, session: str, **fields: Any) -> None:
        """The running state of a new session (`fields`: what identifies its model, config and mode)."""
        self.data = {"session": session, "status": "running", "pid": os.getpid(), "step": 0,
                     "started_at": self.clock.time(), "pending": None, "stop_reason": None, **fields}
        self.save()

    def save(self, durable: bool = True, **changes: Any) -> None:
        self.data.update(changes, updated_at=self.clock.time())
        self.store.save(self.data, durable=durable)
        self._saved_at = self.clock.monotonic()
        self._dirty = False

    def save_pending(self, pending: dict[str, Any] | None) -> None:
        """The pending action's copy: state.json alone, not fsynced (the journal is the authority).

        The loop copies only actions that may take a while (`_Action.lengthy`); a quick one is over before
        anyone could look, and `status` and recovery read its fsynced intent from the journal. Setting it
        is written before dispatch. Clearing it waits for the next state write (the next intent, the
        progress write, any wait, the end): the journaled result already resolves it for `status`,
        `preflight` and recovery. Clearing a copy that was never set writes nothing.
        """
        if pending is None and self.data.get("pending") is None:
            return
        self.data.update(pending=pending, updated_at=self.clock.time())
        if pending is None:
            self._dirty = True
            return
        self.store.save_current(self.data)
        self._dirty = False

    def progress(self, step: int) -> None:
        """Refresh the step shown by `status` at most once a second (not needed for safety)."""
        if self.clock.monotonic() - self._saved_at >= 1.0:
            self.save(durable=False, step=step)
        else:
            self.data["step"] = step

    def flush(self) -> None:
        """What waited for the next write goes out (called before every sleep)."""
        if self._dirty:
            self.save(durable=False)

    def final(self, reason: str) -> None:
        """The stopped state; on a full disk, written over the current file's own blocks."""
        self.data.update(status="stopped", stop_reason=reason, pid=None, updated_at=self.clock.time())
        try:
            self.store.save(self.data)
        except OSError as exc:
            if not disk_full(exc):
                raise
            self.store.save_in_place(self.data)  # no room for a new file: reuse the current one's
