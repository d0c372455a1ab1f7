"""MAI-UI's target turn: a `<thinking>` block and one `mobile_use` call on its 0..999 grid."""

from __future__ import annotations

import json
from typing import Any

from conway.policies.target_turns import describe

_SWIPE = {(-1, 0): "up", (1, 0): "down", (0, 1): "left", (0, -1): "right"}
"""(sign of dy, sign of dx) -> the swipe that scrolls so (`parse.SWIPES` read backwards)."""


def maiui_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """MAI-UI's answer for a recorded action, as its agent replays answers (compact JSON)."""
    t = action["type"]
    xy = list(pt[("x", "y")]) if ("x", "y") in pt else None
    if t == "click" and action.get("button", "left") == "left":
        args: dict[str, Any] = {"action": "click", "coordinate": xy}
    elif t == "double_click":
        args = {"action": "double_click", "coordinate": xy}
    elif t == "drag":
        args = {"action": "drag", "start_coordinate": xy, "end_coordinate": list(pt[("to_x", "to_y")])}
    elif t == "type":
        args = {"action": "type", "text": action["text"]}
    elif t == "key" and action["key"].lower() == "enter":
        args = {"action": "system_button", "button": "enter"}
    elif t == "scroll" and (direction := _direction(action)) is not None:
        args = {"action": "swipe", "direction": direction, **({"coordinate": xy} if xy is not None else {})}
    elif t == "wait":
        args = {"action": "wait"}
    elif t == "finish" and action.get("message") and action.get("status") == "DONE":
        args = {"action": "answer", "text": action["message"]}
    elif t == "finish":
        args = {"action": "terminate", "status": "success" if action.get("status") == "DONE" else "fail"}
    else:
        raise ValueError(f"{t} has no MAI-UI form (its mobile_use tool has no such action)")
    call = json.dumps({"name": "mobile_use", "arguments": args}, separators=(",", ":"))
    return f"<thinking>\n{(thought or describe(action)).strip()}\n</thinking>\n<tool_call>\n{call}\n</tool_call>"


def _direction(action: dict[str, Any]) -> str | None:
    dy, dx = int(action.get("dy") or 0), int(action.get("dx") or 0)
    if dy and dx:
        return None
    return _SWIPE.get(((dy > 0) - (dy < 0), (dx > 0) - (dx < 0)))
