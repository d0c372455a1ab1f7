"""Holo2's target turn: a recorded click as its answer."""

from __future__ import annotations

import json
from typing import Any


def holo2_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """Holo2's answer: its ClickCoordinates object (it only clicks)."""
    if action["type"] != "click" or ("x", "y") not in pt:
        raise ValueError(f"{action['type']} has no Holo2 form (it answers one click)")
    x, y = pt[("x", "y")]
    return json.dumps({"x": x, "y": y})
