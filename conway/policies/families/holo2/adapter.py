"""The Holo2 adapter: one screenshot and a target in, `{"x": …, "y": …}` (0..1000) out.

Asked with its cookbook's localization prompt (hosted-API notebook, kept exactly in `prompts/`), the request its
`build_messages` sends: no system turn; one user turn, the screenshot, then the prompt, a newline and the target
(Conway's task text); what changes every cycle follows as one more text. No past turn is sent. The notebook
constrains the answer with the schema (vLLM `structured_outputs`): offered, not forced, as for Holo1.5.
"""

from __future__ import annotations

import json
from typing import Any

import conway.policies.families.holo2.parse as parse
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, image, text
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "Holo2Adapter"]

FILES = PromptFolder.of(__file__)
"""Holo2's prompt files, kept exactly (`prompts/SOURCES.md`)."""


class Holo2Adapter(Adapter):
    name = "holo2"
    constrain_by_default = False
    replays = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return FILES.text("localization.txt")

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""

    def request_text(self) -> str:
        return FILES.text("request.txt")  # Conway's own: the cookbook sends no request line

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As the notebook's `build_messages`: one user turn, the screenshot, then the prompt and the target."""
        content = ([image(slots.image_url)] if slots.image_url else []) + [text(f"{slots.system}\n{slots.task}")]
        return [{"role": "user", "content": content + ([text(slots.tail)] if slots.tail else [])}]

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse.parse_click(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec(schema=json.loads(FILES.text("click_schema.json")))
