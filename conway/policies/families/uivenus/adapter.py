"""The UI-Venus 1.5 adapter: the Venus framework's one-turn request and its `<think>` / `<action>` answers.

`UIVenusPolicy._call_model` at each step (`UIVenusProcessor` building the text): one user turn, the framework's
`USER_PROMPT` with the task and every earlier step (`Step 0: <think>…</think><action>…</action>`, one a line),
then the current screenshot. No system turn, no past screenshots. Prompt kept in `prompts/`.
"""

from __future__ import annotations

from typing import Any

import conway.policies.families.uivenus.parse as parse_uivenus
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, image, text
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "UIVenusAdapter"]

FILES = PromptFolder.of(__file__)
"""UI-Venus's prompt file, kept exactly (`prompts/SOURCES.md`)."""


class UIVenusAdapter(Adapter):
    name = "uivenus"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return ""  # no system turn: the prompt is the user turn's text

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the prompt lists the functions

    def request_text(self) -> str:
        return FILES.text("instruction.txt")  # sizes the window: the whole prompt goes with every request

    def answer_text(self, text: str, reasoning: str | None) -> tuple[str, str | None]:
        """The answer with its `<think>` as the framework reads and replays it (`parse.with_thinking`)."""
        return parse_uivenus.with_thinking(text, reasoning)

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        steps = "\n".join(f"Step {i}: {parse_uivenus.step_line(p.turn.answer)}" for i, p in enumerate(past))
        prompt = FILES.text("instruction.txt").format(user_task=slots.task, previous_actions=steps)
        content = [text(prompt)] + ([image(slots.image_url)] if slots.image_url else [])
        return [{"role": "user", "content": content + ([text(slots.tail)] if slots.tail else [])}]

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_uivenus.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # free text, as the framework asks
