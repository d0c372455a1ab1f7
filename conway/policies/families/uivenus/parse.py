"""Parse UI-Venus 1.5's answers, and the line its framework keeps of each for the next request.

The Venus framework (inclusionAI/UI-Venus `Venus_framework/policy/ui_venus_policy.py`, commit
c3a1442c3c4501af18c124458dbbddcbda5c2c6f, `_parse_response`) reads one answer as::

    <think>The Files icon is in the dock.</think>
    <action>Click(box=(32,292))</action>
    <conclusion>Open Files.</conclusion>

the `<action>` block (else the whole answer) as one `Name(key=value, …)` call, a tuple value as whole numbers.
Points are on a 0..1000 grid (`Convention.RELATIVE1000`: `int(x * width / 1000)`). The functions of its mobile
prompt map onto Conway's actions:

========================================  ============================================================
``Click(box=(x,y))``                      Click
``Drag(start=(x,y), end=(x,y))``          Drag
``Scroll(start=(x,y), end=(x,y))``        Scroll by `SWIPE_CLICKS` wheel clicks at the start, the way the
                                          finger moves (up shows what is below: the wheel turned down)
``Type(content='…')``                     TypeText
``PressEnter()``                          Key Enter
``Wait()``                                Wait
``Finished(content='…')``                 Finish(DONE, message=content)
``CallUser(content='…')``                 Finish(FAIL, message=content): the framework ends the episode
                                          there and does not count it a success
========================================  ============================================================

Refused, each with its reason (`REFUSED`): ``Launch`` (an app by name), ``LongPress``, ``PressBack``,
``PressHome``, ``PressRecent``. Nothing is evaluated: the call is read with regular expressions.
`step_line` is what the framework keeps of an answer (`result_new`): `<think>…</think><action>…</action>`.
"""

from __future__ import annotations

import re
from typing import Any

from conway.geometry import Size
from conway.policies.parsed import ParsedOutput, build_action, check_setup, guarded, map_point, problem, show_value

__all__ = ["REFUSED", "SWIPE_CLICKS", "parse", "step_line", "with_thinking"]

SWIPE_CLICKS = 5
"""Wheel clicks one Scroll turns (a phone's swipe moves about half a screen; 5 clicks do on a desktop list)."""
REFUSED = {
    "Launch": "Launch (starting a phone app by its name) has no Conway action; click the application's icon instead",
    "LongPress": "LongPress (press and hold on a touch screen) has no desktop action in Conway",
    "PressBack": "PressBack is a phone's Back key; a desktop has none (press the application's own keys)",
    "PressHome": "PressHome is a phone's Home key; a desktop has none",
    "PressRecent": "PressRecent opens a phone's recent apps; a desktop has no such key",
}
"""The phone functions Conway cannot carry out, each with the reason the refusal states."""

_CALL = re.compile(r"(\w+)\((.*)\)")
_PARAM = re.compile(r"(\w+)\s*=\s*(\([^)]+\)|'[^']*'|\"[^\"]*\"|[^,]+)")  # key=value: a tuple, a quoted string or a bare word


class _Reject(Exception):
    """A reason to refuse the answer (internal control flow only)."""


def _tag(name: str, text: str) -> str | None:
    found = re.search(rf"<{name}>(.*?)</{name}>", text, re.S)
    return found.group(1).strip() if found else None


def with_thinking(text: str, reasoning: str | None) -> tuple[str, str | None]:
    """(text, reasoning) with the `<think>` block a backend split off put back in front: the framework reads it
    and replays it. It strips what it reads, so the whitespace the split dropped changes nothing it sends."""
    if reasoning and "<think>" not in text:
        return f"<think>{reasoning}</think>\n{text}", None
    return text, reasoning


def step_line(answer: str) -> str:
    """What the framework keeps of an answer for its "previous actions" (`result_new`)."""
    action, think = _tag("action", answer) or answer.strip(), _tag("think", answer) or ""
    return f"<think>{think}</think><action>{action}</action>" if think else action


