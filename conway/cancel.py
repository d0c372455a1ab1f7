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
import threading
from typing import Callable, Iterator

from .protocols import PolicyError

__all__ = ["Cancel", "DecisionAborted", "cancel_scope", "current_cancel"]


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
            except Exception:  # noqa: BLE001 - aborting is best effort; the stop goes on regardless
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
