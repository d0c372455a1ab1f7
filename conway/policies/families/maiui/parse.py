"""Parse MAI-UI's answers, and re-write them as its agent replays them.

MAI-UI's navigation agent (Tongyi-MAI/MAI-UI `src/mai_naivigation_agent.py`, commit
4dd07b9e910a294f001452e888514d912b96cc41) reads one answer as::

    <thinking>
    Open the Files app from the dock.
    </thinking>
    <tool_call>
    {"name": "mobile_use", "arguments": {"action": "click", "coordinate": [62, 315]}}
    </tool_call>

(`parse_tagged_text`: a thinking model's bare `</think>` is taken as `</thinking>`; the thinking block is
required, the call must be JSON). Points are on a 0..999 grid (`Convention.RELATIVE999`), a 4-number box by its
centre. The `mobile_use` actions of its system prompt map onto Conway's actions:

=============================================  =========================================================
``click`` / ``double_click``                   Click / DoubleClick
``type`` (``text``)                            TypeText
``drag`` (``start_coordinate``, ``end_coord…``)  Drag
``swipe`` (``direction``, ``coordinate``?)     Scroll by `SWIPE_CLICKS` wheel clicks: the finger's direction
                                               (``up`` shows what is below: the wheel turned down), at the
                                               point when one is given
``system_button`` ``enter``                    Key Enter
``wait``                                       Wait
``terminate`` (``status``)                     Finish (DONE for success, FAIL for fail)
``answer`` (``text``)                          Finish(DONE, message=text)
=============================================  =========================================================

Refused, each with its reason (`REFUSED`): ``long_press``, ``open`` (an app by name), ``system_button`` back,
home and menu, ``ask_user`` (its prompt with MCP tools offers it), and a call of any tool but ``mobile_use`` (an
MCP tool: the preset sends the prompt without MCP tools, the agent's default). Nothing is evaluated.

`replayed` is what the agent keeps of an answer for the next request (`mem2response`): the thinking as parsed,
and the call re-written as compact JSON with its ``coordinate`` scaled back by ``int(x / 999 * 999)`` (63 comes
back as 62) and its drag points left as the fractions parsing made of them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from conway.geometry import Size
from conway.policies.parsed import ParsedOutput, build_action, check_setup, guarded, map_point, problem, show_value

__all__ = ["REFUSED", "SWIPE_CLICKS", "parse", "replayed", "with_thinking"]

SCALE = 999
"""The agent's SCALE_FACTOR: points are divided by it."""
SWIPE_CLICKS = 5
"""Wheel clicks one swipe scrolls (a phone's swipe moves about half a screen; 5 clicks do on a desktop list)."""
SWIPES = {"up": (-SWIPE_CLICKS, 0), "down": (SWIPE_CLICKS, 0), "left": (0, SWIPE_CLICKS), "right": (0, -SWIPE_CLICKS)}
"""The finger's direction -> (dy, dx) of Conway's Scroll (positive dy scrolls up, positive dx right)."""
REFUSED = {
    "long_press": "long_press (press and hold on a touch screen) has no desktop action in Conway",
    "open": "open (launching a phone app by its name) has no Conway action; click the application's icon instead",
    "ask_user": "ask_user stops the episode for the user's reply, which the agent sends back as a user turn; "
                "Conway's loop has no turn that waits for a reply (finish with the question as its message instead)",
    "back": "system_button back is a phone's Back key; a desktop has none (press the application's own keys)",
    "home": "system_button home is a phone's Home key; a desktop has none",
    "menu": "system_button menu is a phone's Menu key; a desktop has none",
}
"""The mobile actions Conway cannot carry out, each with the reason the refusal states."""

_PATTERN = re.compile(r"<thinking>(.*?)</thinking>.*?<tool_call>(.*?)</tool_call>", re.S)
_POINTS = ("coordinate", "start_coordinate", "end_coordinate")


