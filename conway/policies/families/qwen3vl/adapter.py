"""The Qwen3-VL adapter: the `computer_use` tool, answered in ``<tool_call>`` blocks.

The system prompt is the one OSWorld's Qwen3-VL agent sends (its `# Tools` block holding the
cookbook's `computer_use` tool, then the response format), kept as data in
`prompts/` with its sources. Coordinates: Qwen3-VL's 0..999 grid
(`Convention.RELATIVE999`, the tool then says the screen is 1000x1000, as OSWorld's agent does), or
pixels of the image sent with `policy.convention=absolute`. Read by its `parse.py` (JSON only, never
evaluated). Free text: no grammar is offered. What it shares with Qwen2.5-VL: `computer_use.ComputerUseAdapter`.
"""

from __future__ import annotations

import json
from typing import Any

from conway.geometry import Convention, Size
from conway.policies.computer_use import ComputerUseAdapter
from conway.policies.conversation import qwen_action_line
from conway.policies.prompt_files import PromptFolder

__all__ = ["FILES", "Qwen3VLAdapter", "system_prompt"]

FILES = PromptFolder.of(__file__)
"""The Qwen3-VL prompt files, kept exactly (`prompts/SOURCES.md`)."""


class Qwen3VLAdapter(ComputerUseAdapter):
    name = "qwen3vl"
    files = FILES
    action_line = staticmethod(qwen_action_line)  # past steps by their `Action:` line, as `Qwen3VLAgent.predict`

    def system_turn(self, tool: dict[str, Any]) -> str:
        """OSWorld's Qwen3-VL system prompt around the tool."""
        template = FILES.text("system.txt")
        return template.replace("{tools}", json.dumps(tool))  # json.dumps' own separators, as the agent sends it

    def request_system(self) -> str:
        """The agent's prompt from its `# Response format` on (the server's chat template writes its own `# Tools`
        block)."""
        return "# Response format" + FILES.text("system.txt").split("# Response format", 1)[1]


def system_prompt(action_types: list[str] | None, sent_size: Size, convention: Convention) -> str:
    """OSWorld's Qwen3-VL system prompt; the tool's actions limited to those `action_types` can carry out."""
    return Qwen3VLAdapter().instructions(action_types, sent_size, convention)
