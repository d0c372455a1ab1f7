"""opencua: OpenCUA-7B/32B, `## Thought` / `## Action` / `## Code` answers with pyautogui calls."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conway.geometry import QWEN25_VL_RULE, Convention
from conway.policies.families.opencua.turn import opencua_turn
from conway.policies.family import Architecture, Conversation, Family


def _adapter(prompt: str = "l2") -> Any:
    from conway.policies.families.opencua.adapter import OpenCUAAdapter
    return OpenCUAAdapter(level=prompt)


FAMILY = Family(
    name="opencua",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # OpenCUA-7B/32B; the other variants answer relative 0-1
    # the Qwen2.5-VL rule under its own name: scripts/python/run_multienv_opencua.py --coordinate_type qwen25
    resize=replace(QWEN25_VL_RULE, name="opencua", server_resizes=True),
    render=opencua_turn,
    # a Qwen2.5-VL vision tower on a Qwen2 LM in the repository's own code, unknown to llama.cpp's converter
    architecture=Architecture("opencua", remote_code=True, gguf=False),
    # OpenCUA-7B and -32B alike: scripts/python/run_multienv_opencua.py runs both with --coordinate_type qwen25
    # (absolute pixels of the 28-px smart_resize, max 12845056 px) and --use_old_sys_prompt (the training-data
    # prompts kept here), cot_level l2 by default
    presets=("opencua-7b", "opencua-32b"),
    prompts=("l2", "l1", "l3", "l2-osworld"),  # l2-osworld: the prompt OSWorld's agent sends (its VM's facts)
    osworld_prompt="l2-osworld",  # an OSWorld task run sends it as the agent does; the user's desktop gets l2
    # OSWorld scripts/python/run_multienv_opencua.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6):
    # --max_tokens 2048, --temperature 0, --top_p 0.9 into mm_agents/opencua/opencua_agent.py, whose call_llm asks
    # again (up to 20 times) while an answer does not end with finish_reason "stop"; its smart_resize max_pixels
    # 12845056 = 16384 x 28 x 28; PNG images
    max_tokens=2048,
    temperature=0,  # an int: the runner's argparse default is 0 (type=float only converts a given value)
    top_p=0.9,
    retry_unfinished=20,
    image_max_tokens=16384,
    # mm_agents/opencua/opencua_agent.py OpenCUAAgent.predict with history_type action_history (the default of
    # scripts/python/run_multienv_opencua.py): `# Step N:` + `## Action:` assistant turns, the newest
    # max_image_history_length - 1 after their screenshot, older ones folded into one assistant text first
    conversation=Conversation(
        history_images=3,
        replayed="every earlier answer's `## Action:` section as `# Step N:` turns; the newest 2 after their "
                 "screenshot, all older ones folded into one assistant text",
        source="OSWorld mm_agents/opencua/opencua_agent.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)"),
)
