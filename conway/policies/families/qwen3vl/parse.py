"""Parse Qwen3-VL computer-use answers: ``<tool_call>`` blocks calling the ``computer_use`` tool.

The answer format (OSWorld's ``mm_agents/qwen3vl_agent.py``, ljxpython/OSWorldUse
commit b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6, which reads the same blocks)::

    Action: Click the Display entry in the sidebar.
    <tool_call>
    {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [500, 500]}}
    </tool_call>

The tool's actions and arguments are the ``ComputerUse`` tool of the Qwen3-VL
cookbook (QwenLM/Qwen3-VL ``cookbooks/utils/agent_function_call.py``, commit
96588727e44c78b25ba03ea03b8e12f7e64fd0da). Each maps onto the action schema:

=====================================================  ==================================
``left_click`` / ``right_click`` / ``middle_click``    Click / RightClick / Click(middle)
``double_click`` / ``triple_click``                    DoubleClick / TripleClick
``mouse_move``                                         Move
``mouse_move`` then ``left_click_drag``                Drag (from the move's point)
``mouse_move`` then a click without ``coordinate``     the click at the move's point (Qwen2.5-VL's tool)
``type`` (``text``)                                    TypeText
``key`` (``keys``: one)  / (several)                   Key / Hotkey (pressed together)
``scroll`` / ``hscroll`` (``pixels``, ``coordinate``)  Scroll dy / dx (positive = up / right)
``wait`` (``time``)                                    Wait
``terminate`` (``status``)                             Finish (DONE for success, FAIL for failure)
``answer`` (``text``)                                  Finish(DONE, message=text); a terminate
                                                       right after it gives the status
=====================================================  ==================================

``coordinate`` is ``[x, y]`` in the caller's convention: Qwen3-VL's own is a
0..999 grid (`Convention.RELATIVE999`). A ``left_click_drag`` that is not
right after a ``mouse_move`` is refused: it drags from wherever the pointer
is, which this parser cannot know. Every argument a tool action does not
take is refused, naming it; so are another tool's name, a block that is not
one JSON object, and more than `MAX_ACTIONS` blocks. One bad block refuses
the whole answer, with its number, so nothing of it is half-dispatched. The
text before the first block (its ``Action:`` line) is the thought.
Nothing is evaluated: the blocks are read with `json.loads`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from conway.actions import ActionProblem, _Action
from conway.geometry import Size
from conway.policies.parsed import (
    MAX_ACTIONS,
    ParsedOutput,
    build_action,
    check_setup,
    map_point,
    normalize_key,
    parser,
    problem,
    show_value,
)

__all__ = ["parse", "TOOL_NAME", "ARGUMENTS"]

TOOL_NAME = "computer_use"

_POINT = ("coordinate",)
ARGUMENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # a click's coordinate may be left out right after a mouse_move: Qwen2.5-VL's tool describes clicks
    # without one ("Click the left mouse button"; coordinate "Required only by mouse_move and left_click_drag")
    "left_click": ((), _POINT),
    "right_click": ((), _POINT),
    "middle_click": ((), _POINT),
    "double_click": ((), _POINT),
    "triple_click": ((), _POINT),
    "mouse_move": (_POINT, ()),
    "left_click_drag": (_POINT, ()),
    "type": (("text",), ()),
    "key": (("keys",), ()),
    "scroll": (("pixels",), _POINT),
    "hscroll": (("pixels",), _POINT),
    "wait": ((), ("time",)),
    "terminate": (("status",), ()),
    "answer": (("text",), ()),
}
"""Each tool action -> (required arguments, optional arguments), besides `action` itself (the cookbook's schema)."""

_CLICKS = {"left_click": ("click", "left"), "middle_click": ("click", "middle"), "right_click": ("right_click", None),
           "double_click": ("double_click", None), "triple_click": ("triple_click", None)}
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)  # an unclosed last block runs to the end
_ACTION_LINE = re.compile(r"^\s*action\s*:\s*", re.I)
_MAX_SECONDS = 3600


class _Reject(Exception):
    """A reason to refuse the answer (internal control flow only)."""


