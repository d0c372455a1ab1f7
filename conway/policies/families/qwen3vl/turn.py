"""Qwen3-VL's target turn: a recorded step as `Action:` and `<tool_call>` blocks (Qwen2.5-VL answers alike)."""

from __future__ import annotations

import json
from typing import Any

from conway.policies.target_turns import describe


def _tool_call(arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": arguments}, ensure_ascii=False) + \
        "\n</tool_call>"


def qwen3vl_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """Qwen3-VL's answer: `Action: …` then `<tool_call>` blocks calling `computer_use` (OSWorld's format)."""
    t = action["type"]
    xy = list(pt[("x", "y")]) if ("x", "y") in pt else None
    calls: list[dict[str, Any]]
    if t == "click":
        button = action.get("button", "left")
        calls = [{"action": f"{button}_click", "coordinate": xy}]
    elif t in ("double_click", "triple_click", "right_click"):
        calls = [{"action": t, "coordinate": xy}]
    elif t == "move":
        calls = [{"action": "mouse_move", "coordinate": xy}]
    elif t == "drag":
        calls = [{"action": "mouse_move", "coordinate": xy},
                 {"action": "left_click_drag", "coordinate": list(pt[("to_x", "to_y")])}]
    elif t == "type":
        calls = [{"action": "type", "text": action["text"]}]
    elif t == "key":
        calls = [{"action": "key", "keys": [action["key"]]}]
    elif t == "hotkey":
        calls = [{"action": "key", "keys": list(action["keys"])}]
    elif t == "scroll":
        dy, dx = int(action.get("dy") or 0), int(action.get("dx") or 0)
        call: dict[str, Any] = {"action": "hscroll", "pixels": dx} if dx and not dy else {"action": "scroll",
                                                                                          "pixels": dy}
        if xy is not None:
            call["coordinate"] = xy
        calls = [call]
    elif t == "wait":
        calls = [{"action": "wait", **({"time": action["seconds"]} if action.get("seconds") is not None else {})}]
    elif t == "finish":
        status = "success" if action.get("status") == "DONE" else "failure"
        calls = ([{"action": "answer", "text": action["message"]}] if action.get("message") else []) + \
            [{"action": "terminate", "status": status}]
    else:
        raise ValueError(f"{t} has no Qwen3-VL form")
    line = (thought or describe(action)).strip()
    return f"Action: {line}\n" + "\n".join(_tool_call(c) for c in calls)
