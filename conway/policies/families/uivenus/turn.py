"""UI-Venus 1.5's target turn: `<think>`, one `<action>` call on its 0..1000 grid, `<conclusion>`."""

from __future__ import annotations

from typing import Any

from conway.policies.target_turns import describe


def _point(xy: Any) -> str:
    return f"({int(round(xy[0]))},{int(round(xy[1]))})"


def uivenus_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """UI-Venus's answer for a recorded action (its mobile prompt's functions)."""
    t = action["type"]
    if t == "click" and action.get("button", "left") == "left":
        call = f"Click(box={_point(pt[('x', 'y')])})"
    elif t == "drag":
        call = f"Drag(start={_point(pt[('x', 'y')])}, end={_point(pt[('to_x', 'to_y')])})"
    elif t == "type":
        call = f"Type(content='{action['text']}')"
    elif t == "key" and action["key"].lower() == "enter":
        call = "PressEnter()"
    elif t == "wait":
        call = "Wait()"
    elif t == "finish" and action.get("status") == "DONE":
        call = f"Finished(content='{action.get('message', '')}')"
    else:
        raise ValueError(f"{t} has no UI-Venus form (its mobile prompt has no such function)")
    line = (thought or describe(action)).strip()
    return f"<think>{line}</think>\n<action>{call}</action>\n<conclusion>{describe(action)}</conclusion>"
