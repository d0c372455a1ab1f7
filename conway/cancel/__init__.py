"""Cancelling work in flight when a stop arrives (a model request, a llama.cpp decision).

The loop runs a decision inside `cancel_scope(token)`; code deep inside it (the
HTTP client, the in-process llama.cpp backend) finds the token with
`current_cancel()` and aborts at its next chance: the HTTP client shuts its
socket down, llama.cpp's abort callback ends the decode. Outside a scope
`current_cancel()` is None and nothing changes.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from typing import Any, Callable, Iterator, TypeVar

from conway.protocols import PolicyError

__all__ = ["Cancel", "DecisionAborted", "Watcher", "Worker", "cancel_scope", "current_cancel", "run_cancellable",
           "watching"]

T = TypeVar("T")

ABORT_GRACE_S = 1.0
"""How long cancelled work may take to come back before the caller goes on without it."""


class DecisionAborted(PolicyError):
    """A stop arrived during the decision: it was abandoned and nothing comes back to dispatch."""


class Cancel:
    """Set once; callbacks registered with `on_cancel` run in the thread that sets it."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.RLock()  # re-entrant: a signal handler may set it mid-registration
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    def set(self, reason: str = "stop requested") -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks = list(self._callbacks)
        for fn in callbacks:
            try:
                fn()
            except Exception:
                pass

    def is_set(self) -> bool:
        return self._event.is_set()

    def on_cancel(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Run `fn` when cancelled (at once when it already is); returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(fn)

                def unregister() -> None:
                    with self._lock:
                        if fn in self._callbacks:
                            self._callbacks.remove(fn)
                return unregister
        fn()
        return lambda: None

    def check(self) -> None:
        """Raise DecisionAborted when cancelled (call between units of work)."""
        if self._event.is_set():
            raise DecisionAborted(f"aborted: {self.reason}")


_CURRENT: contextvars.ContextVar[Cancel | None] = contextvars.ContextVar("conway_cancel", default=None)


@contextlib.contextmanager
def cancel_scope(token: Cancel) -> Iterator[Cancel]:
    """Make `token` the current one for the code run inside (this thread only)."""
    reset = _CURRENT.set(token)
    try:
        yield token
    finally:
        _CURRENT.reset(reset)


def current_cancel() -> Cancel | None:
    return _CURRENT.get()


class Worker:
    """One long-lived daemon thread that runs cancellable work, one piece at a time.

    A loop keeps one for the whole run: starting and joining a thread for every decision cost more
    than the rest of a mock cycle's bookkeeping. Work that had to be abandoned keeps its thread; the
    worker then leaves it behind and starts a fresh one for the next piece of work.
    """

    def __init__(self, name: str = "conway-cancellable"):
        self.name = name
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def start(self, job: Callable[[], None]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=_serve, args=(self._jobs,), name=self.name, daemon=True)
            self._thread.start()
        self._jobs.put(job)

    def abandon(self) -> None:
        """The running job will not come back in time: its thread ends after it, later work gets a new one."""
        self.close()
        self._jobs = queue.SimpleQueue()

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None


class Watcher:
    """One long-lived daemon thread that watches work its caller runs on the caller's own thread.

    For work that returns soon once its token is set (`Policy.abortable`): handing it to a `Worker`
    and waiting for it costs two thread wake-ups a call, the largest share of a cheap cycle's harness
    work. The watcher ticks every `poll_s` for the whole run, armed or not (so arming it wakes no
    thread); while work is armed it asks `stop_requested` and sets the token, which aborts the work
    where it blocks. There is no grace and no abandoning here: work that may ignore its token belongs
    on a `Worker` (`run_cancellable`).
    """

    def __init__(self, poll_s: float, name: str = "conway-decision-watch"):
        self.poll_s = poll_s
        self.name = name
        self._lock = threading.Lock()  # a check holds it: disarming waits for one in progress, never races it
        self._armed: tuple[Cancel, Callable[[], str | None]] | None = None
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self, work: Callable[[], T], token: Cancel, stop_requested: Callable[[], str | None]) -> T:
        """`work()` here, inside `cancel_scope(token)`, the token set by a stop meanwhile. Errors as
        `run_cancellable`'s: a PolicyError after the token was set is DecisionAborted, others pass on."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
            self._thread.start()
        with self._lock:
            self._armed = (token, stop_requested)
        try:
            with cancel_scope(token):
                return work()
        except PolicyError as exc:
            if token.is_set():
                raise DecisionAborted(f"aborted: {token.reason}") from exc
            raise
        finally:
            with self._lock:
                self._armed = None

    def close(self) -> None:
        self._closed.set()
        self._thread = None

    def _serve(self) -> None:
        while not self._closed.wait(self.poll_s):
            with self._lock:
                armed = self._armed
                if armed is not None and not armed[0].is_set():
                    reason = armed[1]()
                    if reason:
                        armed[0].set(reason)


def _serve(jobs: queue.SimpleQueue[Callable[[], None] | None]) -> None:
    while (job := jobs.get()) is not None:
        job()


def run_cancellable(work: Callable[[], T], token: Cancel, stop_requested: Callable[[], str | None],
                    poll_s: float, grace_s: float = ABORT_GRACE_S, worker: Worker | None = None) -> T:
    """Run `work` in a worker thread inside `cancel_scope(token)`; this thread polls `stop_requested`.

    `worker`: a long-lived `Worker` to run it on (default: a thread of its own). On a stop the token is
    set (the work aborts where it can: see the module docstring) and the work gets `grace_s` to come
    back; work that cannot be aborted is abandoned (a daemon thread), so a stop takes effect within
    about `poll_s + grace_s` either way. Raises DecisionAborted when the work was cancelled without a
    result; the work's own exceptions pass on.
    """
    box: dict[str, Any] = {}
    done = threading.Lock()  # held until the work is done: a bare lock wakes the waiter sooner than an Event
    done.acquire()

    def run() -> None:
        try:
            with cancel_scope(token):
                box["result"] = work()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.release()

    if worker is None:
        threading.Thread(target=run, name="conway-cancellable", daemon=True).start()
    else:
        worker.start(run)
    while not done.acquire(timeout=poll_s):
        reason = stop_requested()
        if reason:
            token.set(reason)
            if not done.acquire(timeout=grace_s) and worker is not None:
                worker.abandon()
            break
    if "result" in box:
        return box["result"]
    if "error" in box and not (token.is_set() and isinstance(box["error"], PolicyError)):
        raise box["error"]
    raise DecisionAborted(f"aborted: {token.reason}" + ("" if "error" in box else
                          f"; it did not stop within {grace_s:g} s and was abandoned"))


@contextlib.contextmanager
def watching(token: Cancel, stop_requested: Callable[[], str | None], poll_s: float) -> Iterator[Cancel]:
    """Work done in this thread (a tool running) inside `cancel_scope(token)`, while a watcher thread
    polls `stop_requested` and sets the token; the work checks `current_cancel()` between its slices."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(poll_s) and not token.is_set():
            reason = stop_requested()
            if reason:
                token.set(reason)

    watcher = threading.Thread(target=watch, name="conway-stop-watch", daemon=True)
    watcher.start()
    try:
        with cancel_scope(token):
            yield token
    finally:
        done.set()
        watcher.join()
