"""qwen3vl: Qwen3-VL, `computer_use` tool calls in `<tool_call>` blocks on a 0..999 grid.

Its own family, not a generic preset: Qwen3-VL was trained to answer through the `computer_use` tool
(QwenLM/Qwen3-VL cookbooks/utils/agent_function_call.py), and OSWorld's agent for its published numbers
(mm_agents/qwen3vl_agent.py) reads those blocks and scales a point by width / 999.
"""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention, ResizeRule
from conway.policies.families.qwen3vl.turn import qwen3vl_turn
from conway.policies.family import Conversation, Family


def _adapter() -> Any:
    from conway.policies.families.qwen3vl.adapter import Qwen3VLAdapter
    return Qwen3VLAdapter()


FAMILY = Family(
    name="qwen3vl",
    adapter=_adapter,
    convention=Convention.RELATIVE999,  # OSWorld's qwen3vl_agent.py: x * width / 999 (coordinate_type="relative")
    # factor 32 = patch 16 x merge 2; min/max are qwen-vl-utils' defaults for it, IMAGE_MIN_TOKEN_NUM = 4 and
    # IMAGE_MAX_TOKEN_NUM = 16384 tokens of 32x32 px (QwenLM/Qwen3-VL qwen-vl-utils/src/qwen_vl_utils/
    # vision_process.py, commit 96588727e44c78b25ba03ea03b8e12f7e64fd0da). OSWorld's qwen3vl_agent.py caps at 12800
    # tokens (16*16*4*12800 px), which changes nothing below 4K. The released HF preprocessor_config uses
    # shortest_edge 65536 instead of 4096; the difference only matters for images below 256x256.
    resize=ResizeRule(factor=32, min_pixels=4096, max_pixels=16777216, name="qwen3-vl", resample="bicubic"),
    render=qwen3vl_turn,
    presets=("qwen3-vl",),
    # OSWorld scripts/python/run_multienv_qwen3vl.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)
    # passes max_tokens 32768; mm_agents/qwen3vl_agent.py _call_llm_openai sends it and no temperature or top_p
    # (both commented out there): the server's defaults. process_image: max_pixels 16*16*4*12800 = 12800 tokens
    # of 32x32 px, PNG.
    max_tokens=32768,
    temperature=None,
    image_max_tokens=12800,
    # mm_agents/qwen3vl_agent.py Qwen3VLAgent.predict: the last history_n (4) answers as assistant turns after
    # their screenshots (the first one with the instruction), older ones as `Step N: <Action line>` in the
    # instruction's "Previous actions", then the current screenshot
    conversation=Conversation(
        history_images=5,
        replayed="the newest 4 answers as written, after their screenshot; every older one as its `Action:` line "
                 "in the instruction's Previous actions",
        source="OSWorld mm_agents/qwen3vl_agent.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)"),
)
