"""Parse Holo1.5's answer: one click as a JSON object, read with `json.loads`, nothing evaluated.

Holo1.5 (hcompai/hai-cookbook ``holo1_5/openai_client/invoke_localization.ipynb``, commit
2ba89619bdcfe729d31649d976bdaa7b9551e216): one JSON object ``{"action": "click_absolute", "x": …, "y": …}``
(its ``ClickAbsoluteAction`` schema), pixels of the resized image. `parse_click_json` refuses another action, a
missing or non-integer coordinate and unknown keys by name.

The point is in the caller's convention (the model answers `Convention.ABSOLUTE`) and becomes a left
click in captured pixels; a point outside the image is refused with its bounds.
"""

from __future__ import annotations

from typing import Any

from conway.geometry import Size
from conway.policies.parsed import ParsedOutput, guarded, json_answer, one_click, problem, show_value

__all__ = ["parse_click_json"]

_HOLO_KEYS = frozenset({"action", "x", "y"})


def parse_click_json(text: Any, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """Holo1.5's `{"action": "click_absolute", "x": …, "y": …}` -> one click; anything else refused by name."""
    def run() -> ParsedOutput:
        read = json_answer(text, convention, sent_size, captured_size)
        if isinstance(read, ParsedOutput):
            return read
        obj, body, reasoning = read
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
        return one_click(obj["x"], obj["y"], body, convention, sent_size, captured_size, None, reasoning)
    return guarded("Holo", run, text)
