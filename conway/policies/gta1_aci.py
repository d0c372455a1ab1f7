"""The `agent.*` calls GTA1's planner writes (OSWorld `mm_agents/gta1/gta1_agent.py`, `OSWorldACI`), read as the
agent reads them and turned into Conway's actions (never evaluated).

A proposal is valid as `GTA1Agent.isvalid` judges it: an `Observation:` and a `Thought:` line, a code block, the
first block after `Grounded Action` (or the answer's first) a call `name.fn(...)`, and the first `agent.fn(...)`
of all its blocks an ACI function its arguments fit, a pointer call (click, scroll, drag_and_drop,
highlight_text_span) naming what to ground. The arguments are read as Python literals (the agent `eval`s them:
a call whose arguments are expressions is refused here).

The descriptions grounded are the agent's (`OSWorldACI.parse_function_args`: the keyword arguments whose name holds
`description`, then the positional ones; the first is grounded, the first two for drag_and_drop). The call then
becomes actions as `OSWorldACI` writes its pyautogui code: a click (double / triple with `num_clicks`), a type (a
click on the element first, `ctrl+a` `backspace` with `overwrite`, `enter` with `enter`), a scroll at the element
(`shift`: horizontal), a drag, a hotkey, held keys with each pressed key (as hotkeys), `open` (the Super key, the
name typed, Enter, with the agent's pauses), a wait, `done` / `fail`. Refused with a problem that says why:
`set_cell_values` (the agent runs LibreOffice's UNO script inside the VM), `switch_applications` (a `wmctrl` script
on Linux), `highlight_text_span` (Tesseract OCR and a text-span model call), a click or drag with `hold_keys`
(Conway has no held-key pointer action), and any other name.
"""

from __future__ import annotations

import ast
import inspect
import re
from typing import Any

from conway.actions import ActionProblem, _Action
from conway.policies.parsed import build_action, problem

__all__ = ["SIGNATURES", "agent_call", "caption_of", "descriptions", "first_block", "is_valid", "to_actions", "to_ground"]

_CALL = re.compile(r"agent\.[a-zA-Z_]+\((?:[^()'\"]|'[^']*'|\"[^\"]*\")*\)")
_BLOCK = re.compile(r"```(?:\w+\s+)?(.*?)```", re.DOTALL)
COMMANDS = ("WAIT", "DONE", "FAIL")


def _sig(*params: str, **defaults: Any) -> inspect.Signature:
    return inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params] +
                             [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=v)
                              for k, v in defaults.items()])


SIGNATURES: dict[str, inspect.Signature] = {
    "click": _sig("instruction", num_clicks=1, button_type="left", hold_keys=[]),
    "switch_applications": _sig("app_code"),
    "open": _sig("app_or_filename"),
    "type": _sig(element_description=None, text="", overwrite=False, enter=False),
    "drag_and_drop": _sig("starting_description", "ending_description", hold_keys=[]),
    "highlight_text_span": _sig("starting_phrase", "ending_phrase"),
    "set_cell_values": _sig("cell_values", "app_name", "sheet_name"),
    "scroll": _sig("instruction", "clicks", shift=False),
    "hotkey": _sig("keys"),
    "hold_and_press": _sig("hold_keys", "press_keys"),
    "wait": _sig("time"),
    "done": _sig(return_value=None),
    "fail": _sig(),
}
"""`OSWorldACI`'s functions and their parameters (the agent's validity check also knows `run_python` and
`fast_open_terminal`, which its executing ACI lacks: refused here)."""
POINTED = {"click": 1, "scroll": 1, "drag_and_drop": 2, "highlight_text_span": 2}
"""The calls whose first one or two descriptions must be grounded for the call to be valid."""


def _codes(answer: str) -> list[str]:
    """`parse_code_from_planner_response`: the answer's pieces split at `;`, then each fenced block."""
    joined = "\n".join(line.strip() for line in answer.split(";") if line.strip())
    return [block.strip() for block in _BLOCK.findall(joined)]


