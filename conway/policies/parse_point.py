"""Parse grounding models' answers: one point on the screenshot, read as one click.

Two documented formats, each read without evaluating anything:

* GTA1 (OSWorld ``mm_agents/gta1/gta1_agent.py``, ljxpython/OSWorldUse commit
  b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6): its system prompt asks for ``(x,y)``; the agent takes the
  first ``(number, number)`` pair of the answer, in pixels of the smart-resized image. `parse_pair` does the
  same, and refuses an answer with no pair, naming what it got.
* Holo1.5 (hcompai/hai-cookbook ``holo1_5/openai_client/invoke_localization.ipynb``, commit
  2ba89619bdcfe729d31649d976bdaa7b9551e216): one JSON object ``{"action": "click_absolute", "x": …, "y": …}``
  (its ``ClickAbsoluteAction`` schema), pixels of the resized image. `parse_click_json` reads it with
  `json.loads` and refuses another action, a missing or non-integer coordinate and unknown keys by name.

The point is in the caller's convention (both models answer `Convention.ABSOLUTE`) and becomes a left
click in captured pixels; a point outside the image is refused with its bounds.
"""

from __future__ import annotations

import json
import re
from typing import Any

from conway.geometry import Size
from conway.policies.parsed import (
    ParsedOutput,
    build_action,
    check_setup,
    guarded,
    map_point,
    problem,
    show_value,
    split_reasoning,
)

__all__ = ["parse_click_json", "parse_pair"]

_PAIR = re.compile(r"\((-?\d{1,9}(?:\.\d{1,9})?),\s*(-?\d{1,9}(?:\.\d{1,9})?)\)")
"""The agent's own pattern for a point, with bounded digit runs (linear time on any input)."""

_HOLO_KEYS = frozenset({"action", "x", "y"})


def _click(x: Any, y: Any, raw: str, convention: Any, sent: Size, captured: Size, thought: str | None,
           reasoning: str | None) -> ParsedOutput:
    point = map_point(x, y, convention, sent, captured)
    if isinstance(point, str):
        return ParsedOutput(thought, [problem(point, raw)], reasoning, raw)
    return ParsedOutput(thought, [build_action({"type": "click", "x": point[0], "y": point[1]}, raw)], reasoning,
                        raw)


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
        return _click(x, y, found.group(0), convention, sent_size, captured_size, thought, reasoning)
    return guarded("GTA1", run, text)


def parse_click_json(text: Any, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """Holo1.5's `{"action": "click_absolute", "x": …, "y": …}` -> one click; anything else refused by name."""
    def run() -> ParsedOutput:
        bad = check_setup(convention, sent_size, captured_size)
        if bad:
            return ParsedOutput(None, [problem(bad)])
        visible, reasoning = split_reasoning(text)
        body = visible.strip()
        if body.startswith("```"):  # a fenced block: its inside
            body = body.strip("`").removeprefix("json").strip()
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            return ParsedOutput(None, [problem(f"the answer is not one JSON object: {show_value(body, 80)}",
                                               visible)], reasoning)
        if not isinstance(obj, dict):
            return ParsedOutput(None, [problem(f"the answer is a JSON {type(obj).__name__}, not an object", body)],
                                reasoning)
        unknown = sorted(set(obj) - _HOLO_KEYS)
        if unknown:
            return ParsedOutput(None, [problem(f"unknown key(s) {', '.join(map(repr, unknown))} (the click takes "
                                               "action, x, y)", body)], reasoning)
        if obj.get("action", "click_absolute") != "click_absolute":
            return ParsedOutput(None, [problem(f"action {show_value(obj.get('action'))} is not click_absolute",
                                               body)], reasoning)
        for name in ("x", "y"):
            v = obj.get(name)
            if not isinstance(v, int) or isinstance(v, bool):
                return ParsedOutput(None, [problem(f"{name}={show_value(v)} is not an integer pixel", body)],
                                    reasoning)
        return _click(obj["x"], obj["y"], body, convention, sent_size, captured_size, None, reasoning)
    return guarded("Holo", run, text)
