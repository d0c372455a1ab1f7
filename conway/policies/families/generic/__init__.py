"""generic: any OpenAI-compatible VLM answering `{"thought": …, "action": {…}}` in Conway's action schema."""

from __future__ import annotations

from typing import Any

from conway.geometry import QWEN25_VL_RULE, Convention
from conway.policies.families.generic.turn import generic_turn
from conway.policies.family import Conversation, Family


def _adapter(prompt: str = "full") -> Any:  # both prompts parse and constrain alike; `layout` tells them apart
    from conway.policies.families.generic.adapter import GenericAdapter
    return GenericAdapter()


FAMILY = Family(
    name="generic",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # pixels of the image as sent; its size is in the prompt
    resize=QWEN25_VL_RULE,
    render=generic_turn,
    follows_prompted_geometry=True,  # its prompt states the convention and the image size
    presets=("generic",),
    # `bare`: the goals and the screenshot only, for a model trained on that form (the tiny demo base of
    # docs/learning.md: behind the ~1,100-token system prompt its 2 layers lose the skill it learned)
    prompts=("full", "bare"),
    by_prompt={"bare": {"layout": "bare",
                        "deviation": "the goals and the screenshot only: no system prompt (instructions, "
                                     "constitution, action space, host facts), no memory, steps or results"}},
    max_tokens=512,  # Conway's own answer: one JSON object with a short thought
    temperature=0.0,
    image_encoding="jpeg",  # Conway's own request: JPEG q85 (measured 5-40x cheaper than PNG, docs/measurements.md)
    # qwen-vl-utils' Qwen2.5-VL max_pixels 12845056 = 16384 x 28 x 28 (QwenLM/Qwen2.5-VL vision_process.py)
    image_max_tokens=16384,
    # Conway's own conversation: one screenshot and the recent steps as text; with policy.history_images > 1 the
    # past JSON answers are replayed after their screenshots
    conversation=Conversation(
        history_images=1,
        replayed="nothing by default (recent steps as text); with policy.history_images > 1 its JSON answers "
                 "after their screenshots"),
)
