"""A refusal the history can answer: a server that takes fewer images, or refuses a prompt for length.

A server naming how many images one request may hold is asked again with as many (learned once); one refusing
the prompt for length while past screenshots went with it is asked again without the older half of them, where
the window may shrink (Conway's own layout, or the opt-in `half_slide`: `Budgeter.shrinks_history`; a trained
family's window is otherwise refused in one line, `Budgeter.window_refused`).
"""

from __future__ import annotations

import re
from typing import Any

from conway.history import TurnHistory
from conway.protocols import ContextExceeded, PolicyError

__all__ = ["count_images", "server_image_limit", "shrink_for"]

_IMAGE_LIMIT = (
    re.compile(r"at most (\d+) image", re.I),  # vLLM: "At most 1 image(s) may be provided in one request."
    re.compile(r"(?:maximum|max|limit)(?: number)? of (\d+) images?", re.I),
    re.compile(r"only (\d+) images? (?:is|are) (?:allowed|supported)", re.I),
)


def server_image_limit(message: str) -> int | None:
    """The number of images a server says one request may hold, read from its refusal (None: not such a refusal)."""
    for pattern in _IMAGE_LIMIT:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def count_images(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url")


def shrink_for(exc: PolicyError, history: TurnHistory | None, sent_images: int) -> bool:
    """Whether a refusal is one the history can answer (then it has shrunk): a server naming how many images
    one request may hold (learned once), or one refusing the prompt for length while past screenshots went
    with it (the older half of them go; the window was unknown or the estimate short)."""
    if history is None:
        return False
    why = str(exc).splitlines()[0][:300]
    takes = server_image_limit(str(exc))
    if takes is not None and sent_images > takes:
        history.limit_images(takes, why)
        return True
    past = len(history.with_images())
    if isinstance(exc, ContextExceeded) and past:
        gone = history.drop_oldest_images(max(1, (past + 1) // 2))
        history.notes.append(f"the model server refused the prompt for length ({why}): the {gone} oldest past "
                             "screenshot(s) were let go, the request sent again, and the screenshots held to "
                             "what then went through (deviation server_image_limit: a smaller window than the "
                             "agent's)")
        return True
    return False
