"""A stop requested while a call runs: what the shell tool's tests and the sandboxed shell's tests share."""

from __future__ import annotations

import threading
import time
from typing import Callable, TypeVar

from conway.cancel import Cancel, cancel_scope

T = TypeVar("T")


def stopped_after(delay_s: float, reason: str, call: Callable[[], T]) -> tuple[T, float]:
    """Run `call` in a cancel scope whose token is set with `reason` `delay_s` seconds in (as a stop request sets
    it); its result and the seconds it took."""
    token = Cancel()
    timer = threading.Timer(delay_s, token.set, args=(reason,))
    timer.start()
    start = time.monotonic()
    try:
        with cancel_scope(token):
            result = call()
    finally:
        timer.cancel()  # a call that ended first leaves no stop pending
    return result, time.monotonic() - start
