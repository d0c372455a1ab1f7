"""A fixed 6-step episode for the history and forgery tests: its screenshots, answers, context parts, a recording
stand-in backend. (The official agents' request goldens use the 16-step episode of `scripts/build/golden_episode.py`.)"""

from __future__ import annotations

import io
import json

from PIL import Image

from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.protocols import ContextPart, Observation

__all__ = ["ANSWERS", "GROUNDING_ANSWERS", "Recording", "observation", "parts"]

SIZE = (1280, 800)
COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (200, 200, 30), (30, 200, 200), (200, 30, 200)]
"""The episode's six screenshots: one flat colour each, so an image's step is read back from its pixels."""

ANSWERS: dict[str, list[str]] = {
    "uitars": [
        "Thought: The Files icon is on the left.\nAction: click(start_box='(120,340)')",
        "Thought: A window opened; I type the name.\nAction: type(content='report\\n')",
        "Thought: Scroll down to the list.\nAction: scroll(start_box='(640,400)', direction='down')",
        "Thought: Drag the file to the folder.\nAction: drag(start_box='(300,420)', end_box='(900,420)')",
        "Thought: Save it.\nAction: hotkey(key='ctrl s')",
        "Thought: Wait for the dialog.\nAction: wait()",
    ],
    "opencua": [
        "## Thought:\nThe terminal is open.\n\n## Action:\nType the command and run it.\n\n## Code:\n```python\n"
        "pyautogui.write(message='stat')\npyautogui.press(keys=['enter'])\n```",
        "## Thought:\nThe Files icon.\n\n## Action:\nClick the Files icon.\n\n## Code:\n```python\n"
        "pyautogui.click(x=120, y=340)\n```",
        "## Thought:\nThe list is below.\n\n## Action:\nScroll down the list.\n\n## Code:\n```python\n"
        "pyautogui.moveTo(x=640, y=400)\npyautogui.scroll(-5)\n```",
        "## Thought:\nThe report file.\n\n## Action:\nDouble-click the report.\n\n## Code:\n```python\n"
        "pyautogui.doubleClick(x=300, y=420)\n```",
        "## Thought:\nSave.\n\n## Action:\nPress Ctrl+S.\n\n## Code:\n```python\npyautogui.hotkey('ctrl', 's')\n```",
        "## Thought:\nThe dialog is slow.\n\n## Action:\nWait for the dialog.\n\n## Code:\n```code\n"
        "computer.wait(seconds=5)\n```",
    ],
    "qwen3vl": [
        'Action: Click the Files icon.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
        '"coordinate": [94, 425]}}\n</tool_call>',
        'Action: Type the name.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "type", '
        '"text": "report"}}\n</tool_call>',
        'Action: Scroll down the list.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "scroll", '
        '"pixels": -5}}\n</tool_call>',
        'Action: Double-click the report.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": '
        '"double_click", "coordinate": [234, 525]}}\n</tool_call>',
        'Action: Save it.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", '
        '"s"]}}\n</tool_call>',
        'Action: Wait for the dialog.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", '
        '"time": 2}}\n</tool_call>',
    ],
    "qwen25vl": [
        'Action: Click the Files icon.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
        '"coordinate": [120, 340]}}\n</tool_call>',
        'I will type the name.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "type", '
        '"text": "report"}}\n</tool_call>',
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "scroll", "pixels": -5}}\n</tool_call>',
        'Action: Double-click the report.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": '
        '"double_click", "coordinate": [300, 420]}}\n</tool_call>',
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", "s"]}}\n</tool_call>',
        'Now I wait for the dialog.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", '
        '"time": 2}}\n</tool_call>',
    ],
}
"""Each family's scripted answers, one a step; every one holds a valid action, so Conway replays them all."""

GROUNDING_ANSWERS = {"gta1": ["(120,340)", "(300,420)"],
                     "holo": ['{"action": "click_absolute", "x": 120, "y": 340}',
                              '{"action": "click_absolute", "x": 300, "y": 420}']}
"""The grounding models' answers, one a step (each a click)."""


class Recording(Backend):
    """A STAND-IN backend: answers the episode's scripted answers and keeps the messages it was sent."""

    kind = "stub"
    model_id = "stand-in"

    def __init__(self, answers: list[str]):
        self.answers, self.sent = list(answers), []

    def structured_support(self):
        return []

    def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
        self.sent.append(json.loads(json.dumps(messages)))
        return ChatResult(text=self.answers[len(self.sent) - 1], reasoning=None, finish_reason="stop",
                          model=self.model_id, usage={})

    def close(self):
        pass


def observation(step: int) -> Observation:
    buf = io.BytesIO()
    Image.new("RGB", SIZE, COLOURS[step - 1]).save(buf, format="PNG")
    return Observation(png=buf.getvalue(), captured_size=SIZE, source="synthetic", content_hash=f"h{step}",
                       change_key=f"k{step}")


def parts() -> list[ContextPart]:
    return [ContextPart("constitution.md", "I am the owner's agent."), ContextPart("action space", "(json)"),
            ContextPart("goals.md", "File the report."), ContextPart("latest result", "")]