class _Reject(Exception):
    """A reason to refuse the answer (internal control flow only)."""


def tagged(text: str) -> tuple[str, Any] | None:
    """(thinking, the call's JSON) as `parse_tagged_text` reads them; None when the tags are not there."""
    text = text.strip()
    if "</think>" in text and "</thinking>" not in text:
        text = "<thinking>" + text.replace("</think>", "</thinking>")
    found = _PATTERN.search(text)
    if found is None:
        return None
    call = found.group(2).strip().strip('"')
    try:
        return found.group(1).strip().strip('"'), json.loads(call)
    except (ValueError, RecursionError):
        raise _Reject(f"the <tool_call> is not valid JSON: {show_value(call, 80)}") from None


def with_thinking(text: str, reasoning: str | None) -> tuple[str, str | None]:
    """(text, reasoning) with the thinking where the agent reads it: a bare `</think>` answer as
    `parse_tagged_text` rewrites it, and a thinking block a backend split off as reasoning (its `<thinking>`, or a
    server's `reasoning_content`) put back in front of the call. The agent strips the thinking it reads, so the
    whitespace the split dropped changes nothing it sends."""
    if "</think>" in text and "</thinking>" not in text:
        return "<thinking>" + text.replace("</think>", "</thinking>"), reasoning
    if reasoning and "<thinking>" not in text:
        return f"<thinking>\n{reasoning}\n</thinking>\n{text}", None
    return text, reasoning


def _centre(value: Any, name: str) -> tuple[float, float]:
    if isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        if len(value) == 2:
            return value[0], value[1]
        if len(value) == 4:
            return (value[0] + value[2]) / 2, (value[1] + value[3]) / 2
    raise _Reject(f"{name} must be [x, y] or a box [x1, y1, x2, y2], got {show_value(value)}")


def replayed(answer: str) -> str:
    """The answer as the agent re-writes it into the next request (`mem2response`); the answer itself when the agent
    could not have parsed it (it would have asked again)."""
    try:
        read = tagged(answer)
        if read is None or not isinstance(read[1], dict) or not isinstance(read[1].get("arguments"), dict):
            return answer
        thinking, call = read
        action = dict(call["arguments"])
        points = {k: [c / SCALE for c in _centre(action[k], k)] for k in _POINTS if k in action}
    except _Reject:
        return answer
    action.update(points)  # parse_action_to_structure_output leaves the fractions in the action it keeps
    if "coordinate" in action:
        x, y = action["coordinate"]
        action["coordinate"] = [int(x * SCALE), int(y * SCALE)]  # mem2response scales back only this one
    tool_call = json.dumps({"name": "mobile_use", "arguments": action}, separators=(",", ":"))
    return f"<thinking>\n{thinking}\n</thinking>\n<tool_call>\n{tool_call}\n</tool_call>"


def _parse(visible: str, reasoning: str | None, convention: Any, sent: Size, captured: Size) -> ParsedOutput:
    try:
        read = tagged(visible)
    except _Reject as exc:
        return ParsedOutput(None, [problem(f"rejected MAI-UI answer: {exc}", visible)], reasoning, None)
    if read is None:
        msg = ('expected <thinking>…</thinking> then <tool_call>{"name": "mobile_use", "arguments": {"action": …}}'
               '</tool_call>')
        return ParsedOutput(None, [problem(msg, visible)], reasoning, None)
    thinking, call = read
    raw = json.dumps(call, ensure_ascii=False)
    setup = check_setup(convention, sent, captured)
    if setup is not None:
        return ParsedOutput(thinking or None, [problem(setup)], reasoning, raw)
    try:
        fields = _fields(call, convention, sent, captured)
    except _Reject as exc:
        return ParsedOutput(thinking or None, [problem(f"rejected MAI-UI tool call: {exc}", raw)], reasoning, raw)
    return ParsedOutput(thinking or None, [build_action(fields, raw)], reasoning, raw)


