"""gta1: GTA1 grounding models (GTA1-7B/32B/72B, on Qwen2.5-VL): one `(x,y)` point per answer, a click."""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention, ResizeRule
from conway.policies.families.gta1.turn import gta1_turn
from conway.policies.family import Family


def _adapter() -> Any:
    from conway.policies.families.gta1.adapter import GTA1Adapter
    return GTA1Adapter()


FAMILY = Family(
    name="gta1",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # pixels of the smart-resized image, whose size the prompt states
    # its model card's processor (Yan98/GTA1 README, 81f0c4c2997cf6ad696d42f47c5480f4c856b73a: factor 28,
    # min_pixels 3136, max_pixels 4096*2160); OSWorld's agent (mm_agents/gta1/gta1_agent.py) computes the same size
    # for any screen up to 4096x2160 (its min 1000 and max 1e12 never bind there)
    resize=ResizeRule(factor=28, min_pixels=3136, max_pixels=8847360, name="gta1", server_resizes=True),
    render=gta1_turn,
    presets=("gta1",),
    reference="OSWorld mm_agents/gta1/gta1_agent.py request_vllm (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)",
    # mm_agents/gta1/gta1_agent.py request_vllm (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6):
    # max_tokens=100, temperature=0 (the model card's example: 32 new tokens, greedy)
    max_tokens=100,
    temperature=0,  # an int, as request_vllm sends it (the wire keeps the type: golden tests compare it)
    known_differences=("the colours: the agent's BGR swap (cv2.imencode of an RGB array) is not reproduced, the "
                       "screenshot goes as captured (docs/fidelity.md)",),
    image_max_tokens=11285,  # 4096*2160 px / 28**2: the model card's max_pixels
)
