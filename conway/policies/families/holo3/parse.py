"""Parse Holo3.1's answer: one JSON step `{note, thought, tool_call}`, read with `json.loads`, nothing evaluated.

The documented tools (hub.hcompany.ai/agent-loop.md, the structured-outputs example): `click` (`element`, `x`,
`y` integers in 0..1000 of the image sent) -> a left click; `write` (`content`, `press_enter`) -> typing, then
Enter when asked; `answer` (`content`) -> finish, done, with the content as its message. Anything else is
refused by name: another tool_name, a missing thought, a coordinate that is not an integer. A thought before
the object (`<think>…</think>`, when the server leaves the reasoning in) is split off.
"""

from __future__ import annotations

from typing import Any

from conway.geometry import Size
from conway.policies.families.holo3.step import TOOLS
from conway.policies.parsed import ParsedOutput, build_action, guarded, json_answer, map_point, problem, show_value

__all__ = ["parse"]


def parse(text: Any, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """One Holo3.1 answer -> its actions; never raises."""
    def run() -> ParsedOutput:
        read = json_answer(text, convention, sent_size, captured_size)
        if isinstance(read, ParsedOutput):
            return read
        step, body, reasoning = read
        thought = step.get("thought")
        if not isinstance(thought, str):
            return ParsedOutput(None, [problem("the step has no thought (a string)", body)], reasoning)
        call = step.get("tool_call")
        if not isinstance(call, dict):
            return ParsedOutput(thought, [problem("the step has no tool_call object", body)], reasoning, body)
        name = call.get("tool_name")
        if name not in TOOLS:
            return ParsedOutput(thought, [problem(f"tool_name={show_value(name)} is not one of the documented tools "
                                                  f"({', '.join(TOOLS)})", body)], reasoning, body)
        return ParsedOutput(thought, _actions(name, call, body, convention, sent_size, captured_size), reasoning, body)
    return guarded("Holo3.1", run, text)


def _actions(name: str, call: dict[str, Any], raw: str, convention: Any, sent: Size, captured: Size) -> list[Any]:
    if name == "click":
        for axis in ("x", "y"):
            v = call.get(axis)
            if not isinstance(v, int) or isinstance(v, bool):
                return [problem(f"click {axis}={show_value(v)} is not an integer 0..1000", raw)]
        point = map_point(call["x"], call["y"], convention, sent, captured)
        if isinstance(point, str):
            return [problem(point, raw)]
        return [build_action({"type": "click", "x": point[0], "y": point[1]}, raw)]
    content = call.get("content")
    if not isinstance(content, str):
        return [problem(f"{name} content={show_value(content)} is not a string", raw)]
    if name == "answer":
        return [build_action({"type": "finish", "status": "DONE", "message": content}, raw)]
    enter = call.get("press_enter", False)
    if not isinstance(enter, bool):
        return [problem(f"write press_enter={show_value(enter)} is not true or false", raw)]
    actions = [build_action({"type": "type", "text": content}, raw)] if content else []
    if enter:
        actions.append(build_action({"type": "key", "key": "enter"}, raw))
    return actions or [problem("write with no content and no Enter does nothing", raw)]
