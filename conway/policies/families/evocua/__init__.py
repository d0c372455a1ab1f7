"""evocua: EvoCUA (Meituan), OSWorld's `mm_agents/evocua/`: S2 `computer_use` tool calls (default) or S1 `## Action`
/ `## Code` pyautogui answers."""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention, ResizeRule
from conway.policies.families.evocua.turn import evocua_turn
from conway.policies.family import Conversation, Family

SOURCE = "OSWorld mm_agents/evocua/evocua_agent.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)"


def _adapter(prompt: str = "s2") -> Any:
    from conway.policies.families.evocua.adapter import EvoCUAS1Adapter, EvoCUAS2Adapter
    return EvoCUAS2Adapter() if prompt == "s2" else EvoCUAS1Adapter()


FAMILY = Family(
    name="evocua",
    adapter=_adapter,
    # S2 at scripts/python/run_multienv_evocua.py's defaults: --coordinate_type relative, a 0..999 grid
    # (EvoCUAAgent._parse_response_s2 scales x * width / 999; its tool says the screen is 1000x1000)
    convention=Convention.RELATIVE999,
    # mm_agents/evocua/utils.py process_image: smart_resize(factor=--resize_factor 32, min_pixels 56*56 (the
    # utils' default), max_pixels 16*16*4*12800); 1920x1080 -> 1920x1088. S1 sends the screenshot unresized.
    resize=ResizeRule(factor=32, min_pixels=3136, max_pixels=13107200, name="evocua", resample="bicubic"),
    render=evocua_turn,
    presets=("evocua", "evocua-s1"),
    prompts=("s2", "s1"),
    # the S1 run of the same runner (configs/policy/evocua-s1.yaml): --coordinate_type qwen25 --resize_factor 28,
    # max_history_turns 2 (3 screenshots a request)
    by_prompt={"s1": {"resize": "qwen2.5-vl-server", "convention": "absolute", "history_images": 3}},
    # run_multienv_evocua.py: --max_tokens 32768, --temperature 0.0, --top_p 0.9 (call_llm sends all three, S1 too)
    max_tokens=32768,
    temperature=0.0,
    image_max_tokens=12800,  # 16*16*4*12800 px / 32**2
    sampling=(("top_p", 0.9),),
    # _build_s2_messages at --max_history_turns 3: the newest 3 answers as written after their screenshot (the
    # first of them with the instruction and the older steps' `Action:` lines as "Previous actions"), then the
    # current screenshot alone
    conversation=Conversation(
        history_images=4,
        replayed="S2: the newest 3 answers as written, after their screenshot; older ones as their `Action:` line in "
                 "the instruction's Previous actions. S1: `# Step N:` + `## Action:` turns, the newest 2 after their "
                 "screenshot, older ones folded into one assistant text",
        source=SOURCE),
)
