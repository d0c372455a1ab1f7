"""Jedi's target turn: a recorded click as its one `computer_use` tool call."""

from __future__ import annotations

import json
from typing import Any


def jedi_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """Jedi's answer: `<tool_call>` with a `left_click` at the point (it grounds one point)."""
    if action["type"] != "click" or ("x", "y") not in pt:
        raise ValueError(f"{action['type']} has no Jedi form (it answers one point)")
    x, y = pt[("x", "y")]
    call = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [x, y]}}
    return "<tool_call>\n" + json.dumps(call) + "\n</tool_call>"
