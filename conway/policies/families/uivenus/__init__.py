"""uivenus: UI-Venus 1.5 (inclusionAI; 2B/8B/30B-A3B, on Qwen3-VL) as its own Venus framework drives a phone:
`<think>` / `<action>` / `<conclusion>` answers, `Click(box=(x,y))` calls on a 0..1000 grid (inclusionAI/UI-Venus
`Venus_framework/`)."""

from __future__ import annotations

from typing import Any

from conway.geometry import NO_RESIZE, Convention
from conway.policies.families.uivenus.turn import uivenus_turn
from conway.policies.family import Conversation, Family

SOURCE = "inclusionAI/UI-Venus Venus_framework/ (c3a1442c3c4501af18c124458dbbddcbda5c2c6f)"


def _adapter() -> Any:
    from conway.policies.families.uivenus.adapter import UIVenusAdapter
    return UIVenusAdapter()


FAMILY = Family(
    name="uivenus",
    adapter=_adapter,
    # UIVenusPolicy._parse_response normalize_to_screen: int(x * width / 1000) ("1000x1000 coordinates")
    convention=Convention.RELATIVE1000,
    resize=NO_RESIZE,  # the device's screenshot, base64 as it comes, no resize
    render=uivenus_turn,
    presets=("ui-venus-1.5",),
    # UIVenusPolicy._call_model's body: model, messages and temperature (config/ui_venus_single.yaml: 0.0), nothing
    # else; 2048 is what run_navi.sh lets the model write, budgeted for the reply, never sent
    max_tokens=2048,
    sends_max_tokens=False,
    temperature=0.0,
    known_differences=("the screenshot's data URL says `image/png` where the framework's says `image` only "
                       "(data:image;base64,…): the same PNG bytes",),
    # UIVenusProcessor at each step: one user turn, the prompt with every earlier step as `Step i: <think>…</think>
    # <action>…</action>` (from 0), then the current screenshot alone
    conversation=Conversation(
        history_images=1,
        replayed="every earlier step's `<think>` and `<action>` as `Step i:` lines in the prompt's previous actions",
        source=SOURCE,
        keeps_reasoning=True),
)
