"""What the families' trained conversations share: the slots Conway fills, the past turns, the content parts.

A family trained on a conversation lays it out in its adapter's `messages(slots, past)` (`adapter.py` in its
folder under `families/`), following its reference agent; the facts (history length, what is replayed,
the source) are its `Family.conversation`. `ModelPolicy` (`messages.py`) fills the slots from the loop's
context parts:

- `task`: what goes in the family's instruction slot, rendered as Conway always renders its parts: the
  constitution, the action space, the tool listings, the goals and memory (only changes at a goals edit or
  a memory refresh, so a prompt cache keeps it);
- `tail`: what changes every cycle (accessibility, what was left out, the latest result): sent after the
  current screenshot, at the end, so the turns before and the screenshot itself stay byte-identical in the
  next request (a prompt cache serves them).

The recent-steps text is not sent to these families: their own answers take its place (Conway's step list
is in Conway's syntax and screen pixels, which the model does not answer in).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from conway.history import Turn
from conway.prompt.fence import escape

__all__ = ["Past", "Slots", "add_box_tokens", "folded_layout", "image", "opencua_action", "qwen25_action_line", "qwen_action_line",
           "qwen_layout", "text"]


@dataclass
class Slots:
    system: str
    """The adapter's instructions (its trained system prompt, exactly)."""
    task: str
    """Conway's stable and growing parts, for the family's instruction slot."""
    tail: str
    """Conway's parts that change every cycle ("" when none)."""
    image_url: str | None
    """The current screenshot (None: no screen this step)."""


@dataclass
class Past:
    """One past turn as the layout sends it."""

    turn: Turn
    image_url: str | None
    """Its screenshot, exactly as it was sent (None: not sent again, only its answer)."""


def image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


_BOX = re.compile(r"(start_box|end_box)='\((\d+),\s*(\d+)\)'")


def add_box_tokens(answer: str) -> str:
    """A UI-TARS answer as its agent replays it: bare `start_box='(x,y)'` points wrapped in box tokens.

    As OSWorld's `add_box_token` does: only answers with an `Action: ` and a `start_box=`; the actions after the
    first `Action: ` are stripped and joined by a blank line; a point written with a space after its comma is
    found but left as it is (the agent's replacement looks for the spaceless form).
    """
    if "Action: " not in answer or "start_box=" not in answer:
        return answer
    head, *actions = answer.split("Action: ")
    done = []
    for action in actions:
        action = action.strip()
        for kind, x, y in _BOX.findall(action):
            action = action.replace(f"{kind}='({x},{y})'", f"{kind}='<|box_start|>({x},{y})<|box_end|>'")
        done.append(action)
    return head + "Action: " + "\n\n".join(done)


_SECTION = re.compile(r"^##\s*Action\s*:?[\n\r]+(.*?)(?=^##|\Z)", re.S | re.M)


def opencua_action(answer: str) -> str:
    """An OpenCUA answer's `## Action:` section (what its agent keeps of a step); the whole answer when it has none."""
    found = _SECTION.search(answer)
    return found.group(1).strip() if found else answer.strip()


_QWEN_CALLS = {"left_click": "click", "right_click": "rightClick", "middle_click": "middleClick",
               "double_click": "doubleClick", "type": "typewrite", "scroll": "scroll", "mouse_move": "moveTo",
               "left_click_drag": "dragTo"}
"""Each tool action -> the pyautogui function OSWorld's Qwen agents write for it (their `parse_response`)."""


def _performing(answer: str, split_lines: bool = False) -> str:
    """`Performing <pyautogui function> action` of an answer's first tool call, as OSWorld's Qwen agents name a step
    whose answer has no `Action:` line (they fail on `wait`/`terminate` there; Conway writes the tool action's
    name); the answer's start when it holds no call."""
    call = re.search(r'"action"\s*:\s*"([a-z_]+)"', answer)
    if call is None:
        return answer.strip()[:200]
    name = call.group(1)
    if name == "key":
        keys = re.search(r'"keys"\s*:\s*\[([^\]]*)\]', answer)
        name = "hotkey" if keys and "," in keys.group(1) else "press"
    elif name == "type" and split_lines and re.search(r'"text"\s*:\s*"(\\n|\n)', answer):
        name = "press"  # Qwen3-VL's agent types line by line: a text opening with a line break starts with press
    return f"Performing {_QWEN_CALLS.get(name, name)} action"


