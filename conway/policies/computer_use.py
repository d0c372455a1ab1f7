"""What the `computer_use` tool families share (Qwen3-VL, Qwen2.5-VL): the tool, answered in ``<tool_call>`` blocks.

Both families send the cookbook's `computer_use` tool in their system turn (or as `tools`, when the server renders
it: `policy.tool_schema`), list no action space of Conway's, close the user turn with the same request line, lay
out OSWorld's Qwen conversation (`conversation.qwen_layout`), read answers with Qwen3-VL's parser (`families/qwen3vl/parse.py`) and offer no
grammar. `ComputerUseAdapter` writes that once; a family names its prompt folder (`files`), the line that keeps an
older step, and how its system turn wraps the tool.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import conway.policies.families.qwen3vl.parse as parse_qwen3vl
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, qwen_layout
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["TOOL_ACTIONS", "ComputerUseAdapter", "openai_tool", "tool_record"]

TOOL_ACTIONS: dict[str, tuple[str, ...]] = {
    "key": ("key", "hotkey"), "type": ("type",), "mouse_move": ("move",), "left_click": ("click",),
    "left_click_drag": ("drag",), "right_click": ("right_click", "click"), "middle_click": ("click",),
    "double_click": ("double_click",), "triple_click": ("triple_click",), "scroll": ("scroll",),
    "hscroll": ("scroll",), "wait": ("wait",), "terminate": ("finish",), "answer": ("finish",),
}
"""Each tool action -> the Conway action types that carry it out (offered when one of them is available); the
Qwen2.5-VL tool's actions are a subset of these."""


def tool_record(tool: dict[str, Any], action_types: list[str] | None, sent_size: Size,
                convention: Convention) -> dict[str, Any]:
    """The stored tool record with the image size filled in and its actions limited to those `action_types` can
    carry out."""
    fn = tool["function"]
    # pixels: the image's size; a grid: the 1000x1000 screen OSWorld's Qwen3-VL agent states
    w, h = sent_size if Convention(convention).rule.pixels else (1000, 1000)
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


class ComputerUseAdapter(Adapter):
    """An adapter for a family trained on the `computer_use` tool; a subclass sets `name`, `files` (its prompt
    folder, holding `computer_use.json` and `instruction.txt`), `action_line`, and writes
    `system_turn` and `request_system`."""

    name: str
    files: PromptFolder
    """The family's stored prompt files (`PromptFolder.of(__file__)` in its adapter)."""
    action_line: Callable[[str], str]
    """How the family's agent keeps an older answer in "Previous actions" (a staticmethod)."""
    constrain_by_default = False

    def tool(self, action_types: list[str] | None, sent_size: Size, convention: Convention) -> dict[str, Any]:
        """The family's stored tool, filled in for this image (`tool_record`)."""
        return tool_record(json.loads(self.files.text("computer_use.json")), action_types, sent_size,
                           convention)

    def system_turn(self, tool: dict[str, Any]) -> str:
        """The system turn that carries `tool` (the family's own template around it)."""
        raise NotImplementedError

    def request_system(self) -> str:
        """The system prompt sent beside `tools` when the server renders the tool itself."""
        raise NotImplementedError

    def instructions(self, action_types: list[str] | None, sent_size: Size, convention: Convention) -> str:
        return self.system_turn(self.tool(action_types, sent_size, convention))

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the tool in the system prompt lists the actions available; an empty part is left out

    def request_tools(self, action_types: list[str], sent_size: Size, convention: Convention
                      ) -> tuple[str, list[dict[str, Any]]]:
        """(system prompt, `tools`) when the server renders the tool (`policy.tool_schema`)."""
        return self.request_system(), [openai_tool(self.tool(action_types, sent_size, convention))]

    def request_text(self) -> str:
        """The first line of the family's instruction template (OSWorld's Qwen agents' `instruction_prompt`)."""
        return self.files.text("instruction.txt").strip().split("\n\n", 1)[0]

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As OSWorld's Qwen agents' `predict` lays it out (`conversation.qwen_layout`): the family's instruction
        template, older steps by its `action_line`."""
        return qwen_layout(slots, past, self.files.text("instruction.txt"), self.action_line)

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_qwen3vl.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # no grammar: the tool-call text is left free, as the model was trained
