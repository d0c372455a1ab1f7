"""Parse Jedi's answer: one `computer_use` tool call; its `coordinate` is the point, read as one click.

Jedi (OSWorld ``mm_agents/jedi_7b_agent.py`` ``parse_jedi_response``, ljxpython/OSWorldUse commit
b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)::

    <tool_call>
    {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1012, 503]}}
    </tool_call>

The call sits between ``<tool_call>`` / ``</tool_call>`` (or the ``⚗`` tokens Jedi's tokenizer may print for
them); the text before it is the thought. The agent keeps only ``coordinate`` (the planner's pyautogui call says
what to do there), in pixels of the smart-resized screen its system prompt states; so does `parse_point`, as one
left click. OSWorld's 3B agent passes height and width swapped into its scaling (``parse_jedi_response(…, height,
width, …)``), a plain defect: Conway scales x by width and y by height for both sizes. An answer without a tool
call, with a call that is not JSON, or without a two-number ``coordinate`` is refused, naming what it got.
"""

from __future__ import annotations

import json
from typing import Any

from conway.geometry import Size
from conway.policies.parsed import ParsedOutput, check_setup, guarded, one_click, problem, show_value, split_reasoning

__all__ = ["parse_point"]

_TAGS = (("<tool_call>", "</tool_call>"), ("\u2697", "\u2697"))


def _call(visible: str) -> tuple[int, str] | None:
    """(where the call starts, its text) of the first tagged call, as the agent finds it."""
    for start, end in _TAGS:
        at = visible.find(start)
        if at < 0:
            continue
        rest = visible[at + len(start):]
        stop = rest.find(end)
        if stop < 0:
            return None
        return at, rest[:stop].strip()
    return None


def parse_point(text: Any, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """Jedi's tool call -> one click at its `coordinate`; a problem naming the answer otherwise."""
    def run() -> ParsedOutput:
        bad = check_setup(convention, sent_size, captured_size)
        if bad:
            return ParsedOutput(None, [problem(bad)])
        visible, reasoning = split_reasoning(text)
        found = _call(visible)
        if found is None:
            return ParsedOutput(None, [problem("no <tool_call> … </tool_call> in the answer: "
                                               f"{show_value(visible.strip(), 80)}", visible)], reasoning)
        at, body = found
        try:
            call = json.loads(body)
        except (ValueError, RecursionError):
            return ParsedOutput(None, [problem(f"the tool call is not JSON: {show_value(body, 80)}", body)],
                                reasoning)
        args = call.get("arguments") if isinstance(call, dict) else None
        point = args.get("coordinate") if isinstance(args, dict) else None
        if (not isinstance(point, list) or len(point) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in point)):
            return ParsedOutput(None, [problem(f"the tool call has no [x, y] coordinate: {show_value(body, 80)}",
                                               body)], reasoning)
        thought = visible[:at].strip().removeprefix("Action: ") or None
        return one_click(point[0], point[1], body, convention, sent_size, captured_size, thought, reasoning)
    return guarded("Jedi", run, text)
