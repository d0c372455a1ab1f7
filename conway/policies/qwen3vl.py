"""The Qwen3-VL adapter: the `computer_use` tool, answered in ``<tool_call>`` blocks.

The system prompt is the one OSWorld's Qwen3-VL agent sends (its `# Tools` block holding the
cookbook's `computer_use` tool, then the response format), kept as data in
`conway/policies/prompts/qwen3vl/` with its sources. Coordinates: Qwen3-VL's 0..999 grid
(`Convention.RELATIVE999`, the tool then says the screen is 1000x1000, as OSWorld's agent does), or
pixels of the image sent with `policy.convention=absolute`. Read by `parse_qwen3vl` (JSON only, never
evaluated). Free text: no grammar is offered.
"""

from __future__ import annotations

import json
from typing import Any

from conway.geometry import Convention, Size
from conway.policies import parse_qwen3vl
from conway.policies.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, qwen_action_line, qwen_layout
from conway.policies.parsed import ParsedOutput
from conway.policies.prompts import prompt_text
from conway.protocols import DecisionContext

__all__ = ["Qwen3VLAdapter", "TOOL_ACTIONS", "openai_tool", "system_prompt", "tool_record"]

TOOL_ACTIONS: dict[str, tuple[str, ...]] = {
    "key": ("key", "hotkey"), "type": ("type",), "mouse_move": ("move",), "left_click": ("click",),
    "left_click_drag": ("drag",), "right_click": ("right_click", "click"), "middle_click": ("click",),
    "double_click": ("double_click",), "triple_click": ("triple_click",), "scroll": ("scroll",),
    "hscroll": ("scroll",), "wait": ("wait",), "terminate": ("finish",), "answer": ("finish",),
}
"""Each tool action -> the Conway action types that carry it out (offered when one of them is available)."""


def _data() -> tuple[dict[str, Any], str]:
    return json.loads(prompt_text("qwen3vl/computer_use.json")), prompt_text("qwen3vl/system.txt")


def tool_record(tool: dict[str, Any], action_types: list[str] | None, sent_size: Size,
                convention: Convention) -> dict[str, Any]:
    """The stored tool record with the image size filled in and its actions limited to those `action_types` can
    carry out (the Qwen2.5-VL adapter's too)."""
    fn = tool["function"]
    w, h = sent_size if convention in (Convention.ABSOLUTE, Convention.SCREEN) else (1000, 1000)
    fn["description"] = fn["description"].replace("{display_width_px}x{display_height_px}", f"{w}x{h}")
    if action_types is not None:
        action = fn["parameters"]["properties"]["action"]
        action["enum"] = [a for a in action["enum"]
                          if a in ("wait", "terminate") or set(TOOL_ACTIONS[a]) & set(action_types)]
    return tool


def openai_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A stored (qwen-agent) tool record as an OpenAI `tools` entry: its name, description and parameters, the
    fields a chat template renders (`name_for_human` and `args_format` are qwen-agent's own)."""
    fn = tool["function"]
    return {"type": "function", "function": {k: fn[k] for k in ("name", "description", "parameters")}}


def system_prompt(action_types: list[str] | None, sent_size: Size, convention: Convention) -> str:
    """OSWorld's Qwen3-VL system prompt; the tool's actions limited to those `action_types` can carry out."""
    tool, template = _data()
    tool = tool_record(tool, action_types, sent_size, convention)
    return template.replace("{tools}", json.dumps(tool))  # json.dumps' own separators, as the agent sends it


class Qwen3VLAdapter:
    name = "qwen3vl"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return system_prompt(action_types, sent_size, convention)

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the tool in the system prompt lists the actions available; an empty part is left out

    def request_tools(self, action_types: list[str], sent_size: Size, convention: Convention
                      ) -> tuple[str, list[dict[str, Any]]]:
        """(system prompt, `tools`) when the server renders the tool (`policy.tool_schema`): the agent's prompt from its
        `# Response format` on (the server's chat template writes its own `# Tools` block), and the tool."""
        tool, template = _data()
        return ("# Response format" + template.split("# Response format", 1)[1],
                [openai_tool(tool_record(tool, action_types, sent_size, convention))])

    def request_text(self) -> str:
        return "Please generate the next move according to the UI screenshot, instruction and previous actions."

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As `Qwen3VLAgent.predict` lays it out (`conversation.qwen_layout`), past steps by their `Action:` line."""
        return qwen_layout(slots, past, prompt_text("qwen3vl/instruction.txt"), qwen_action_line)

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_qwen3vl.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # no grammar: the tool-call text is left free, as the model was trained
