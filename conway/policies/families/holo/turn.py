"""Holo1.5's target turn: a recorded click as its answer."""

from __future__ import annotations

import json
from typing import Any


def holo_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """Holo1.5's answer: its ClickAbsoluteAction object (it only clicks)."""
    if action["type"] != "click" or ("x", "y") not in pt:
        raise ValueError(f"{action['type']} has no Holo form (it answers one click)")
    x, y = pt[("x", "y")]
    return json.dumps({"action": "click_absolute", "x": x, "y": y})
