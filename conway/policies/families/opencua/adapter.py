"""The OpenCUA adapter: ``## Thought`` / ``## Action`` / ``## Code`` answers with pyautogui calls (up to 8 a step).

The system prompt is the one of OpenCUA's training data, kept exactly in
`prompts/` (L2 by default; L1 and L3 beside it), or (`l2-osworld`) the one OSWorld's agent sends for a task
on its VM (the password sentence, `status='failure'`), and
the request line is its instruction template's. The code is read by
its `parse.py` (an AST allowlist; never executed). Coordinates: absolute pixels of the smart-resized image for OpenCUA-7B/32B
(the default), relative 0-1 for the other variants (`policy.convention`).
Free text by default (the format the model was trained on); with
`policy.structured_output=grammar` a GBNF grammar holds it to the format.
"""

from __future__ import annotations

import json
from typing import Any

import conway.policies.families.opencua.parse as parse_opencua
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, folded_layout, opencua_action
from conway.policies.grammar import opencua_grammar
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "LEVELS", "OSWORLD_PROMPTS", "OpenCUAAdapter", "SUPPORTED_TYPES"]

FILES = PromptFolder.of(__file__)
"""The OpenCUA prompt files, kept exactly (`prompts/SOURCES.md`)."""

SUPPORTED_TYPES = ("click", "double_click", "triple_click", "right_click", "move", "drag", "type", "key",
                   "hotkey", "scroll", "wait", "finish")
"""The action types the parser reads from a code block; each is offered as its call (`prompts/action_space.json`)."""

LEVELS = ("l1", "l2", "l3")
"""OpenCUA's chain-of-thought levels: Action only; Thought and Action; Observation, Thought and Action."""
OSWORLD_PROMPTS = ("l2-osworld",)
"""The prompts OSWorld's agent sends (`system_l2_osworld.txt`: its rebound `SYSTEM_PROMPT_V1_L2`, L2's format)."""


class OpenCUAAdapter(Adapter):
    """OpenCUA-7B/32B asked with the system prompt of its training data (`prompts/opencua/system_<level>.txt`)."""

    name = "opencua"
    constrain_by_default = False

    def __init__(self, level: str = "l2", max_statements: int = parse_opencua.MAX_STATEMENTS):
        if level not in LEVELS + OSWORLD_PROMPTS:
            raise ValueError(f"OpenCUA has no CoT level {level!r} (known: {', '.join(LEVELS + OSWORLD_PROMPTS)})")
        if max_statements < 1:
            raise ValueError(f"max_statements must be at least 1, got {max_statements}")
        self.level = level
        self.max_statements = max_statements
        """Most statements one code block may hold (the parser's `MAX_STATEMENTS` by default)."""

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return FILES.text(f"system_{self.level.replace('-', '_')}.txt")  # exactly as stored: no coordinate hint

    def action_space(self, ctx: DecisionContext) -> str | None:
        types = [t for t in SUPPORTED_TYPES if t in ctx.action_types] or ["wait", "finish"]
        calls = json.loads(FILES.text("action_space.json"))  # Conway's own lines, one per action type
        return "\n".join(f"- {calls[t]}" for t in types)

    def request_text(self) -> str:
        """The closing line of OpenCUA's instruction template (after its `# Task Instruction:` block)."""
        return FILES.text("instruction.txt").split("\n\n", 1)[1].strip()

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As `OpenCUAAgent.predict` lays it out (action_history): system, older steps folded into one assistant
        text, the newest after their screenshot, then the current screenshot and the instruction template with
        Conway's parts as the task instruction."""
        return folded_layout(slots, past, _step, FILES.text("instruction.txt"))

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_opencua.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size,
                                   max_statements=self.max_statements)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec(grammar=opencua_grammar(action_types, convention=convention, sent_size=sent_size,
                                                      captured_size=captured_size))


def _step(p: Past) -> str:
    """A past step as the agent replays it: `# Step N:` and the answer's own `## Action:` section."""
    return f"# Step {p.turn.number}:\n## Action:\n{opencua_action(p.turn.answer)}\n"