def first_block(answer: str) -> str | None:
    """The code the agent grounds (`parse_single_code_from_string` of what follows `Grounded Action`): a bare
    command, else the first fenced block (a trailing command line set apart); None when there is none."""
    text = answer.split("Grounded Action")[-1].strip()
    if text in COMMANDS:
        return text
    blocks = [b.strip() for b in _BLOCK.findall(text)]
    if not blocks:
        return None
    lines = blocks[0].split("\n")
    if lines[-1] in COMMANDS and len(lines) > 1:
        return "\n".join(lines[:-1])
    return blocks[0]


def agent_call(answer: str) -> str | None:
    """The first `agent.fn(...)` of the answer's code (`extract_first_agent_function`)."""
    found = _CALL.findall("\n".join(_codes(answer)))
    return found[0] if found else None


def _parsed(call: str) -> tuple[str, list[Any], dict[str, Any]] | None:
    """(function, positional, keyword) with every argument a literal; None otherwise."""
    try:
        node = ast.parse(call.strip()).body[0].value  # type: ignore[attr-defined]
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            return None
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    except (SyntaxError, ValueError, TypeError, IndexError, AttributeError, MemoryError, RecursionError):
        return None
    return node.func.attr, args, kwargs


def descriptions(call: str) -> list[Any]:
    """`parse_function_args`: keyword arguments named `*description*`, then the positional ones."""
    parsed = _parsed(call)
    if parsed is None:
        return []
    _, args, kwargs = parsed
    return [v for k, v in kwargs.items() if "description" in k] + list(args)


def bound(call: str) -> tuple[str, dict[str, Any]] | None:
    """(function, its arguments by name, defaults filled) or None when the call does not fit an ACI function."""
    parsed = _parsed(call)
    if parsed is None or parsed[0] not in SIGNATURES:
        return None
    fn, args, kwargs = parsed
    try:
        b = SIGNATURES[fn].bind(*args, **kwargs)
    except TypeError:
        return None
    b.apply_defaults()
    return fn, dict(b.arguments)


def is_valid(answer: str) -> bool:
    """`GTA1Agent.isvalid`: grounding parsed, the call fits, a thought and an observation caption."""
    block = first_block(answer)
    if block is None or not re.match(r"(\w+\.\w+)\(", block) or _parsed(block) is None:
        return False
    found = bound(agent_call(answer) or "")
    if found is None:
        return False
    if found[0] in POINTED and len(to_ground(answer)) < POINTED[found[0]]:
        return False  # the agent's dummy ACI has no point to use
    return bool(_codes(answer) and caption_of(answer, "Thought") and caption_of(answer, "Observation"))


def to_ground(answer: str) -> list[Any]:
    """The descriptions the agent grounds (`OSWorldACI.assign_coordinates`): the first one of a click, type or
    scroll (when not None), the first two of a drag_and_drop; none for other calls (highlight_text_span's phrases
    go to OCR, refused here)."""
    block = first_block(answer) or ""
    name = re.match(r"(\w+\.\w+)\(", block)
    args = descriptions(block)
    fn = name.group(1) if name else ""
    if fn in ("agent.click", "agent.type", "agent.scroll") and args and args[0] is not None:
        return args[:1]
    if fn in ("agent.drag_and_drop", "agent.highlight_text_span") and len(args) >= 2:
        return args[:2]
    return []


def caption_of(answer: str, label: str) -> str:
    """`parse_thought_…` / `parse_observation_caption_from_planner_response`: the line after `<label>:`."""
    found = re.search(rf"{label}:\n(.*?)\n", answer, re.DOTALL)
    return found.group(1).strip() if found else ""


def _act(fields: dict[str, Any], raw: str) -> _Action | ActionProblem:
    return build_action(fields, raw)


