"""What every output parser returns, and the small helpers they share.

A parser is a pure function of the model's text::

    parse(text, *, convention, sent_size, captured_size) -> ParsedOutput

It never raises for any text (bad input becomes an `ActionProblem` with the
reason) and never executes anything the model wrote. Coordinates in the
returned GUI actions are pixels of the *captured* screenshot; the model's own
convention (see `conway.geometry.Convention`) is mapped here.

`parser` makes that function from a parser's own body, which gets the text
already checked and split by `split_reasoning` (`run_parser` does the same for
a parser with options of its own, OpenCUA's `max_statements`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from conway.actions import ActionProblem, _Action, digits, parse_action
from conway.geometry import Convention, Size, model_point_error, model_to_captured

__all__ = [
    "ParsedOutput",
    "json_answer",
    "MAX_TEXT_CHARS",
    "MAX_NUMBER",
    "MAX_ACTIONS",
    "split_reasoning",
    "check_setup",
    "map_point",
    "build_action",
    "one_click",
    "problem",
    "guarded",
    "Parser",
    "parser",
    "run_parser",
    "normalize_key",
    "show_value",
]

MAX_TEXT_CHARS = 200_000
"""Model output longer than this is refused outright (no model answers that much)."""
MAX_NUMBER = 1_000_000
"""Any number a model writes beyond this magnitude is refused before any mapping."""
MAX_ACTIONS = 10
"""Most actions one answer may produce (after expanding `press(presses=…)` etc.)."""


@dataclass
class ParsedOutput:
    """One model answer, parsed."""

    thought: str | None
    """The model's stated reasoning for this step (its Thought section), if any."""
    actions: list[_Action | ActionProblem] = field(default_factory=list)
    """Actions in captured-screenshot pixels, or problems explaining a rejection."""
    reasoning: str | None = None
    """Content of `<think>…</think>` blocks: recorded, never re-sent as context."""
    raw_action_text: str | None = None
    """The fragment the actions were parsed from (code block, Action line, JSON)."""

    @property
    def ok(self) -> bool:
        """True when there is at least one action and no problem."""
        return bool(self.actions) and not any(isinstance(a, ActionProblem) for a in self.actions)

    @property
    def problems(self) -> list[ActionProblem]:
        return [a for a in self.actions if isinstance(a, ActionProblem)]


def problem(message: str, raw: Any = None) -> ActionProblem:
    return ActionProblem(message=message, raw=_clip(raw) if isinstance(raw, str) else raw)


def _clip(s: str, n: int = 2000) -> str:
    return s if len(s) <= n else s[:n] + f"… [{len(s) - n} more chars]"


# --- hidden reasoning --------------------------------------------------------

_THINK_KINDS = tuple(
    (re.compile(o, flags), re.compile(c, flags), re.compile(f"{o}(.*?)(?:{c}|\\Z)", flags | re.S))
    for o, c, flags in ((r"<think(?:ing)?>", r"</think(?:ing)?>", re.I), (r"◁think▷", r"◁/think▷", 0))
)


def split_reasoning(text: str) -> tuple[str, str | None]:
    """Remove `<think>…</think>` (also `<thinking>`, `◁think▷`) blocks.

    Returns (the visible text, the reasoning or None). A closing tag with no
    opening tag (templates that put `<think>` in the prompt) makes everything
    before it reasoning; an opening tag never closed (a truncated answer)
    makes everything after it reasoning. Blocks are cut by one regex pass
    (no Python work per tag: linear and fast whatever the tags).
    """
    parts: list[str] = []
    for open_re, close_re, block_re in _THINK_KINDS:
        c = close_re.search(text)
        o = open_re.search(text)
        if c is not None and (o is None or c.start() < o.start()):  # the opening tag was in the prompt
            parts.append(text[:c.start()])
            text = text[c.end():]
            o = open_re.search(text)
        if o is None:
            continue
        if close_re.search(text, o.end()) is None:  # one block, never closed: the rest is reasoning
            parts.append(text[o.end():])
            text = text[:o.start()]
            continue
        parts.extend(block_re.findall(text))  # an opening tag inside a block is part of it
        text = block_re.sub("", text)  # a stray closing tag outside a block stays visible
    reasoning = "\n\n".join(p.strip() for p in parts if p.strip())
    return text, (reasoning or None)


# --- coordinates -------------------------------------------------------------


def check_setup(convention: Any, sent_size: Any, captured_size: Any) -> str | None:
    """None when the caller's convention and sizes are usable, else why not."""
    try:
        Convention(convention)
    except ValueError:
        known = ", ".join(c.value for c in Convention)
        return f"parser misconfigured: unknown coordinate convention {convention!r} (known: {known})"
    for name, size in (("sent_size", sent_size), ("captured_size", captured_size)):
        if (
            not isinstance(size, (tuple, list))
            or len(size) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)
        ):
            return f"parser misconfigured: {name} must be (width, height) positive ints, got {size!r}"
    return None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def map_point(
    x: Any, y: Any, convention: Any, sent_size: Size, captured_size: Size, what: str = "point"
) -> tuple[float, float] | str:
    """Model point -> captured pixels, or a message naming the bounds it broke."""
    for name, v in (("x", x), ("y", y)):
        if not _is_number(v):
            return f"{what}: {name}={show_value(v)} is not a number"
        # the magnitude first: math.isfinite(a 400-digit int) raises OverflowError
        if abs(v) > MAX_NUMBER or not math.isfinite(v):
            return f"{what}: {name}={show_value(v)} is not a plausible coordinate (|v| <= {MAX_NUMBER})"
    err = model_point_error(x, y, convention, sent_size, captured_size)
    if err is not None:
        return f"{what}: {err}"
    cx, cy = model_to_captured(x, y, convention, sent_size, captured_size)
    cw, ch = captured_size
    # relative 1.0 (or 1000) is the right/bottom edge itself: put it on the last pixel
    cx, cy = round(cx, 3), round(cy, 3)
    return (cw - 1.0 if cx >= cw else max(cx, 0.0)), (ch - 1.0 if cy >= ch else max(cy, 0.0))


