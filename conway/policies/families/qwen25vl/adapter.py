"""The Qwen2.5-VL adapter: the cookbook's `computer_use` tool, answered in ``<tool_call>`` blocks.

Qwen2.5-VL's computer-use cookbook (QwenLM/Qwen2.5-VL `cookbooks/computer_use.ipynb`) renders its
`ComputerUse` tool with Qwen-Agent's Nous function-call template into the system turn; the model answers
``<tool_call>{"name": "computer_use", "arguments": {…}}</tool_call>`` with `coordinate` in pixels of the
smart-resized image (28-px rule), whose size the tool's description states. Both are kept as data in
`prompts/`. The answer format is Qwen3-VL's, so Qwen3-VL's parser (`families/qwen3vl/parse.py`) reads it (JSON
only, never evaluated; the tool's actions are a subset of Qwen3-VL's); only the prompt and the coordinate
space differ (the shared part: `computer_use.ComputerUseAdapter`). The conversation around it is OSWorld's
`mm_agents/qwen25vl_agent.py`'s (`messages`).
"""

from __future__ import annotations

import json
from typing import Any

from conway.geometry import Convention, Size
from conway.policies.computer_use import ComputerUseAdapter
from conway.policies.conversation import qwen25_action_line
from conway.policies.prompt_files import PromptFolder

__all__ = ["FILES", "Qwen25VLAdapter", "system_prompt"]

FILES = PromptFolder.of(__file__)
"""The Qwen2.5-VL prompt files, kept exactly (`prompts/SOURCES.md`)."""


class Qwen25VLAdapter(ComputerUseAdapter):
    name = "qwen25vl"
    files = FILES
    action_line = staticmethod(qwen25_action_line)  # older steps by the line `Qwen25VLAgent.parse_response` keeps

    def system_turn(self, tool: dict[str, Any]) -> str:
        """The cookbook's system turn: its system message, then Qwen-Agent's function-call template with the tool."""
        template = FILES.text("fncall_template.txt")
        return FILES.text("system.txt") + "\n\n" + template.replace("{tool_descs}", json.dumps(tool, ensure_ascii=False))

    def request_system(self) -> str:
        """The cookbook's system message, which Qwen2.5-VL's chat template extends with the same Nous function-call
        block."""
        return FILES.text("system.txt")


def system_prompt(action_types: list[str] | None, sent_size: Size, convention: Convention) -> str:
    """The cookbook's system turn; the tool's actions limited to those `action_types` can carry out."""
    return Qwen25VLAdapter().instructions(action_types, sent_size, convention)
