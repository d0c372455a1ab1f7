"""The Kimi adapter: `## Thought` / `## Action` / `## Code` answers, the request `KimiAgent.predict` sends.

At `scripts/python/run_multienv_kimi_k25.py`'s defaults (non-thinking, 3 images): the system turn is
`SYSTEM_PROMPT_NON_THINKING` with the runner's VM password filled in (kept in `prompts/` as a template), then the
past steps as `# Step N:` + `## Thought:` / `## Action:` assistant texts (the newest 2 after their screenshot, older
ones folded into one assistant text), then the current screenshot and `INSTRUCTION_TEMPLATE` with Conway's task.
"""

from __future__ import annotations

from typing import Any

import conway.policies.families.kimi.parse as parse_kimi
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, folded_layout
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "OSWORLD_PASSWORD", "KimiAdapter"]

FILES = PromptFolder.of(__file__)
"""Kimi's prompt files, kept exactly (`prompts/SOURCES.md`)."""

OSWORLD_PASSWORD = "osworld-public-evaluation"
"""`KimiAgent`'s and its runner's `password` default, which the system prompt states."""


class KimiAdapter(Adapter):
    name = "kimi"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return FILES.text("system_non_thinking.txt").replace("{password}", OSWORLD_PASSWORD)

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""

    def request_text(self) -> str:
        return FILES.text("instruction.txt").split("\n\n", 1)[1].strip()

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        return folded_layout(slots, past, _step, FILES.text("instruction.txt"))

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_kimi.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()


def _step(p: Past) -> str:
    """`STEP_TEMPLATE` + `THOUGHT_HISTORY_TEMPLATE_NON_THINKING` of a past answer."""
    answer = p.turn.answer
    return f"# Step {p.turn.number}:\n## Thought:\n{parse_kimi.thought(answer)}\n\n## Action:\n{parse_kimi.action(answer)}\n"
