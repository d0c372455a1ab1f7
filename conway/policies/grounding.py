"""Adapters for grounding models: one screenshot and an element description in, one point (a click) out.

GTA1 is asked with the system prompt OSWorld's GTA1 agent gives its grounding model (`mm_agents/gta1/`,
the image size it is sent filled in) and answers `(x,y)`; Holo1.5 with its cookbook's localization prompt,
answering `{"action": "click_absolute", "x": …, "y": …}`. Both answer pixels of the resized image they were
sent (`Convention.ABSOLUTE`); prompts kept exactly in `conway/policies/prompts/{gta1,holo}/`, answers read by
`parse_point` (never evaluated). These models only click: in `conway run` each decision is a click on what
the goals describe, in `conway grounding-check` the case's instruction is the description.

Each request is the one its source sends (`messages`), stateless: GTA1's `request_vllm` (system prompt, then one
user turn: the description, then the screenshot) and the cookbook's `build_messages` (no system turn; one user
turn: the screenshot, then the prompt, a newline and the target). Conway's task text (constitution, goals,
memory) is the description; what changes every cycle follows as one more text. No past turn is sent.
"""

from __future__ import annotations

import json
from typing import Any

from conway.geometry import Convention, Size
from conway.policies import parse_point
from conway.policies.adapter import Adapter
from conway.policies.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, image, text
from conway.policies.parsed import ParsedOutput
from conway.policies.prompts import prompt_text
from conway.protocols import DecisionContext

__all__ = ["GTA1Adapter", "HoloAdapter"]


class GTA1Adapter(Adapter):
    name = "gta1"
    constrain_by_default = False
    replays = False
    """No past turn is sent (`ModelPolicy` budgets no history for it)."""

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        w, h = sent_size  # the agent fills in the smart-resized size, which is the image Conway sends
        return prompt_text("gta1/system.txt").replace("{height}", str(h)).replace("{width}", str(w))

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the prompt says the one answer it takes; an empty part is left out

    def request_text(self) -> str:
        return "Locate the element the goals describe."

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As `request_vllm` sends it: the system prompt as a string, then the description before the screenshot."""
        content = [text(slots.task)] + ([image(slots.image_url)] if slots.image_url else [])
        return [{"role": "system", "content": slots.system},
                {"role": "user", "content": content + ([text(slots.tail)] if slots.tail else [])}]

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_point.parse_pair(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # free text, as the agent asks


class HoloAdapter(Adapter):
    name = "holo"
    constrain_by_default = False
    replays = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return prompt_text("holo/localization.txt")  # exactly; `messages` puts the target (Conway's task) after it

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""

    def request_text(self) -> str:
        return "Output the click position of the target as that JSON object."

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As the cookbook's `build_messages`: one user turn, the screenshot, then the prompt and the target."""
        content = ([image(slots.image_url)] if slots.image_url else []) + [text(f"{slots.system}\n{slots.task}")]
        return [{"role": "user", "content": content + ([text(slots.tail)] if slots.tail else [])}]

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_point.parse_click_json(text, convention=convention, sent_size=sent_size,
                                            captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        # the cookbook constrains the answer with this schema (vLLM structured_outputs); offered, not forced
        return StructuredSpec(schema=json.loads(prompt_text("holo/click_schema.json")))
