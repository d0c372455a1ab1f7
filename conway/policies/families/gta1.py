"""gta1: GTA1 grounding models (GTA1-7B/32B/72B, on Qwen2.5-VL): one `(x,y)` point per answer, a click."""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention
from conway.policies.family import Family


def _adapter() -> Any:
    from conway.policies.grounding import GTA1Adapter
    return GTA1Adapter()


def _turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """GTA1's answer: the point, nothing else (it only clicks)."""
    if action["type"] != "click" or ("x", "y") not in pt:
        raise ValueError(f"{action['type']} has no GTA1 form (it answers one point)")
    x, y = pt[("x", "y")]
    return f"({x},{y})"


FAMILY = Family(
    name="gta1",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # pixels of the smart-resized image, whose size the prompt states
    resize="gta1",  # mm_agents/gta1/gta1_agent.py: smart_resize(factor=28, min_pixels=1000, max_pixels=1e12)
    render=_turn,
    presets=("gta1",),
    # mm_agents/gta1/gta1_agent.py request_vllm (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6):
    # max_tokens=100, temperature=0
    max_tokens=100,
    temperature=0.0,
    image_max_tokens=16384,  # no cap of its own: the Qwen2.5-VL processor's 16384 tokens bound what it sees
)
