"""Parse Holo2's answer: one click as a JSON object `{"x": …, "y": …}`, read with `json.loads`, nothing evaluated.

Holo2 (hcompai/hai-cookbook ``holo2/holo_2_localization_hosted_api.ipynb``, commit
2ba89619bdcfe729d31649d976bdaa7b9551e216): its ``ClickCoordinates`` schema, two integers 0..1000 (the notebook
scales x / 1000 * width). A thought before the object (``<think>…</think>``, when the server leaves the
reasoning in) is split off. `parse_click` refuses a missing or non-integer coordinate and unknown keys by name.
"""

from __future__ import annotations

from typing import Any

from conway.geometry import Size
from conway.policies.parsed import ParsedOutput, guarded, json_answer, one_click, problem, show_value

__all__ = ["parse_click"]


def parse_click(text: Any, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """Holo2's `{"x": …, "y": …}` -> one click; anything else refused by name."""
    def run() -> ParsedOutput:
        read = json_answer(text, convention, sent_size, captured_size)
        if isinstance(read, ParsedOutput):
            return read
        obj, body, reasoning = read
        unknown = sorted(set(obj) - {"x", "y"})
        if unknown:
            return ParsedOutput(None, [problem(f"unknown key(s) {', '.join(map(repr, unknown))} (the click takes "
                                               "x, y)", body)], reasoning)
        for name in ("x", "y"):
            v = obj.get(name)
            if not isinstance(v, int) or isinstance(v, bool):
                return ParsedOutput(None, [problem(f"{name}={show_value(v)} is not an integer 0..1000", body)],
                                    reasoning)
        return one_click(obj["x"], obj["y"], body, convention, sent_size, captured_size, None, reasoning)
    return guarded("Holo2", run, text)