def _pointer(fn: str, a: dict[str, Any], points: list[tuple[int, int]], raw: str) -> list[Any]:
    (x, y), *rest = points
    if fn == "scroll":
        return [_act({"type": "scroll", ("dx" if a["shift"] else "dy"): a["clicks"], "x": x, "y": y}, raw)]
    if a.get("hold_keys"):
        return [problem(f"agent.{fn} with hold_keys {a['hold_keys']!r}: Conway has no held-key pointer action", raw)]
    if fn == "drag_and_drop":
        return [_act({"type": "drag", "x": x, "y": y, "to_x": rest[0][0], "to_y": rest[0][1]}, raw)]
    n, button = a["num_clicks"], a["button_type"]
    if button == "left" and n in (2, 3):
        return [_act({"type": "double_click" if n == 2 else "triple_click", "x": x, "y": y}, raw)]
    if not isinstance(n, int) or not 1 <= n <= 3:
        return [problem(f"agent.click with num_clicks={n!r}: 1 to 3 are done", raw)]
    return [_act({"type": "click", "x": x, "y": y, "button": button}, raw) for _ in range(n)]


def _keys(fn: str, a: dict[str, Any], raw: str) -> list[Any]:
    if fn == "hotkey":
        return [_act({"type": "hotkey", "keys": list(a["keys"])}, raw)]
    held = list(a["hold_keys"])
    return [_act({"type": "hotkey", "keys": held + [k]} if held else {"type": "key", "key": k}, raw)
            for k in a["press_keys"]]


def _typed(a: dict[str, Any], point: tuple[int, int] | None, raw: str) -> list[Any]:
    out = [_act({"type": "click", "x": point[0], "y": point[1]}, raw)] if point else []
    if a["overwrite"]:
        out += [_act({"type": "hotkey", "keys": ["ctrl", "a"]}, raw), _act({"type": "key", "key": "backspace"}, raw)]
    if a["text"]:
        out.append(_act({"type": "type", "text": str(a["text"])}, raw))
    if a["enter"]:
        out.append(_act({"type": "key", "key": "enter"}, raw))
    return out


REFUSED = {
    "set_cell_values": "the agent sets cells with LibreOffice's UNO script run inside the VM; Conway does not",
    "switch_applications": "the agent switches windows with a wmctrl script; Conway does not",
    "highlight_text_span": "the agent finds the phrases with Tesseract OCR and a text-span model call; Conway does not",
}


def to_actions(call: str, points: list[tuple[int, int]]) -> list[Any]:
    """The call's Conway actions, `points` the grounded ones (screen pixels) in the order of its descriptions."""
    found = bound(call)
    if found is None:
        return [problem(f"not a call of the agent's functions ({', '.join(SIGNATURES)}): {call[:200]}", call)]
    fn, a = found
    if fn in REFUSED:
        return [problem(f"agent.{fn}: {REFUSED[fn]}", call)]
    if fn in POINTED:
        if len(points) < POINTED[fn]:
            return [problem(f"agent.{fn}: the grounding model gave no point for its description", call)]
        return _pointer(fn, a, points, call)
    if fn in ("hotkey", "hold_and_press"):
        return _keys(fn, a, call)
    if fn == "type":
        return _typed(a, points[0] if points else None, call)
    if fn == "open":
        return [_act({"type": "key", "key": "win"}, call), _act({"type": "wait", "seconds": 0.5}, call),
                _act({"type": "type", "text": str(a["app_or_filename"])}, call),
                _act({"type": "wait", "seconds": 1.0}, call), _act({"type": "key", "key": "enter"}, call)]
    if fn == "wait":
        return [_act({"type": "wait", "seconds": a["time"]}, call)]
    if fn == "done":
        value = a["return_value"]
        return [_act({"type": "finish", "status": "DONE", "message": "" if value is None else str(value)}, call)]
    return [_act({"type": "finish", "status": "FAIL"}, call)]
