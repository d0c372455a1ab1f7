"""The Qwen2.5-VL adapter: the cookbook's `computer_use` tool, answered in ``<tool_call>`` blocks.

Qwen2.5-VL's computer-use cookbook (QwenLM/Qwen2.5-VL `cookbooks/computer_use.ipynb`) renders its
`ComputerUse` tool with Qwen-Agent's Nous function-call template into the system turn; the model answers
``<tool_call>{"name": "computer_use", "arguments": {…}}</tool_call>`` with `coordinate` in pixels of the
smart-resized image (28-px rule), whose size the tool's description states. Both are kept as data in
`conway/policies/prompts/qwen25vl/`. The answer format is Qwen3-VL's, so `parse_qwen3vl` reads it (JSON
only, never evaluated; the tool's actions are a subset of Qwen3-VL's); only the prompt and the coordinate
space differ. The conversation around it is OSWorld's `mm_agents/qwen25vl_agent.py`'s (`messages`).
"""

from __future__ import annotations

import json
from typing import Any

from conway.geometry import Convention, Size
from conway.policies import parse_qwen3vl
from conway.policies.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, qwen25_action_line, qwen_layout
from conway.policies.parsed import ParsedOutput
from conway.policies.prompts import prompt_text
from conway.policies.qwen3vl import openai_tool, tool_record
from conway.protocols import DecisionContext

__all__ = ["Qwen25VLAdapter", "SYSTEM", "system_prompt"]

SYSTEM = "You are a helpful assistant."
"""The cookbook's system message, which Qwen-Agent's template extends with the tool."""


def system_prompt(action_types: list[str] | None, sent_size: Size, convention: Convention) -> str:
    """The cookbook's system turn; the tool's actions limited to those `action_types` can carry out."""
    tool = tool_record(json.loads(prompt_text("qwen25vl/computer_use.json")), action_types, sent_size, convention)
    template = prompt_text("qwen25vl/fncall_template.txt")
    return SYSTEM + "\n\n" + template.replace("{tool_descs}", json.dumps(tool, ensure_ascii=False))


class Qwen25VLAdapter:
    name = "qwen25vl"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return system_prompt(action_types, sent_size, convention)

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the tool in the system prompt lists the actions available; an empty part is left out

    def request_tools(self, action_types: list[str], sent_size: Size, convention: Convention
                      ) -> tuple[str, list[dict[str, Any]]]:
        """(system prompt, `tools`) when the server renders the tool (`policy.tool_schema`): the cookbook's system
        message, which Qwen2.5-VL's chat template extends with the same Nous function-call block."""
        tool = tool_record(json.loads(prompt_text("qwen25vl/computer_use.json")), action_types, sent_size, convention)
        return SYSTEM, [openai_tool(tool)]

    def request_text(self) -> str:
        return "Please generate the next move according to the UI screenshot, instruction and previous actions."

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As OSWorld's `Qwen25VLAgent.predict` lays it out (`conversation.qwen_layout`): its instruction template,
        older steps by the line its `parse_response` keeps."""
        return qwen_layout(slots, past, prompt_text("qwen25vl/instruction.txt"), qwen25_action_line)

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_qwen3vl.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # free tool-call text, as the model was trained