def parse(text: str, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """Parse one MAI-UI answer; never raises, never executes anything. The whole text is read as the agent reads
    it: its `<thinking>` block is the answer's thought, not reasoning to split off first."""
    return guarded("MAI-UI", lambda: _parse(text, None, convention, sent_size, captured_size), text)


def _point(args: dict[str, Any], name: str, convention: Any, sent: Size, captured: Size) -> tuple[float, float]:
    x, y = _centre(args[name], name)
    mapped = map_point(x, y, convention, sent, captured, what=str(args.get("action")))
    if isinstance(mapped, str):
        raise _Reject(mapped)
    return mapped


def _text(args: dict[str, Any]) -> str:
    if not isinstance(args.get("text"), str):
        raise _Reject(f"{args['action']}: text must be a string, got {show_value(args.get('text'))}")
    return args["text"]


def _fields(call: Any, convention: Any, sent: Size, captured: Size) -> dict[str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("arguments"), dict):
        raise _Reject(f'expected {{"name": …, "arguments": {{…}}}}, got {show_value(call, 80)}')
    if call.get("name") != "mobile_use":
        raise _Reject(f"{show_value(call.get('name'))} is an MCP tool: the preset sends MAI-UI's prompt without MCP "
                      "tools (its agent's default), so no call of one is mapped")
    args = call["arguments"]
    action = args.get("action")
    if action in REFUSED:
        raise _Reject(REFUSED[action])
    if action not in _BY_ACTION:
        raise _Reject(f"action {show_value(action)} is not one of MAI-UI's mobile_use actions")
    points = {name: list(_point(args, name, convention, sent, captured)) for name in _POINTS if name in args}
    return _BY_ACTION[action]({**args, **points})


def _click(args: dict[str, Any]) -> dict[str, Any]:
    if "coordinate" not in args:
        raise _Reject(f"{args['action']} needs coordinate")
    x, y = args["coordinate"]
    return {"type": args["action"], "x": x, "y": y}


def _drag(args: dict[str, Any]) -> dict[str, Any]:
    if "start_coordinate" not in args or "end_coordinate" not in args:
        raise _Reject("drag needs start_coordinate and end_coordinate")
    (x, y), (tx, ty) = args["start_coordinate"], args["end_coordinate"]
    return {"type": "drag", "x": x, "y": y, "to_x": tx, "to_y": ty}


def _swipe(args: dict[str, Any]) -> dict[str, Any]:
    if args.get("direction") not in SWIPES:
        raise _Reject(f"swipe: direction must be up, down, left or right, got {show_value(args.get('direction'))}")
    dy, dx = SWIPES[args["direction"]]
    at = dict(zip(("x", "y"), args["coordinate"])) if "coordinate" in args else {}
    return {"type": "scroll", "dy": dy, "dx": dx, **at}


def _button(args: dict[str, Any]) -> dict[str, Any]:
    button = args.get("button")
    if button in REFUSED:
        raise _Reject(REFUSED[button])
    if button != "enter":
        raise _Reject(f"system_button: button must be back, home, menu or enter, got {show_value(button)}")
    return {"type": "key", "key": "Enter"}


def _terminate(args: dict[str, Any]) -> dict[str, Any]:
    if args.get("status") not in ("success", "fail"):
        raise _Reject(f"terminate: status must be 'success' or 'fail', got {show_value(args.get('status'))}")
    return {"type": "finish", "status": "DONE" if args["status"] == "success" else "FAIL"}


_BY_ACTION: dict[str, Any] = {
    "click": _click,
    "double_click": _click,
    "type": lambda args: {"type": "type", "text": _text(args)},
    "drag": _drag,
    "swipe": _swipe,
    "system_button": _button,
    "wait": lambda args: {"type": "wait"},
    "terminate": _terminate,
    "answer": lambda args: {"type": "finish", "status": "DONE", "message": _text(args)},
}
"""Each mapped mobile_use action -> its Conway action's fields (points already mapped)."""
