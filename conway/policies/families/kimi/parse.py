"""Parse Kimi's answers: `## Thought` / `## Action` / `## Code` with pyautogui calls, never run.

Kimi K2.5 as OSWorld's ``mm_agents/kimi/kimi_agent.py`` reads it (``parse_response_to_cot_and_action``,
ljxpython/OSWorldUse commit b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6): the last fenced code block holds
pyautogui calls or ``computer.wait`` / ``computer.terminate``; points are fractions of the screen (0..1) at the
runner's ``--coordinate_type relative``. The code is read by OpenCUA's parser (an AST allowlist). The agent also
takes a point above 1 as screen pixels; Conway refuses it (out of the 0..1 bounds), naming the bounds.

`thought` and `action` are the sections the agent keeps of a past answer (its history template).
"""

from __future__ import annotations

import re
from typing import Any

import conway.policies.families.opencua.parse as parse_opencua
from conway.geometry import Size
from conway.policies.parsed import ParsedOutput

__all__ = ["action", "parse", "thought"]


def parse(text: str, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """One Kimi answer -> its actions; never raises."""
    return parse_opencua.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)


_THOUGHT = re.compile(r"^##\s*Thought\s*:?[\n\r]+(.*?)(?=^##\s*Action:|^##|\Z)", re.DOTALL | re.MULTILINE)
_ACTION = re.compile(r"^\s*##\s*Action\s*:?\s*[\n\r]+(.*?)(?=^\s*##|\Z)", re.DOTALL | re.MULTILINE)


def thought(answer: str) -> str:
    """The answer's `## Thought` section as the agent keeps it (non-thinking mode); "" when there is none."""
    found = _THOUGHT.search(answer.lstrip())
    return found.group(1).strip() if found else ""


def action(answer: str) -> str | None:
    """The answer's `## Action` section as the agent keeps it; None when there is none (the agent then writes
    "None" into its history template)."""
    found = _ACTION.search(answer.lstrip())
    return found.group(1).strip() if found else None