def _parse(visible: str, reasoning: str | None, convention: Any, sent_size: Any, captured_size: Any) -> ParsedOutput:
    blocks = []
    for m in _BLOCK.finditer(visible):
        blocks.append(m.group(1).strip())
        if len(blocks) > MAX_ACTIONS:
            msg = f"more than {MAX_ACTIONS} <tool_call> blocks in one answer (limit {MAX_ACTIONS})"
            return ParsedOutput(None, [problem(msg, visible)], reasoning, None)
    first = visible.find("<tool_call>")
    thought = _ACTION_LINE.sub("", visible[:first] if first >= 0 else visible).strip() or None
    if not blocks:
        msg = ('no <tool_call> block: expected <tool_call>{"name": "computer_use", "arguments": {"action": …}}'
               '</tool_call>')
        return ParsedOutput(thought, [problem(msg, visible)], reasoning, None)
    raw = "\n".join(blocks)
    setup = check_setup(convention, sent_size, captured_size)
    if setup is not None:
        return ParsedOutput(thought, [problem(setup)], reasoning, raw)
    try:
        actions = _blocks_to_actions(blocks, convention, sent_size, captured_size)
    except _Reject as exc:
        actions = [problem(f"rejected Qwen3-VL tool call: {exc}", raw)]
    return ParsedOutput(thought, actions, reasoning, raw)


parse = parser("Qwen3-VL", _parse, "Parse one Qwen3-VL answer; never raises, never executes anything.")


def _blocks_to_actions(blocks: list[str], convention: Any, sent: Size, captured: Size) -> list[_Action | ActionProblem]:
    calls = []
    for i, block in enumerate(blocks):
        where = f"block {i + 1} of {len(blocks)}: " if len(blocks) > 1 else ""
        try:
            calls.append(_arguments(block))
        except _Reject as exc:
            raise _Reject(f"{where}{exc}") from None
    out: list[_Action | ActionProblem] = []
    i = 0
    while i < len(calls):
        where = f"block {i + 1} of {len(calls)}: " if len(calls) > 1 else ""
        args = calls[i]
        nxt = calls[i + 1]["action"] if i + 1 < len(calls) else None
        try:
            if args["action"] == "mouse_move" and nxt == "left_click_drag":
                fields = _drag(args, calls[i + 1], convention, sent, captured)
                i += 1
            elif args["action"] == "mouse_move" and nxt in _CLICKS and "coordinate" not in calls[i + 1]:
                fields = _fields({**calls[i + 1], "coordinate": args["coordinate"]}, convention, sent, captured)
                i += 1
            elif args["action"] == "answer" and nxt == "terminate":
                fields = _finish(calls[i + 1], message=_text(args, "answer"))
                i += 1
            else:
                fields = _fields(args, convention, sent, captured)
        except _Reject as exc:
            raise _Reject(f"{where}{exc}") from None
        action = build_action(fields, json.dumps(args, ensure_ascii=False))
        if isinstance(action, ActionProblem):
            raise _Reject(f"{where}{action.message}")
        out.append(action)
        i += 1
    return out


def _arguments(block: str) -> dict[str, Any]:
    """The checked `arguments` of one block: a computer_use call whose arguments are all known."""
    call = _loads(block, "the block")
    if not isinstance(call, dict):
        raise _Reject(f"the block must be one JSON object, got {type(call).__name__}")
    extra = sorted(set(call) - {"name", "arguments"})
    if extra:
        raise _Reject(f"unknown key {extra[0]!r} beside name and arguments")
    if call.get("name") != TOOL_NAME:
        raise _Reject(f"the tool is {show_value(call.get('name'))}, not {TOOL_NAME!r}")
    args = call.get("arguments")
    if isinstance(args, str):  # some servers pass arguments as a JSON string
        args = _loads(args, "arguments")
    if not isinstance(args, dict):
        raise _Reject(f"arguments must be a JSON object, got {show_value(args)}")
    action = args.get("action")
    if not isinstance(action, str) or action not in ARGUMENTS:
        raise _Reject(f"action {show_value(action)} is not one of {', '.join(ARGUMENTS)}")
    required, optional = ARGUMENTS[action]
    for name in args:
        if name != "action" and name not in required and name not in optional:
            takes = ", ".join(("action", *required, *optional))
            raise _Reject(f"{action}: unknown argument {name!r} (it takes {takes})")
    missing = [name for name in required if name not in args]
    if missing:
        raise _Reject(f"{action} needs {missing[0]!r}")
    return args


