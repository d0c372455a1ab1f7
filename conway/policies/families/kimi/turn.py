"""Kimi's target turn: a recorded step as its `## Thought` / `## Action` / `## Code` answer (OpenCUA's form)."""

from __future__ import annotations

from typing import Any

from conway.policies.families.opencua.turn import opencua_turn


def kimi_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """Kimi's answer (non-thinking prompt): `## Thought` / `## Action` / `## Code` with one pyautogui call."""
    return opencua_turn(action, pt, thought)
