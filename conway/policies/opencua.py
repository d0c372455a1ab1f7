"""The OpenCUA adapter: ``## Thought`` / ``## Action`` / ``## Code`` answers with pyautogui calls (up to 8 a step).

The code is read by `parse_opencua` (an AST allowlist; never executed).
Coordinates: absolute pixels of the smart-resized image for OpenCUA-7B/32B
(the default), relative 0-1 for the other variants (`policy.convention`).
Free text by default (the format the model was trained on); with
`policy.structured_output=grammar` a GBNF grammar holds it to the format.
"""

from __future__ import annotations

from conway.geometry import Convention, Size
from conway.policies import parse_opencua
from conway.policies.backend import StructuredSpec
from conway.policies.grammar import opencua_grammar
from conway.policies.parsed import ParsedOutput
from conway.protocols import DecisionContext

__all__ = ["OpenCUAAdapter", "SUPPORTED_TYPES"]

SUPPORTED_TYPES = ("click", "double_click", "triple_click", "right_click", "move", "drag", "type", "key",
                   "hotkey", "scroll", "wait", "finish")

_CALLS = {
    "click": "pyautogui.click(x=…, y=…)  # left click; button='right'/'middle' and clicks=2 also work",
    "double_click": "pyautogui.doubleClick(x=…, y=…)",
    "triple_click": "computer.triple_click(x=…, y=…)",
    "right_click": "pyautogui.rightClick(x=…, y=…)",
    "move": "pyautogui.moveTo(x=…, y=…)",
    "drag": "pyautogui.moveTo(x=…, y=…) then, on the next line, pyautogui.dragTo(x=…, y=…)  # a drag",
    "type": "pyautogui.write(message='text to type')",
    "key": "pyautogui.press('enter')",
    "hotkey": "pyautogui.hotkey('ctrl', 'c')",
    "scroll": "pyautogui.scroll(-5)  # negative scrolls down; pyautogui.hscroll(5) scrolls right",
    "wait": "computer.wait(seconds=5)",
    "finish": "computer.terminate(status='success', answer='…')  # or status='failure'",
}


class OpenCUAAdapter:
    name = "opencua"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        w, h = sent_size
        if convention is Convention.ABSOLUTE:
            coords = f"x and y are pixels of the screenshot as shown ({w}x{h}; x from the left, y from the top)"
        elif convention is Convention.RELATIVE:
            coords = "x and y are fractions 0..1 of the screenshot's width and height (0, 0 is the top-left)"
        else:
            coords = f"x and y are coordinates in the {convention.value} convention"
        return (
            "You are a GUI agent. You are given your goals, your previous steps and a screenshot of the "
            "screen, and you perform the next step with pyautogui actions.\n\n"
            "Answer in exactly this format:\n"
            "## Thought:\n<what you observe, what the goal needs next, and why>\n\n"
            "## Action:\n<the next step in one sentence>\n\n"
            "## Code:\n```python\n<one call from the action space per line, at most 8>\n```\n\n"
            f"In the code, {coords}. The code is never run as Python: each line, one call with literal "
            "arguments, is read and performed for you, in order."
        )

    def action_space(self, ctx: DecisionContext) -> str | None:
        types = [t for t in SUPPORTED_TYPES if t in ctx.action_types] or ["wait", "finish"]
        return "\n".join(f"- {_CALLS[t]}" for t in types)

    def request_text(self) -> str:
        return "Please generate the next move according to the screenshot, the goals and the previous steps."

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_opencua.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec(grammar=opencua_grammar(action_types, convention=convention, sent_size=sent_size,
                                                      captured_size=captured_size))
