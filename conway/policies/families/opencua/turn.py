"""OpenCUA's target turn: a recorded step as its `## Thought` / `## Action` / `## Code` answer."""

from __future__ import annotations

import json
from typing import Any

from conway.policies.target_turns import describe, pointer_call

_OPENCUA_POINTER = {"double_click": "doubleClick", "triple_click": "tripleClick", "right_click": "rightClick",
                    "move": "moveTo"}
_OPENCUA_BUTTONS = {"left": "click", "right": "rightClick"}  # any other button: middleClick


def opencua_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """OpenCUA's answer: `## Thought` / `## Action` / `## Code` with one pyautogui call."""
    t = action["type"]
    x, y = pt.get(("x", "y"), (None, None))
    pointer = pointer_call(action, _OPENCUA_POINTER, _OPENCUA_BUTTONS, other_button="middleClick")
    if pointer is not None:
        code = f"pyautogui.{pointer}(x={x}, y={y})"
    elif t == "drag":
        tx, ty = pt[("to_x", "to_y")]
        code = f"pyautogui.moveTo(x={x}, y={y})\npyautogui.dragTo(x={tx}, y={ty})"
    elif t == "type":
        code = f"pyautogui.write(message={json.dumps(action['text'], ensure_ascii=False)})"
    elif t == "key":
        code = f"pyautogui.press({json.dumps(action['key'])})"
    elif t == "hotkey":
        code = "pyautogui.hotkey(" + ", ".join(json.dumps(k) for k in action["keys"]) + ")"
    elif t == "scroll":
        dy, dx = int(action.get("dy") or 0), int(action.get("dx") or 0)
        where = f", x={x}, y={y}" if ("x", "y") in pt else ""
        code = f"pyautogui.hscroll({dx}{where})" if dx and not dy else f"pyautogui.scroll({dy}{where})"
    elif t == "wait":
        code = f"computer.wait(seconds={action.get('seconds') or 1})"
    elif t == "finish":
        status = "success" if action.get("status") == "DONE" else "failure"
        code = f"computer.terminate(status={json.dumps(status)}, answer={json.dumps(action.get('message', ''))})"
    else:
        raise ValueError(f"{t} has no OpenCUA form")
    parts = []
    if thought:
        parts.append(f"## Thought:\n{thought.strip()}")
    parts.append(f"## Action:\n{describe(action)}")
    parts.append(f"## Code:\n```python\n{code}\n```")
    return "\n\n".join(parts)
