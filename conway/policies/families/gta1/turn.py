"""GTA1's target turn: a recorded click as its answer."""

from __future__ import annotations

from typing import Any


def gta1_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """GTA1's answer: the point, nothing else (it only clicks)."""
    if action["type"] != "click" or ("x", "y") not in pt:
        raise ValueError(f"{action['type']} has no GTA1 form (it answers one point)")
    x, y = pt[("x", "y")]
    return f"({x},{y})"
