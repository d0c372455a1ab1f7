"""maiui: MAI-UI (Alibaba Tongyi-MAI; 2B/8B, on Qwen3-VL) as its own navigation agent drives it: a `<thinking>`
block and one `mobile_use` tool call, points on a 0..999 grid (Tongyi-MAI/MAI-UI `src/mai_naivigation_agent.py`)."""

from __future__ import annotations

from typing import Any

from conway.geometry import NO_RESIZE, Convention
from conway.policies.families.maiui.turn import maiui_turn
from conway.policies.family import Conversation, Family

SOURCE = "Tongyi-MAI/MAI-UI src/mai_naivigation_agent.py (4dd07b9e910a294f001452e888514d912b96cc41)"


def _adapter() -> Any:
    from conway.policies.families.maiui.adapter import MAIUIAdapter
    return MAIUIAdapter()


FAMILY = Family(
    name="maiui",
    adapter=_adapter,
    # parse_action_to_structure_output: coordinate / SCALE_FACTOR (999), a 4-number box by its centre
    convention=Convention.RELATIVE999,
    resize=NO_RESIZE,  # _prepare_images: the screenshot as captured (RGB), pil_to_base64 as PNG
    render=maiui_turn,
    presets=("mai-ui",),
    # MAIUINaivigationAgent's default runtime_conf (the README's quick start passes the same values): max_tokens
    # 2048, temperature 0.0, top_p 1.0, top_k -1; predict adds frequency_penalty 0.0, presence_penalty 0.0,
    # repetition_penalty 1.0 and seed 42
    max_tokens=2048,
    temperature=0.0,
    sampling=(("top_p", 1.0), ("frequency_penalty", 0.0), ("presence_penalty", 0.0), ("repetition_penalty", 1.0),
              ("top_k", -1), ("seed", 42)),
    # _build_messages at history_n 3: the instruction its own user turn, each past answer re-written from its parsed
    # action (`<thinking>` + compact `mobile_use` JSON), the newest 2 after their screenshot
    conversation=Conversation(
        history_images=3,
        replayed="every earlier answer, re-written from its parsed action as the agent keeps it; the newest 2 "
                 "after their screenshot",
        source=SOURCE),
)
