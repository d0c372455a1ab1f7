"""GUI-Owl 1.5's target turn: `Action:` and one `<tool_call>` of `computer_use` (Qwen3-VL's form)."""

from __future__ import annotations

from typing import Any

from conway.policies.families.qwen3vl.turn import qwen3vl_turn


def guiowl_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """GUI-Owl 1.5's answer: `Action: …` then the `computer_use` call(s) on its 0..1000 grid."""
    return qwen3vl_turn(action, pt, thought)