def qwen_action_line(answer: str) -> str:
    """A Qwen3-VL answer's `Action:` line, as its agent keeps a step in "Previous actions"; without one, the
    agent's `Performing <pyautogui function> action` (`left_click` is `click`)."""
    for line in answer.split("\n"):
        line = line.strip()
        if line.lower().startswith("action:"):
            return line.split("Action:")[-1].strip()
    return _performing(answer, split_lines=True)


_QWEN25_LEAD = ("action:", "step", "i will", "i'll", "now i")


def qwen25_action_line(answer: str) -> str:
    """A Qwen2.5-VL answer as OSWorld's `Qwen25VLAgent.parse_response` keeps a step for "Previous actions": its
    first line opening with `Action:`, `Step`, `I will`, `I'll` or `Now I`, whole (prefix kept); without one,
    `Performing <pyautogui function> action` of its first tool call (the agent fails on `wait`/`terminate` there;
    Conway writes the tool action's name)."""
    for line in answer.split("\n"):
        line = line.strip()
        if line.lower().startswith(_QWEN25_LEAD):
            return line
    return _performing(answer)


def qwen_layout(slots: Slots, past: list[Past], instruction: str, action_line: Callable[[str], str]
                ) -> list[dict[str, Any]]:
    """The layout OSWorld's Qwen agents share (`qwen25vl_agent.py`, `qwen3vl_agent.py`, `predict`): system, the past
    answers after their screenshots (the first with the instruction, older steps as `Step N: <action_line>` in its
    Previous actions), then the current screenshot; without past turns the instruction follows the current
    screenshot. `instruction` is the agent's template (`{instruction}`, `{previous_actions_str}`). Conway's
    per-cycle parts follow the current screenshot."""
    shown = [p for p in past if p.image_url is not None]
    # the older steps go into the user turn, after Conway's parts: escaped as content (`fence.escape`), so an
    # answer's `<file …>` or `## goals.md` cannot pass for a part there
    folded = [escape(f"Step {p.turn.number}: {action_line(p.turn.answer)}") for p in past if p.image_url is None]
    filled = instruction.replace("{instruction}", slots.task).replace(
        "{previous_actions_str}", "\n".join(folded) or "None")
    out: list[dict[str, Any]] = [{"role": "system", "content": [text(slots.system)]}]
    for n, p in enumerate(shown):
        out.append({"role": "user", "content": [image(p.image_url)] + ([text(filled)] if n == 0 else [])})  # type: ignore[arg-type]
        out.append({"role": "assistant", "content": [text(p.turn.answer)]})
    last = [image(slots.image_url)] if slots.image_url else []
    if not shown:
        last.append(text(filled))
    if slots.tail:
        last.append(text(slots.tail))
    out.append({"role": "user", "content": last})
    return out


def folded_layout(slots: Slots, past: list[Past], step: Callable[[Past], str], template: str) -> list[dict[str, Any]]:
    """The layout OpenCUA's agent sends (and EvoCUA's S1 and Kimi's agents after it): system, the steps without
    a screenshot folded into one assistant text, the newest after their screenshot, then the current screenshot
    and `template` with the task (and Conway's tail) as its `{instruction}`."""
    out: list[dict[str, Any]] = [{"role": "system", "content": slots.system}]
    folded = [step(p) for p in past if p.image_url is None]
    if folded:
        out.append({"role": "assistant", "content": "\n".join(folded)})
    for p in past:
        if p.image_url is not None:
            out.append({"role": "user", "content": [image(p.image_url)]})
            out.append({"role": "assistant", "content": step(p)})
    instruction = slots.task + (f"\n\n{slots.tail}" if slots.tail else "")
    last = [image(slots.image_url)] if slots.image_url else []
    last.append(text(template.replace("{instruction}", instruction)))
    out.append({"role": "user", "content": last})
    return out
