"""The MAI-UI adapter: its fixed system prompt, `<thinking>` + `mobile_use` answers, the request its agent sends.

The `<thinking>` block is the answer's, not reasoning to hide: the backends split it off (as every `<think…>`
block), and `answer_text` puts it back, so it is parsed, kept and replayed as the agent does.

`MAIUINaivigationAgent._build_messages` at its defaults (history_n 3, no MCP tools): the system turn is
`MAI_MOBILE_SYS_PROMPT` exactly, then the instruction alone as a user turn, then each past step: its screenshot as
a user turn of its own (the newest 2 only) and its answer re-written as the agent keeps it (`parse.replayed`),
then the current screenshot as the last user turn. Prompt kept in `prompts/`.
"""

from __future__ import annotations

from typing import Any

import conway.policies.families.maiui.parse as parse_maiui
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, image, text
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "MAIUIAdapter"]

FILES = PromptFolder.of(__file__)
"""MAI-UI's prompt file, kept exactly (`prompts/SOURCES.md`)."""


class MAIUIAdapter(Adapter):
    name = "maiui"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return FILES.text("system.txt")  # exactly: the agent fills nothing in

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the system prompt lists the actions

    def request_text(self) -> str:
        """The prompt's own request (its first line's last sentence): the agent closes no user turn with a line of
        its own (the instruction is sent alone), so this only sizes the window."""
        return FILES.text("system.txt").split("\n", 1)[0].rsplit(". ", 1)[-1]

    def answer_text(self, text: str, reasoning: str | None) -> tuple[str, str | None]:
        """The answer with its thinking as the agent reads it (`parse.with_thinking`)."""
        return parse_maiui.with_thinking(text, reasoning)

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": [text(slots.system)]},
                                     {"role": "user", "content": [text(slots.task)]}]
        for p in past:
            if p.image_url is not None:
                out.append({"role": "user", "content": [image(p.image_url)]})
            out.append({"role": "assistant", "content": [text(parse_maiui.replayed(p.turn.answer))]})
        last = [image(slots.image_url)] if slots.image_url else []
        out.append({"role": "user", "content": last + ([text(slots.tail)] if slots.tail else [])})
        return out

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_maiui.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # free text, as the agent asks