def show_value(v: Any, n: int = 40) -> str:
    """A short rendering of a value for a message (a 400-digit number is not printed whole)."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 3 * n:
        return f"{'-' if v < 0 else ''}<a {digits(v)}-digit number>"
    text = repr(v)
    return text if len(text) <= n else text[:n] + "…"


_KEY_ALIASES = {
    "arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down",
    "control": "ctrl", "escape": "esc", "return": "enter", "del": "delete",
}


def normalize_key(key: str, combo: bool = False) -> str:
    """pyautogui's spelling of a key name: multi-character names lower-cased
    (pyautogui does the same) and a few common aliases mapped. In a combination
    (`combo`) single letters are lower-cased too: ctrl+C means ctrl+c."""
    k = key.strip() if key.strip() else key  # a lone " " is the space key
    if len(k) > 1 or combo:
        k = k.lower()
        k = _KEY_ALIASES.get(k, k)
    return k


def build_action(fields: dict[str, Any], raw: Any = None) -> _Action | ActionProblem:
    """Validate one action dict with the schema; a failure keeps `raw` for the journal."""
    result = parse_action(fields)
    if isinstance(result, ActionProblem) and raw is not None:
        return problem(result.message, raw)
    return result


def one_click(x: Any, y: Any, raw: str, convention: Any, sent: Size, captured: Size, thought: str | None,
              reasoning: str | None) -> ParsedOutput:
    """A grounding model's point as its one action, a left click in captured pixels; a point outside the image is a
    problem naming its bounds."""
    point = map_point(x, y, convention, sent, captured)
    if isinstance(point, str):
        return ParsedOutput(thought, [problem(point, raw)], reasoning, raw)
    return ParsedOutput(thought, [build_action({"type": "click", "x": point[0], "y": point[1]}, raw)], reasoning,
                        raw)


def json_answer(text: str, convention: Any, sent_size: Any, captured_size: Any
                ) -> ParsedOutput | tuple[dict[str, Any], str, str | None]:
    """A JSON-object answer (Holo's): (the object, its text, the reasoning split off), or the refusal: a bad
    setup, text that is not one JSON object (a fenced block is read inside), a JSON value that is not an object."""
    bad = check_setup(convention, sent_size, captured_size)
    if bad:
        return ParsedOutput(None, [problem(bad)])
    visible, reasoning = split_reasoning(text)
    body = visible.strip()
    if body.startswith("```"):  # a fenced block: its inside
        body = body.strip("`").removeprefix("json").strip()
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return ParsedOutput(None, [problem(f"the answer is not one JSON object: {show_value(body, 80)}", visible)],
                            reasoning)
    if not isinstance(obj, dict):
        return ParsedOutput(None, [problem(f"the answer is a JSON {type(obj).__name__}, not an object", body)],
                            reasoning)
    return obj, body, reasoning


def guarded(kind: str, fn: Callable[[], ParsedOutput], text: Any) -> ParsedOutput:
    """Check the input, run a parser body; any unexpected exception becomes a problem, never escapes."""
    if not isinstance(text, str):
        return ParsedOutput(None, [problem(f"model output must be text, got {type(text).__name__}")])
    if len(text) > MAX_TEXT_CHARS:
        return ParsedOutput(None, [problem(f"model output is {len(text)} chars (limit {MAX_TEXT_CHARS})")])
    try:
        return fn()
    except Exception as exc:
        return ParsedOutput(
            thought=None,
            actions=[problem(f"internal {kind} parser error ({type(exc).__name__}: {exc})",
                             text if isinstance(text, str) else None)],
        )


class Parser(Protocol):
    """A parser's `parse`: the model's text -> `ParsedOutput`; never raises."""

    def __call__(self, text: str, *, convention: Convention | str, sent_size: Size,
                 captured_size: Size) -> ParsedOutput: ...


def run_parser(kind: str, body: Callable[..., ParsedOutput], text: Any, *args: Any) -> ParsedOutput:
    """`body(visible, reasoning, *args)` on the text split by `split_reasoning`, `guarded` (never raises)."""
    return guarded(kind, lambda: body(*split_reasoning(text), *args), text)


def parser(kind: str, body: Callable[[str, str | None, Any, Any, Any], ParsedOutput], doc: str) -> Parser:
    """A parser's `parse` from its body, which reads (visible text, reasoning, convention, sent_size,
    captured_size); `kind` names the parser in an internal error."""

    def parse(text: str, *, convention: Convention | str, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return run_parser(kind, body, text, convention, sent_size, captured_size)

    parse.__doc__, parse.__module__, parse.__qualname__ = doc, body.__module__, "parse"  # as if written there
    return parse
