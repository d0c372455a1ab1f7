"""jedi: Jedi-3B/7B grounding models (xlang-ai, on Qwen2.5-VL), the executors of OSWorld's `jedi_*_agent.py`: one
`computer_use` tool call whose `coordinate` is the point, in pixels of the smart-resized screen."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conway.geometry import UITARS_1_0_RULE, Convention
from conway.policies.families.jedi.turn import jedi_turn
from conway.policies.family import Family


def _adapter() -> Any:
    from conway.policies.families.jedi.adapter import JediAdapter
    return JediAdapter()


FAMILY = Family(
    name="jedi",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # pixels of the size the grounder's system prompt states
    # jedi_7b_agent.py predict: smart_resize(height, width, max_pixels=2700*28*28) (factor 28, min 56*56): the
    # same numbers as UI-TARS 1.0's rule, under Jedi's name; 1920x1080 -> 1932x1092
    resize=replace(UITARS_1_0_RULE, name="jedi"),
    render=jedi_turn,
    presets=("jedi-7b", "jedi-3b"),
    reference="OSWorld mm_agents/jedi_7b_agent.py, jedi_3b_agent.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)",
    # JediAgent7B / JediAgent3B defaults (OSWorld has no runner script for them): max_tokens 1500, top_p 0.9,
    # temperature 0.5, the executor's request as the planner's
    max_tokens=1500,
    temperature=0.5,
    sampling=(("top_p", 0.9),),
    image_max_tokens=2700,
)
