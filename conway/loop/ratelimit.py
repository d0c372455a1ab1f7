"""How long to wait after a 429: the server's ask, bounded, and never less than the recovery backoff.

A server that answers `Retry-After: 0` (or a negative, absurd or unreadable
value) must not make Conway hammer it: the wait is at least `MIN_WAIT_S`, at
most the recovery backoff cap, and at least the recovery backoff that the
consecutive failures so far have earned. The reason says which value was used
and why, for the journal.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MIN_WAIT_S", "rate_limit_event", "rate_limit_wait"]

MIN_WAIT_S = 1.0
"""Shortest wait after any 429, whatever the server says."""


def rate_limit_wait(asked: float | None, backoff_s: float, cap_s: float, source: str = "server") -> tuple[float, str]:
    """(seconds to wait, why) for a 429 whose server asked `asked` s (None: it named no delay).

    `backoff_s` is the recovery backoff earned by the consecutive failures so
    far (0 before it starts); `cap_s` is the recovery backoff cap.
    """
    cap = max(cap_s, MIN_WAIT_S)
    if asked is None or not math.isfinite(asked):
        wait, why = MIN_WAIT_S, f"the server named no usable delay ({source})"
    elif asked < MIN_WAIT_S:
        wait, why = MIN_WAIT_S, f"the server asked {asked:g} s ({source}); raised to the {MIN_WAIT_S:g} s minimum"
    elif asked > cap:
        wait, why = cap, f"the server asked {asked:g} s ({source}); capped to the {cap:g} s backoff cap"
    else:
        wait, why = asked, f"the server asked {asked:g} s ({source})"
    if backoff_s > wait:
        wait = min(backoff_s, cap)
        why += f"; repeated failures: recovery backoff {wait:g} s is longer"
    return round(wait, 3), why


def rate_limit_event(exc: Any, consecutive: int, wait_s: float, why: str,
                     context: dict[str, Any] | None) -> dict[str, Any]:
    """The journal's error payload for a 429 (`exc`: the policy's `RateLimited`) and the wait chosen for it."""
    return {"stage": "decide", "error": str(exc), "rate_limited": True, "consecutive": consecutive,
            "retry_after_s": exc.retry_after, "wait_s": wait_s, "why": why, "cause": exc.cause, "context": context}
