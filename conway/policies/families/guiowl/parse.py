"""Parse GUI-Owl 1.5's answers: `Action:` and `<tool_call>` blocks calling `computer_use`.

GUI-Owl 1.5 (OSWorld ``mm_agents/owl15_agent.py``, ljxpython/OSWorldUse commit
b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6, ``parse_qwen3vl_action_fncall``)::

    Action: Open the Files application from the dock.
    <tool_call>
    {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [18, 351]}}
    </tool_call>

Points are on a 0..1000 grid (`Convention.RELATIVE1000`: the agent scales x / 1000 * width). The blocks are read
by Qwen3-VL's parser (`families/qwen3vl/parse.py`: JSON only, never evaluated); ``type`` may carry the agent's
``clear`` / ``enter`` flags (0 or 1): ``clear`` 1 is refused (Conway's TypeText does not select and delete first),
``enter`` 1 becomes the text with a newline. `action_line` is what the agent keeps of an answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

import conway.policies.families.qwen3vl.parse as parse_qwen3vl
from conway.geometry import Size
from conway.policies.parsed import ParsedOutput, problem

__all__ = ["action_line", "parse"]

_TYPE_FLAGS = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def parse(text: str, *, convention: Any, sent_size: Size, captured_size: Size) -> ParsedOutput:
    """One GUI-Owl answer -> its actions; never raises."""
    if isinstance(text, str) and ('"clear"' in text or '"enter"' in text):
        fixed = _type_flags(text)
        if isinstance(fixed, ParsedOutput):
            return fixed
        text = fixed
    return parse_qwen3vl.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)


def _type_flags(text: str) -> str | ParsedOutput:
    """`type` calls with `clear` / `enter` as Conway's TypeText takes them (enter: a newline), or the refusal."""
    out = []
    last = 0
    for found in _TYPE_FLAGS.finditer(text):
        try:
            call = json.loads(found.group(1))
            args = call["arguments"]
        except (ValueError, KeyError, TypeError):
            continue  # the parser names what is wrong with it
        if not isinstance(args, dict) or args.get("action") != "type":
            continue
        clear, enter = args.pop("clear", 0), args.pop("enter", 0)
        if clear not in (0, 1, False, True) or enter not in (0, 1, False, True):
            return ParsedOutput(None, [problem("type: clear and enter must be 0 or 1", found.group(0))])
        if clear:
            return ParsedOutput(None, [problem("type with clear=1 (select and delete first) has no Conway action; "
                                               "answer with the keys to clear, then type", found.group(0))])
        if enter and isinstance(args.get("text"), str):
            args["text"] += "\n"
        out.append(text[last:found.start(1)] + "\n" + json.dumps(call, ensure_ascii=False) + "\n")
        last = found.end(1)
    return "".join(out) + text[last:]


def action_line(answer: str) -> str:
    """What `Owl15Agent.predict` keeps of an answer (`history_conclusion`): the text before the first `<tool_call>`,
    after its last `\\nAction:`, stripped."""
    return answer.split("<tool_call>")[0].split("\nAction:")[-1].strip()
