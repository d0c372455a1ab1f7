"""The UI-TARS adapter: ``Thought: …`` / ``Action: click(start_box='(x,y)')`` answers.

Asked with the prompt OSWorld's UI-TARS-1.5 agent sends (`mm_agents/uitars15_v1.py`, `qwen25vl_normal`), or
UI-TARS 1.0's (`mm_agents/uitars_agent.py`: the same template with the call-user action space; `prompt="uitars-1.0"`),
kept exactly in `prompts/`. Read by its `parse.py` (a small grammar; never `eval`). Coordinates: UI-TARS-1.5
answers absolute pixels of the smart-resized image (the default); UI-TARS 1.0
answers 0-1000 (`policy.convention=relative1000`). Free text by default; with
`policy.structured_output=grammar` a GBNF grammar holds it to the format.
"""

from __future__ import annotations

from typing import Any

import conway.policies.families.uitars.parse as parse_uitars
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, add_box_tokens, image, text
from conway.policies.grammar import uitars_grammar
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "UITarsAdapter", "LANGUAGE", "PROMPTS", "system_prompt", "user_prompt"]

FILES = PromptFolder.of(__file__)
"""The UI-TARS prompt files, kept exactly (`prompts/SOURCES.md`)."""

LANGUAGE = "Chinese"
"""The `{language}` of the prompt's Note, as OSWorld's runners fill it in (`run_multienv_uitars15_v1.py`
runtime_conf, `uitars_agent.py`'s default); English is the opt-in deviation `english_thoughts`."""


PROMPTS = {"uitars-1.5": "action_space_normal.txt", "uitars-1.0": "action_space_call_user.txt"}
"""Each UI-TARS prompt (`policy.prompt`) -> the action space OSWorld's agent for that model fills the template with:
`uitars15_v1.py` (qwen25vl_normal) for UI-TARS-1.5, `uitars_agent.py` (qwen2vl_user) for UI-TARS 1.0."""


def system_prompt(prompt: str = "uitars-1.5", language: str = LANGUAGE) -> str:
    """OSWorld's UI-TARS prompt for `prompt`, exactly, up to its `## User Instruction`: Conway's goals and context
    follow it instead of one task line."""
    template = FILES.text("user_thought.txt")
    head = template.split("## User Instruction", 1)[0]
    return head.replace("{action_space}", FILES.text(PROMPTS[prompt])).replace("{language}", language)


def user_prompt(instruction: str, prompt: str = "uitars-1.5", language: str = LANGUAGE) -> str:
    """The agent's first user turn: its whole prompt (`prompt`'s action space), `{instruction}` filled with Conway's
    task text."""
    return FILES.text("user_thought.txt").replace("{action_space}", FILES.text(
        PROMPTS[prompt])).replace("{language}", language).replace("{instruction}", instruction)


class UITarsAdapter(Adapter):
    name = "uitars"
    constrain_by_default = False

    def __init__(self, prompt: str = "uitars-1.5", language: str = LANGUAGE):
        if prompt not in PROMPTS:
            raise ValueError(f"UI-TARS has no prompt {prompt!r} (known: {', '.join(PROMPTS)})")
        self.prompt = prompt
        self.language = language
        """The `{language}` the thoughts are asked in (the runner's Chinese; English: `english_thoughts`)."""

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return system_prompt(self.prompt, self.language)  # as trained: the action space is in it, no coordinate hint is added (sent by
        # `messages` as the first user turn, the system turn being the agent's one line)

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the trained prompt holds the action space; an empty part is left out

    def request_text(self) -> str:
        return FILES.text("request.txt")

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        """As `UITARSAgent.predict` lays it out: its system message (`system.txt`), the prompt, past answers (the newest after their screenshot),
        the current screenshot. UI-TARS-1.5's agent (`uitars15_v1.py`) replays an answer with box tokens added, as a
        text part; UI-TARS 1.0's (`uitars_agent.py`) replays it raw, as a string. Conway's per-cycle parts (only
        under their deviations) go in that last turn after the screenshot."""
        out: list[dict[str, Any]] = [{"role": "system", "content": [text(FILES.text("system.txt"))]},
                                     {"role": "user", "content": [text(user_prompt(slots.task, self.prompt,
                                                                                   self.language))]}]
        for p in past:
            if p.image_url is not None:
                out.append({"role": "user", "content": [image(p.image_url)]})
            raw = self.prompt == "uitars-1.0"
            out.append({"role": "assistant",
                        "content": p.turn.answer if raw else [text(add_box_tokens(p.turn.answer))]})
        last = ([image(slots.image_url)] if slots.image_url else []) + ([text(slots.tail)] if slots.tail else [])
        out.append({"role": "user", "content": last or [text(self.request_text())]})
        return out

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_uitars.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec(grammar=uitars_grammar(action_types, convention=convention, sent_size=sent_size,
                                                     captured_size=captured_size))
