"""The GTA1 adapter: one screenshot and an element description in, one `(x,y)` point (a click) out.

Asked with the system prompt OSWorld's GTA1 agent gives its grounding model (`mm_agents/gta1/`, the image size it
is sent filled in), kept exactly in `prompts/`; answers pixels of the resized image it was sent
(`Convention.ABSOLUTE`), read by `parse.parse_pair` (never evaluated). The model only clicks: in `conway run` each
decision is a click on what the goals describe, in `conway grounding-check` the case's instruction is the
description.

The request is the one `request_vllm` sends (`messages`), stateless: the system prompt, then one user turn: the
description, then the screenshot. Conway's task text (constitution, goals, memory) is the description; what changes
every cycle follows as one more text. No past turn is sent.
"""

from __future__ import annotations

from typing import Any

import conway.policies.families.gta1.parse as parse
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, image, text
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["GTA1Adapter"]

FILES = PromptFolder.of(__file__)
"""GTA1's prompt files, kept exactly (`prompts/SOURCES.md`)."""


class GTA1Adapter(Adapter):
    name = "gta1"
    constrain_by_default = False
    replays = False
    """No past turn is sent (`ModelPolicy` budgets no history for it)."""

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        w, h = sent_size  # the agent fills in the smart-resized size, which is the image Conway sends
        return FILES.text("system.txt").replace("{height}", str(h)).replace("{width}", str(w))

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the prompt says the one answer it takes; an empty part is left out

    def request_text(self) -> str:
        return FILES.text("request.txt")  # Conway's own: the agent sends no request line

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As `request_vllm` sends it: the system prompt as a string, then the description before the screenshot."""
        content = [text(slots.task)] + ([image(slots.image_url)] if slots.image_url else [])
        return [{"role": "system", "content": slots.system},
                {"role": "user", "content": content + ([text(slots.tail)] if slots.tail else [])}]

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse.parse_pair(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # free text, as the agent asks