def _loads(s: str, what: str) -> Any:
    try:
        return json.loads(s)
    except RecursionError:
        raise _Reject(f"{what} is nested too deeply") from None
    except ValueError as exc:
        raise _Reject(f"{what} is not valid JSON ({exc})") from None


def _point(args: dict[str, Any], convention: Any, sent: Size, captured: Size) -> tuple[float, float]:
    action = args["action"]
    c = args["coordinate"]
    if not isinstance(c, list) or len(c) != 2:
        raise _Reject(f"{action}: coordinate must be [x, y], got {show_value(c)}")
    mapped = map_point(c[0], c[1], convention, sent, captured, what=action)
    if isinstance(mapped, str):
        raise _Reject(mapped)
    return mapped


def _text(args: dict[str, Any], action: str) -> str:
    t = args["text"]
    if not isinstance(t, str):
        raise _Reject(f"{action}: text must be a string, got {show_value(t)}")
    return t


def _whole(action: str, name: str, v: Any) -> int:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise _Reject(f"{action}: {name} must be a whole number, got {show_value(v)}")
    return v


def _finish(args: dict[str, Any], message: str = "") -> dict[str, Any]:
    status = args["status"]
    if status not in ("success", "failure"):
        raise _Reject(f"terminate: status must be 'success' or 'failure', got {show_value(status)}")
    return {"type": "finish", "status": "DONE" if status == "success" else "FAIL", "message": message}


def _drag(move: dict[str, Any], drag: dict[str, Any], convention: Any, sent: Size, captured: Size) -> dict[str, Any]:
    x, y = _point(move, convention, sent, captured)
    tx, ty = _point(drag, convention, sent, captured)
    return {"type": "drag", "x": x, "y": y, "to_x": tx, "to_y": ty}


def _fields(args: dict[str, Any], convention: Any, sent: Size, captured: Size) -> dict[str, Any]:
    action = args["action"]
    if action in _CLICKS:
        if "coordinate" not in args:
            raise _Reject(f"{action} needs 'coordinate' (or a mouse_move right before it in the same answer): "
                          "without one it clicks wherever the pointer is, which is unknown here")
        kind, button = _CLICKS[action]
        x, y = _point(args, convention, sent, captured)
        return {"type": kind, "x": x, "y": y, **({"button": button} if button else {})}
    if action == "mouse_move":
        x, y = _point(args, convention, sent, captured)
        return {"type": "move", "x": x, "y": y}
    if action == "left_click_drag":
        raise _Reject("left_click_drag drags from the current pointer position, which is unknown here; "
                      "a mouse_move to the start must come right before it in the same answer")
    if action == "type":
        return {"type": "type", "text": _text(args, action)}
    if action == "key":
        keys = args["keys"]
        keys = [keys] if isinstance(keys, str) else keys
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
            raise _Reject(f"key: keys must be a non-empty list of key names, got {show_value(args['keys'])}")
        if len(keys) == 1:
            return {"type": "key", "key": normalize_key(keys[0])}
        return {"type": "hotkey", "keys": [normalize_key(k, combo=True) for k in keys]}
    if action in ("scroll", "hscroll"):
        amount = _whole(action, "pixels", args["pixels"])
        fields: dict[str, Any] = {"type": "scroll", ("dy" if action == "scroll" else "dx"): amount}
        if "coordinate" in args:
            fields["x"], fields["y"] = _point(args, convention, sent, captured)
        return fields
    if action == "wait":
        if "time" not in args:
            return {"type": "wait"}
        t = args["time"]
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 <= t <= _MAX_SECONDS:
            raise _Reject(f"wait: time must be a number of seconds in 0..{_MAX_SECONDS}, got {show_value(t)}")
        return {"type": "wait", "seconds": t}
    if action == "terminate":
        return _finish(args)
    return {"type": "finish", "status": "DONE", "message": _text(args, action)}  # answer
