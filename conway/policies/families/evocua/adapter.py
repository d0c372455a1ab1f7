"""The EvoCUA adapters: S2 (the default) asks through its `computer_use` tool, S1 for `## Action` / `## Code` answers.

Both send what OSWorld's `EvoCUAAgent` sends at `scripts/python/run_multienv_evocua.py`'s defaults, with its prompts
kept exactly in `prompts/` (`SOURCES.md`):

- S2 (`_predict_s2`): the system turn is `S2_SYSTEM_PROMPT` around `json.dumps` of the tool (`build_s2_tools_def`,
  the resolution line "1000x1000" for the 0..999 grid, the image's size for `policy.convention=absolute`); the
  conversation is the one OSWorld's Qwen agents share (`conversation.qwen_layout`): the newest answers after their
  screenshots, the first with the instruction and the older steps' `Action:` lines; then the current screenshot.
- S1 (`_predict_s1`): `S1_SYSTEM_PROMPT` with the runner's VM password, `# Step N:` + `## Action:` turns (the
  newest after their screenshot, older ones folded into one assistant text, as OpenCUA's), then the screenshot and
  `S1_INSTRUTION_TEMPLATE`. Its coordinates are pixels of the Qwen2.5-VL smart-resized screen (`--coordinate_type
  qwen25`, the only one S1 takes), so its preset (`evocua-s1`) sets `convention: absolute`.
"""

from __future__ import annotations

import json
from typing import Any

import conway.policies.families.evocua.parse as parse_evocua
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.computer_use import ComputerUseAdapter, openai_tool
from conway.policies.conversation import Past, Slots, folded_layout
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "OSWORLD_PASSWORD", "EvoCUAS1Adapter", "EvoCUAS2Adapter"]

FILES = PromptFolder.of(__file__)
"""EvoCUA's prompt files, kept exactly (`prompts/SOURCES.md`)."""

OSWORLD_PASSWORD = "osworld-public-evaluation"
"""`run_multienv_evocua.py --password`'s default, which S1's system prompt states."""


class EvoCUAS2Adapter(ComputerUseAdapter):
    """EvoCUA S2: `Action:` and one `<tool_call>` of its own `computer_use` tool (16 actions, held keys included)."""

    name = "evocua"
    files = FILES
    action_line = staticmethod(parse_evocua.s2_action_line)

    def tool(self, action_types: list[str] | None, sent_size: Size, convention: Convention) -> dict[str, Any]:
        """`build_s2_tools_def` as the agent calls it: every action (the agent offers them all), the resolution line
        of the coordinate type."""
        tool = json.loads(FILES.text("computer_use.json"))
        w, h = sent_size if Convention(convention).rule.pixels else (1000, 1000)
        fn = tool["function"]
        fn["description"] = fn["description"].replace("{resolution_info}", f"* The screen's resolution is {w}x{h}.")
        return tool

    def system_turn(self, tool: dict[str, Any]) -> str:
        return FILES.text("s2_system.txt").replace("{tools_xml}", json.dumps(tool))

    def request_system(self) -> str:
        """From the agent's `# Response format` on (the server's chat template writes its own `# Tools` block)."""
        return "# Response format" + FILES.text("s2_system.txt").split("# Response format", 1)[1]

    def request_tools(self, action_types: list[str], sent_size: Size, convention: Convention
                      ) -> tuple[str, list[dict[str, Any]]]:
        return self.request_system(), [openai_tool(self.tool(action_types, sent_size, convention))]

    def request_text(self) -> str:
        return FILES.text("s2_instruction.txt").strip().split("\n\n", 1)[0]

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        from conway.policies.conversation import qwen_layout
        return qwen_layout(slots, past, FILES.text("s2_instruction.txt"), self.action_line)

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_evocua.parse_s2(text, convention=convention, sent_size=sent_size, captured_size=captured_size)


class EvoCUAS1Adapter(Adapter):
    """EvoCUA S1: `## Thought` / `## Action` / `## Code` with pyautogui code, OpenCUA's conversation."""

    name = "evocua"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return FILES.text("s1_system.txt").replace("{password}", OSWORLD_PASSWORD)

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the system prompt says the answer's form; an empty part is left out

    def request_text(self) -> str:
        return FILES.text("s1_instruction.txt").split("\n\n", 1)[1].strip()

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As `_predict_s1` lays it out: system (a string), the older steps folded into one assistant text, the newest
        after their screenshot, then the screenshot and the instruction template."""
        return folded_layout(slots, past, _s1_step, FILES.text("s1_instruction.txt"))

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_evocua.parse_s1(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec()  # free text, as the agent asks


def _s1_step(p: Past) -> str:
    """`S1_STEP_TEMPLATE` + `S1_ACTION_HISTORY_TEMPLATE` of a past answer."""
    return f"# Step {p.turn.number}:\n## Action:\n{parse_evocua.s1_action(p.turn.answer)}\n"
