"""Parse EvoCUA's answers: S2 `<tool_call>` blocks calling `computer_use`, S1 `## Action` / `## Code` blocks.

EvoCUA (OSWorld ``mm_agents/evocua/evocua_agent.py``, ljxpython/OSWorldUse commit
b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6). S2 (``_parse_response_s2``) answers as Qwen3-VL does::

    Action: Click the Display entry in the sidebar.
    <tool_call>
    {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [500, 500]}}
    </tool_call>

and is read by Qwen3-VL's parser (`families/qwen3vl/parse.py`: JSON only, never evaluated). EvoCUA's tool also
offers ``key_down`` / ``key_up`` (held keys); Conway's action schema has no held key, so an answer using them is
refused, naming the action. S1 (``_parse_response_s1``) answers ``## Thought`` / ``## Action`` / ``## Code`` with
pyautogui calls and ``computer.wait`` / ``computer.terminate``: OpenCUA's parser (an AST allowlist, never run).

`s2_action_line` and `s1_action` are what the agent keeps of a past answer.
"""

from __future__ import annotations

import re
from typing import Any

import conway.policies.families.opencua.parse as parse_opencua
import conway.policies.families.qwen3vl.parse as parse_qwen3vl
from conway.geometry import Size
from conway.policies.parsed import ParsedOutput

__all__ = ["parse_s1", "parse_s2", "s1_action", "s2_action_line"]


def parse_s2(text: str, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """One S2 answer (`Action:` and `<tool_call>` blocks) -> its actions; never raises."""
    return parse_qwen3vl.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)


def parse_s1(text: str, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """One S1 answer (`## Action` / `## Code`) -> its actions; never raises."""
    return parse_opencua.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)


_CALL = re.compile(r'"action"\s*:\s*"([a-z_]+)"')
_KEYS = re.compile(r'"keys"\s*:\s*\[([^\]]*)\]')
_STATUS = re.compile(r'"status"\s*:\s*"([a-z]+)"')
_PYAUTOGUI = {"left_click": "click", "click": "click", "right_click": "rightClick", "middle_click": "middleClick",
              "double_click": "doubleClick", "triple_click": "tripleClick", "type": "press", "key_down": "keyDown",
              "key_up": "keyUp", "scroll": "scroll", "wait": "wait", "mouse_move": "moveTo",
              "left_click_drag": "dragTo"}
"""S2 tool action -> the name `_parse_response_s2` writes in "Performing <name> action" (its pyautogui function's,
or its special code lower-cased)."""


def s2_action_line(answer: str) -> str:
    """What `_parse_response_s2` keeps of an answer for "Previous actions": the text after `Action:` on the first
    line that opens with it; without one, `Performing <name> action` of its first call; "" when neither."""
    for line in answer.split("\n"):
        line = line.strip()
        if line.lower().startswith("action:"):
            return line.split("Action:")[-1].strip()
    call = _CALL.search(answer)
    if call is None or call.group(1) not in (*_PYAUTOGUI, "key", "terminate"):
        return ""
    name = call.group(1)
    if name == "key":
        keys = _KEYS.search(answer)
        name = "hotkey" if keys and "," in keys.group(1) else "press"
    elif name == "terminate":
        status = _STATUS.search(answer)
        name = "fail" if status and status.group(1) == "failure" else "done"
    else:
        name = _PYAUTOGUI[name]
    return f"Performing {name} action"


_S1_ACTION = re.compile(r"#{1,2}\s*Action\s*:?[\n\r]+(.*?)(?=^#{1,2}\s|$)", re.DOTALL | re.MULTILINE)


def s1_action(answer: str) -> str:
    """What `_parse_response_s1` keeps of an answer (`cot['action']`): its `## Action` section up to the end of that
    line (the pattern's `$` ends it there), stripped; "" when there is none."""
    found = _S1_ACTION.search(answer)
    return found.group(1).strip() if found else ""
