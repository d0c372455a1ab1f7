"""The UI-TARS adapter: ``Thought: …`` / ``Action: click(start_box='(x,y)')`` answers.

Read by `parse_uitars` (a small grammar; never `eval`). Coordinates: UI-TARS-1.5
answers absolute pixels of the smart-resized image (the default); UI-TARS 1.0
answers 0-1000 (`policy.convention=relative1000`). Free text by default; with
`policy.structured_output=grammar` a GBNF grammar holds it to the format.
"""

from __future__ import annotations

from conway.geometry import Convention, Size
from conway.policies import parse_uitars
from conway.policies.backend import StructuredSpec
from conway.policies.grammar import uitars_grammar
from conway.policies.parsed import ParsedOutput
from conway.protocols import DecisionContext

__all__ = ["UITarsAdapter", "SUPPORTED_TYPES"]

SUPPORTED_TYPES = ("click", "double_click", "right_click", "drag", "hotkey", "key", "type", "scroll", "wait",
                   "finish")

_CALLS = {
    "click": "click(start_box='(x1,y1)')",
    "double_click": "left_double(start_box='(x1,y1)')",
    "right_click": "right_single(start_box='(x1,y1)')",
    "drag": "drag(start_box='(x1,y1)', end_box='(x2,y2)')",
    "hotkey": "hotkey(key='ctrl c')  # keys lower-case, separated by a space; one key presses it alone",
    "type": "type(content='xxx')  # escape ' and \\n; end with \\n to submit",
    "scroll": "scroll(start_box='(x1,y1)', direction='down or up or right or left')",
    "wait": "wait()  # sleep 5 s and look again",
    "finish": "finished(content='xxx')  # the task is done; say what was achieved",
}


class UITarsAdapter:
    name = "uitars"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        w, h = sent_size
        if convention is Convention.RELATIVE1000:
            coords = "Coordinates are 0-1000 relative to the screenshot's width and height."
        elif convention is Convention.ABSOLUTE:
            coords = f"Coordinates are pixels of the screenshot as shown ({w}x{h})."
        else:
            coords = f"Coordinates use the {convention.value} convention."
        return (
            "You are a GUI agent. You are given your goals and your action history, with a screenshot. "
            "You need to perform the next action to make progress.\n\n"
            "## Output Format\n```\nThought: ...\nAction: ...\n```\n\n"
            f"## Note\n- {coords}\n- Write a short plan in `Thought`, then one action from the action space."
        )

    def action_space(self, ctx: DecisionContext) -> str | None:
        seen: list[str] = []
        for t in SUPPORTED_TYPES:
            if t in ctx.action_types or t in ("wait", "finish"):
                call = _CALLS.get("hotkey" if t == "key" else t)
                if call and call not in seen:
                    seen.append(call)
        seen.append("call_user()  # ask the user for help when stuck")
        return "\n".join(seen)

    def request_text(self) -> str:
        return "Perform the next action according to the screenshot, the goals and the history."

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_uitars.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec(grammar=uitars_grammar(action_types, convention=convention, sent_size=sent_size,
                                                     captured_size=captured_size))
