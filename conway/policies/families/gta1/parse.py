"""Parse GTA1's answer: one `(x,y)` point on the screenshot, read as one click, nothing evaluated.

GTA1 (OSWorld ``mm_agents/gta1/gta1_agent.py``, ljxpython/OSWorldUse commit
b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6): its system prompt asks for ``(x,y)``; the agent takes the
first ``(number, number)`` pair of the answer, in pixels of the smart-resized image. `parse_pair` does the
same, and refuses an answer with no pair, naming what it got.

The point is in the caller's convention (the model answers `Convention.ABSOLUTE`) and becomes a left
click in captured pixels; a point outside the image is refused with its bounds.
"""

from __future__ import annotations

import re
from typing import Any

from conway.geometry import Size
from conway.policies.parsed import ParsedOutput, check_setup, guarded, one_click, problem, show_value, split_reasoning

__all__ = ["parse_pair"]

_PAIR = re.compile(r"\((-?\d{1,9}(?:\.\d{1,9})?),\s*(-?\d{1,9}(?:\.\d{1,9})?)\)")
"""The agent's own pattern for a point, with bounded digit runs (linear time on any input)."""


def parse_pair(text: Any, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """GTA1's `(x,y)` answer -> one click; a problem naming the answer when it holds no pair."""
    def run() -> ParsedOutput:
        bad = check_setup(convention, sent_size, captured_size)
        if bad:
            return ParsedOutput(None, [problem(bad)])
        visible, reasoning = split_reasoning(text)
        found = _PAIR.search(visible)
        if found is None:
            return ParsedOutput(None, [problem(f"no (x,y) point in the answer: {show_value(visible.strip(), 80)}",
                                               visible)], reasoning)
        x, y = (float(v) for v in found.groups())
        thought = visible[:found.start()].strip() or None
        return one_click(x, y, found.group(0), convention, sent_size, captured_size, thought, reasoning)
    return guarded("GTA1", run, text)
