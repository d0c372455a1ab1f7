"""qwen25vl: Qwen2.5-VL (-Instruct, any size) through OSWorld's agent's `computer_use` tool, absolute pixels."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conway.geometry import QWEN25_VL_RULE, Convention
from conway.policies.families.qwen3vl.turn import qwen3vl_turn
from conway.policies.family import Conversation, Family


def _adapter() -> Any:
    from conway.policies.families.qwen25vl.adapter import Qwen25VLAdapter
    return Qwen25VLAdapter()


FAMILY = Family(
    name="qwen25vl",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # pixels of the image sent (the agent scales them by captured / processed)
    # mm_agents/qwen25vl_agent.py process_image: mm_agents/utils/qwen_vl_utils.py smart_resize at its defaults
    # (factor 28, 56*56 to 14*14*4*1280 = 1,003,520 px): 1316x728 for 1920x1080
    resize=replace(QWEN25_VL_RULE, max_pixels=1003520, name="qwen25vl-agent", resample="bicubic"),
    render=qwen3vl_turn,  # the same <tool_call> answers (qwen3vl/parse.py reads both)
    presets=("qwen2.5-vl",),
    # OSWorld scripts/python/run_multienv_qwen25vl.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6):
    # --temperature 1.0, --top_p 0.9, --max_tokens 1500 into mm_agents/qwen25vl_agent.py (whose own default
    # temperature, 0.5, the runner overrides); PNG images
    max_tokens=1500,
    temperature=1.0,
    top_p=0.9,
    image_max_tokens=1280,
    # mm_agents/qwen25vl_agent.py Qwen25VLAgent.predict (same commit): the last history_n (4) answers as assistant
    # turns after their screenshots (the first one with the instruction), older ones as `Step N: <line>` in the
    # instruction's "Previous actions", then the current screenshot
    conversation=Conversation(
        history_images=5,
        replayed="the newest 4 answers as written, after their screenshot; older ones as their first `Action:` line "
                 "in the instruction's Previous actions",
        source="OSWorld mm_agents/qwen25vl_agent.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)"),
)
