"""An exception as the one line a report or a case's error shows: its type, then its message on one line."""

from __future__ import annotations

MAX_CHARS = 300
"""The message's longest: a checker's or a step's error sits in a report's row, beside others."""


def error_line(exc: BaseException, max_chars: int = MAX_CHARS) -> str:
    """`Type: message` with the message's whitespace folded and cut at `max_chars` (marked); `Type` alone for an
    exception with no message."""
    text = " ".join(str(exc).split())
    if not text:
        return type(exc).__name__
    return f"{type(exc).__name__}: {text if len(text) <= max_chars else text[:max_chars] + '…'}"
