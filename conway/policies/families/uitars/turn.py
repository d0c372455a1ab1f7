"""UI-TARS's target turn: a recorded step as its `Thought:` / `Action:` answer."""

from __future__ import annotations

from typing import Any

from conway.policies.target_turns import describe, pointer_call


def _uitars_quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


_UITARS_POINTER = {"right_click": "right_single", "double_click": "left_double", "move": "hover"}
_UITARS_BUTTONS = {"left": "click", "right": "right_single"}  # a middle click has no UI-TARS form


def uitars_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """UI-TARS's answer: `Thought: …` / `Action: click(start_box='(x,y)')`."""
    t = action["type"]
    box = None
    if ("x", "y") in pt:
        x, y = pt[("x", "y")]
        box = f"'({x},{y})'"
    pointer = pointer_call(action, _UITARS_POINTER, _UITARS_BUTTONS)
    if pointer is not None:
        call = f"{pointer}(start_box={box})"
    elif t == "drag":
        tx, ty = pt[("to_x", "to_y")]
        call = f"drag(start_box={box}, end_box='({tx},{ty})')"
    elif t == "type":
        call = f"type(content={_uitars_quote(action['text'])})"
    elif t == "key":
        call = f"press(key={_uitars_quote(action['key'])})"
    elif t == "hotkey":
        call = f"hotkey(key={_uitars_quote(' '.join(action['keys']))})"
    elif t == "scroll" and box is not None:
        dy, dx = int(action.get("dy") or 0), int(action.get("dx") or 0)
        direction = ("up" if dy > 0 else "down") if dy else ("right" if dx > 0 else "left")
        call = f"scroll(start_box={box}, direction='{direction}')"
    elif t == "wait":
        call = "wait()"
    elif t == "finish" and action.get("status") == "DONE":
        call = f"finished(content={_uitars_quote(action.get('message', ''))})"
    else:
        raise ValueError(f"{action.get('type')} has no UI-TARS form")
    return f"Thought: {(thought or describe(action)).strip()}\nAction: {call}"
