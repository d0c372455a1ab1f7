"""EvoCUA's target turn: S2's `Action:` line and one `<tool_call>` (Qwen3-VL's form, which EvoCUA's agent reads)."""

from __future__ import annotations

from typing import Any

from conway.policies.families.qwen3vl.turn import qwen3vl_turn


def evocua_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """EvoCUA S2's answer: `Action: …` then the `computer_use` call(s) on its 0..999 grid."""
    return qwen3vl_turn(action, pt, thought)
