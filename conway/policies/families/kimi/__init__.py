"""kimi: Kimi K2.5 (Moonshot) as OSWorld's `mm_agents/kimi/kimi_agent.py` drives it: `## Thought` / `## Action` /
`## Code` answers with pyautogui calls at 0..1 coordinates."""

from __future__ import annotations

from typing import Any

from conway.geometry import NO_RESIZE, Convention
from conway.policies.families.kimi.turn import kimi_turn
from conway.policies.family import Conversation, Family


def _adapter() -> Any:
    from conway.policies.families.kimi.adapter import KimiAdapter
    return KimiAdapter()


FAMILY = Family(
    name="kimi",
    adapter=_adapter,
    # run_multienv_kimi_k25.py --coordinate_type relative: x <= 1 and y <= 1 are fractions of the screen
    convention=Convention.RELATIVE,
    resize=NO_RESIZE,  # KimiAgent.predict sends the screenshot as captured
    render=kimi_turn,
    presets=("kimi-k2.5",),
    # scripts/python/run_multienv_kimi_k25.py defaults: --max_tokens 4096, --temperature 1.0, --top_p 0.95 (a retry
    # after a failed parse samples at max(0.2, temperature)); --thinking off
    max_tokens=4096,
    temperature=1.0,
    sampling=(("top_p", 0.95),),
    # KimiAgent.predict at --max_image_history_length 3: `# Step N:` + `## Thought:` / `## Action:` turns, the newest
    # 2 after their screenshot, older ones folded into one assistant text
    known_differences=("no retry of an unfinished answer: KimiAgent asks again while an answer does not end with "
                       "finish_reason \"stop\"; Conway does not ask again",),
    conversation=Conversation(
        history_images=3,
        replayed="each answer's `## Thought:` and `## Action:` sections as `# Step N:` turns; the newest 2 after their "
                 "screenshot, older ones folded into one assistant text",
        source="OSWorld mm_agents/kimi/kimi_agent.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)"),
)
