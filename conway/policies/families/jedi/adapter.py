"""The Jedi adapter: one screenshot and an element description in, one `computer_use` call (its point) out.

Asked as OSWorld's Jedi agents ask their executor (`jedi_7b_agent.py`, `convert_action_to_grounding_model_
instruction`): the system turn is `JEDI_GROUNDER_SYS_PROMPT` with the smart-resized size filled in by `str.replace`
(so its doubled braces are sent as they stand), then one user turn: the screenshot, then a newline and the
description. Conway's task text is the description; what changes every cycle follows as one more text. No past
turn is sent. As a planner's executor (`policy.planner`), the description is the planner's comment line.
"""

from __future__ import annotations

from typing import Any

import conway.policies.families.jedi.parse as parse
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, text
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "JediAdapter"]

FILES = PromptFolder.of(__file__)
"""Jedi's prompt files, kept exactly (`prompts/SOURCES.md`)."""


class JediAdapter(Adapter):
    name = "jedi"
    constrain_by_default = False
    replays = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        w, h = sent_size
        return FILES.text("grounder_system.txt").replace("{height}", str(h)).replace("{width}", str(w))

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""

    def request_text(self) -> str:
        return FILES.text("request.txt")  # Conway's own: the agent sends no request line

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As the agent asks its executor: the system prompt, then the screenshot (`detail: high`, as it writes it)
        and "\\n" + the description."""
        shot = [{"type": "image_url", "image_url": {"url": slots.image_url, "detail": "high"}}] if slots.image_url else []
        content = shot + [text("\n" + slots.task)]
        return [{"role": "system", "content": [text(slots.system)]},
                {"role": "user", "content": content + ([text(slots.tail)] if slots.tail else [])}]

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse.parse_point(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()
