"""The GUI-Owl 1.5 adapter: its `computer_use` tool (in a fixed system prompt), `Action:` + `<tool_call>` answers.

The request is the one `Owl15Agent.predict` sends (OSWorld `mm_agents/owl15_agent.py`, the OpenAI engine) at
`scripts/python/run_multienv_gui_owl15.py`'s defaults (history_n 5, use_history 1): the system turn is `OWL15_PROMPT`
exactly (its tool states a 1000x1000 screen; nothing is filled in), then one user turn with the instruction (and,
once steps are folded, "Previous actions:" with `StepN: …` lines) before the oldest screenshot kept, the newest 4
answers as written after their screenshots, and the current screenshot alone. Prompts kept in `prompts/`.
"""

from __future__ import annotations

from typing import Any

import conway.policies.families.guiowl.parse as parse_guiowl
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, image, text
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "GUIOwlAdapter"]

FILES = PromptFolder.of(__file__)
"""GUI-Owl 1.5's prompt files, kept exactly (`prompts/SOURCES.md`)."""


class GUIOwlAdapter(Adapter):
    name = "guiowl"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return FILES.text("system.txt")  # exactly: the agent fills nothing in

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the tool in the system prompt lists the actions

    def request_text(self) -> str:
        return FILES.text("instruction.txt").split("\n\n", 1)[0]

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As `Owl15Agent.predict` leaves `self.messages` after `slim_messages_new`: the instruction (then the folded
        steps) before the oldest screenshot sent, each kept answer after its screenshot, the current one last."""
        instruction = FILES.text("instruction.txt").replace("{instruction}", slots.task)
        folded = [p for p in past if p.image_url is None]
        if folded:
            instruction += "\n\nPrevious actions:\n" + "\n".join(
                f"Step{p.turn.number}: {parse_guiowl.action_line(p.turn.answer)}" for p in folded)
        out: list[dict[str, Any]] = [{"role": "system", "content": [text(slots.system)]}]
        first: list[dict[str, Any]] = [text(instruction)]
        for p in past:
            if p.image_url is None:
                continue
            out.append({"role": "user", "content": first + [image(p.image_url)]})
            out.append({"role": "assistant", "content": [text(p.turn.answer)]})
            first = []
        last = first + ([image(slots.image_url)] if slots.image_url else [])
        out.append({"role": "user", "content": last + ([text(slots.tail)] if slots.tail else [])})
        return out

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_guiowl.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # free text, as the agent asks