def _params(text: str) -> dict[str, Any]:
    """The call's arguments as `_parse_response` reads them: a tuple of whole numbers, a string, or a number."""
    out: dict[str, Any] = {}
    for key, value in _PARAM.findall(text):
        value = value.strip()
        if value[:1] in "'\"" and value[-1:] == value[:1] and len(value) > 1:
            out[key] = value[1:-1]
        elif value.startswith("(") and value.endswith(")"):
            try:
                out[key] = tuple(int(p.strip()) for p in value[1:-1].split(","))
            except ValueError:
                raise _Reject(f"{key} must be a point of whole numbers (x,y), got {show_value(value)}") from None
        else:
            out[key] = value
    return out


def _parse(text: str, convention: Any, sent: Size, captured: Size) -> ParsedOutput:
    action = _tag("action", text) or text.strip()
    thought = _tag("think", text) or None
    found = _CALL.match(action)
    if found is None:
        msg = "expected <think>…</think><action>Name(key=value, …)</action><conclusion>…</conclusion>"
        return ParsedOutput(thought, [problem(msg, text)], None, None)
    setup = check_setup(convention, sent, captured)
    if setup is not None:
        return ParsedOutput(thought, [problem(setup)], None, action)
    try:
        fields = _fields(found.group(1), _params(found.group(2)), convention, sent, captured)
    except _Reject as exc:
        return ParsedOutput(thought, [problem(f"rejected UI-Venus action: {exc}", action)], None, action)
    return ParsedOutput(thought, [build_action(fields, action)], None, action)


def parse(text: str, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """Parse one UI-Venus answer; never raises, never executes anything. Its `<think>` is the answer's thought."""
    return guarded("UI-Venus", lambda: _parse(text, convention, sent_size, captured_size), text)


def _point(params: dict[str, Any], key: str, name: str, convention: Any, sent: Size, captured: Size
           ) -> tuple[float, float]:
    value = params.get(key)
    if not isinstance(value, tuple) or len(value) != 2:
        raise _Reject(f"{name} needs {key}=(x,y), got {show_value(value)}")
    mapped = map_point(value[0], value[1], convention, sent, captured, what=name)
    if isinstance(mapped, str):
        raise _Reject(mapped)
    return mapped


def _text(params: dict[str, Any], name: str) -> str:
    if not isinstance(params.get("content"), str):
        raise _Reject(f"{name} needs content='…'")
    return params["content"]


def _fields(name: str, params: dict[str, Any], convention: Any, sent: Size, captured: Size) -> dict[str, Any]:
    if name in REFUSED:
        raise _Reject(REFUSED[name])
    if name == "Click":
        x, y = _point(params, "box", name, convention, sent, captured)
        return {"type": "click", "x": x, "y": y}
    if name in ("Drag", "Scroll"):
        x, y = _point(params, "start", name, convention, sent, captured)
        tx, ty = _point(params, "end", name, convention, sent, captured)
        if name == "Drag":
            return {"type": "drag", "x": x, "y": y, "to_x": tx, "to_y": ty}
        if tx == x and ty == y:
            raise _Reject("Scroll: start and end are the same point")
        vertical = abs(ty - y) >= abs(tx - x)  # the finger's main direction
        dy = (-SWIPE_CLICKS if ty < y else SWIPE_CLICKS) if vertical else 0
        dx = 0 if vertical else (SWIPE_CLICKS if tx < x else -SWIPE_CLICKS)
        return {"type": "scroll", "dy": dy, "dx": dx, "x": x, "y": y}
    if name == "Type":
        return {"type": "type", "text": _text(params, name)}
    if name == "PressEnter":
        return {"type": "key", "key": "Enter"}
    if name == "Wait":
        return {"type": "wait"}
    if name in ("Finished", "CallUser"):
        status = "DONE" if name == "Finished" else "FAIL"
        return {"type": "finish", "status": status, "message": params.get("content", "") or ""}
    raise _Reject(f"{show_value(name)} is not one of UI-Venus's functions")
