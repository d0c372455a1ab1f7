"""The Holo1.5 adapter: one screenshot and a target in, `{"action": "click_absolute", "x": …, "y": …}` out.

Asked with its cookbook's localization prompt, kept exactly in `prompts/`; answers pixels of the resized image it
was sent (`Convention.ABSOLUTE`), read by `parse.parse_click_json` (never evaluated). The model only clicks: in
`conway run` each decision is a click on what the goals describe, in `conway grounding-check` the case's
instruction is the target.

The request is the one the cookbook's `build_messages` sends (`messages`), stateless: no system turn; one user turn:
the screenshot, then the prompt, a newline and the target (Conway's task text); what changes every cycle follows as
one more text. No past turn is sent.
"""

from __future__ import annotations

import json
from typing import Any

import conway.policies.families.holo.parse as parse
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, image, text
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["HoloAdapter"]

FILES = PromptFolder.of(__file__)
"""Holo1.5's prompt files, kept exactly (`prompts/SOURCES.md`)."""


class HoloAdapter(Adapter):
    name = "holo"
    constrain_by_default = False
    replays = False
    files = FILES
    """The prompt folder: localization.txt, request.txt and click_schema.json (Holo2 has its own)."""

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return self.files.text("localization.txt")  # exactly; `messages` puts the target (Conway's task) after it

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""

    def request_text(self) -> str:
        return self.files.text("request.txt")  # Conway's own: the cookbook sends no request line

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As the cookbook's `build_messages`: one user turn, the screenshot, then the prompt and the target."""
        content = ([image(slots.image_url)] if slots.image_url else []) + [text(f"{slots.system}\n{slots.task}")]
        return [{"role": "user", "content": content + ([text(slots.tail)] if slots.tail else [])}]

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse.parse_click_json(text, convention=convention, sent_size=sent_size,
                                            captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        # offered to Conway's own constraint modes (`policy.structured_output`), not forced
        return StructuredSpec(schema=self._schema())

    def request_fields(self) -> dict[str, Any]:
        """The cookbook sends its schema with every request, in vLLM's `structured_outputs` field (a server that
        does not know the field ignores it, as llama-server does)."""
        return {"structured_outputs": {"json": self._schema()}}

    def _schema(self) -> dict[str, Any]:
        return json.loads(self.files.text("click_schema.json"))
