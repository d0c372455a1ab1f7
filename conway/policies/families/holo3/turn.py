"""Holo3.1's target turn: a recorded step as its agent-loop answer (the step's canonical JSON)."""

from __future__ import annotations

from typing import Any

from conway.policies.families.holo3.step import dump


def holo3_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """A click, a typed text or a finish as `{note, thought, tool_call}`; the documented tools have no other form."""
    kind = action["type"]
    if kind == "click" and ("x", "y") in pt:
        x, y = pt[("x", "y")]
        call: dict[str, Any] = {"tool_name": "click", "element": thought or "", "x": x, "y": y}
    elif kind == "type":
        call = {"tool_name": "write", "content": action["text"]}
    elif kind == "finish" and action.get("status") == "DONE":
        call = {"tool_name": "answer", "content": action.get("message", "")}
    else:
        raise ValueError(f"{kind} has no Holo3.1 form (its documented tools are click, write and answer)")
    return dump({"note": None, "thought": thought or "", "tool_call": call})
