"""Parse UI-TARS output: ``Thought: …`` then ``Action: name(key='value', …)``.

The action line is read by a small hand-written lexer (nothing is evaluated):
``name(key=value, …)`` calls separated by whitespace, values quoted with
``'`` or ``"`` (backslash escapes ``\\n \\t \\' \\" \\\\``; raw newlines are kept),
or bare (``direction=down``, ``start_box=(3,4)``).

=======================================================  ==============================
``click`` / ``left_single(start_box=…)``                  Click
``left_double(start_box=…)``                              DoubleClick
``right_single(start_box=…)``                             RightClick
``hover`` / ``mouse_move(start_box=…)``                   Move
``drag`` / ``select(start_box=…, end_box=…)``             Drag
``hotkey(key='ctrl c')``                                  Hotkey (one key alone: Key)
``press(key='enter')``                                    Key
``type(content='…')``                                     TypeText; a trailing ``\\n`` -> Key('enter')
``scroll(start_box=…, direction='down|up|left|right')``   Scroll(dy=∓5 / dx=∓5) at the point
``wait()``                                                Wait(5 s)
``finished(content='…')``                                 Finish(DONE, content)
``call_user(content='…')``                                Finish(FAIL, "the model asked for the user …")
=======================================================  ==============================

``point=`` / ``start_point=`` / ``end_point=`` (UI-TARS-1.5) are read as
``start_box`` / ``end_box``. A box is ``(x,y)``, ``[x,y]``,
``<|box_start|>(x,y)<|box_end|>``, ``<point>x y</point>``, or four numbers
``(x1,y1,x2,y2)`` / ``[x1, y1, x2, y2]`` / ``<bbox>x1 y1 x2 y2</bbox>`` (the
centre is used). Coordinates are in the caller's convention: UI-TARS-1.5 gives
absolute pixels of the smart-resized image (`Convention.ABSOLUTE`), UI-TARS 1.0
relative 0..1000 (`Convention.RELATIVE1000`).

Decisions:

* ``type(content='abc\\n')``: UI-TARS's prompt says a trailing ``\\n`` submits
  the input, so it becomes TypeText('abc') then Key('enter') (a content of just
  ``\\n`` is Key('enter') alone). Only one trailing newline is taken.
* ``call_user()`` means "the task is unsolvable or I need the user's help";
  Conway has no ask-the-user action, so it ends the run: Finish(FAIL) with a
  message saying the model asked for the user (plus its content, if any).
* Several calls in one Action (UI-TARS separates them by blank lines) give
  several actions, at most 10. A syntax error anywhere refuses the whole
  Action; a semantic error (say, a point outside the image) refuses only
  that call.
* ``type`` / ``finished`` content with unescaped quotes (``content='it's'``),
  which UI-TARS does write, is recovered the way the reference parser does:
  everything between ``content='`` and the final ``')``.
* Mobile-only actions (``long_press``, ``press_home``, ``press_back``,
  ``open_app``) and key holds (``keydown``/``keyup``) are refused with the reason.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from conway.actions import ActionProblem, _Action
from conway.geometry import Size
from conway.policies.parsed import (
    MAX_ACTIONS,
    ParsedOutput,
    build_action,
    check_setup,
    map_point,
    normalize_key,
    parser,
    problem,
)

__all__ = ["parse", "SCROLL_CLICKS", "WAIT_SECONDS", "CALL_USER_MESSAGE"]

SCROLL_CLICKS = 5
"""Wheel clicks per UI-TARS scroll (the reference pyautogui translation uses 5)."""
WAIT_SECONDS = 5.0
"""UI-TARS's prompt defines wait() as 'sleep for 5s'."""
CALL_USER_MESSAGE = "the model asked for the user's help (call_user)"

_END_LITERALS = ("<|im_end|>", "<|endoftext|>", "[EOS]", "</s>")
_END_TOKENS = re.compile("|".join(re.escape(t) for t in _END_LITERALS))
_ACTION_LINE = re.compile(r"^[ \t]*Action[ \t]*:", re.M)
_ACTION_ANY = re.compile(r"Action(?<![A-Za-z_]Action)[ \t]*:")
"""'Action:' not inside a longer word; the literal comes first so the search is a fast scan (200k chars: 1 ms, not 12)."""
_THOUGHT_LABEL = re.compile(r"^\s*Thought\s*:\s*", re.I)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WS = re.compile(r"\s*")
_QUOTED = {q: re.compile(q + r"([^" + q + r"\\]*+(?:\\.[^" + q + r"\\]*+)*+)" + q, re.S) for q in "'\""}
"""A quoted value (backslash escapes any character); possessive, so an unterminated one fails without backtracking."""
MAX_QUOTED_CHARS = 20_000
"""A quoted value longer than this is refused without reading on (the longest text an action takes is 10,000)."""
_BARE_STOP = re.compile(r"[()\[\]<>,'\"\n]")
MAX_BARE_CHARS = 1000
"""An unquoted value (a box, a direction, a key) longer than this is refused without reading on."""
MAX_PARAMS = 8
"""Parameters one call may have (UI-TARS actions have at most two)."""
_BOX_TOKENS = re.compile(r"<\|box_start\|>|<\|box_end\|>|</?point>|</?bbox>")
_BOX_CHARS = re.compile(r"[\s\d.,()\[\]+-]*")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")
_LOOSE_CONTENT = re.compile(r"\s*(type|finished|call_user)\(\s*content\s*=\s*(['\"])(.*)\2\s*\)\s*", re.S)

_PARAM_ALIASES = {"point": "start_box", "start_point": "start_box", "end_point": "end_box"}
_PARAMS: dict[str, frozenset[str]] = {
    "click": frozenset({"start_box"}),
    "left_single": frozenset({"start_box"}),
    "left_double": frozenset({"start_box"}),
    "right_single": frozenset({"start_box"}),
    "hover": frozenset({"start_box"}),
    "mouse_move": frozenset({"start_box"}),
    "drag": frozenset({"start_box", "end_box"}),
    "select": frozenset({"start_box", "end_box"}),
    "hotkey": frozenset({"key", "hotkey"}),
    "press": frozenset({"key", "press"}),
    "type": frozenset({"content"}),
    "scroll": frozenset({"start_box", "direction"}),
    "wait": frozenset(),
    "finished": frozenset({"content"}),
    "call_user": frozenset({"content"}),
}
_UNSUPPORTED = {
    "long_press": "a mobile-only action",
    "press_home": "a mobile-only action",
    "press_back": "a mobile-only action",
    "open_app": "a mobile-only action",
    "keydown": "holding a key down is not supported",
    "keyup": "holding a key down is not supported",
    "release": "holding a key down is not supported",
}
_SCROLL = {"down": ("dy", -1), "up": ("dy", 1), "left": ("dx", -1), "right": ("dx", 1)}


class _Syntax(Exception):
    pass


class _Reject(Exception):
    pass


def _parse(visible: str, reasoning: str | None, convention: Any, sent_size: Any, captured_size: Any) -> ParsedOutput:
    if any(t in visible for t in _END_LITERALS):  # a fast check first: the alternation scans slowly
        visible = _END_TOKENS.sub("", visible)

    marker = _ACTION_LINE.search(visible) or _ACTION_ANY.search(visible)
    if marker is None:
        bare = visible.strip()
        m = _IDENT.match(bare)
        if m and bare[m.end():].lstrip().startswith("(") and m.group() in _PARAMS.keys() | _UNSUPPORTED.keys():
            thought, action_text = None, bare  # a bare action, as in grounding-only prompts
        else:
            return ParsedOutput(
                None,
                [problem("no 'Action:' line found (expected 'Thought: …' then 'Action: name(…)')", visible)],
                reasoning,
            )
    else:
        before = visible[:marker.start()]
        thought = _THOUGHT_LABEL.sub("", before).strip() or None
        action_text = visible[marker.end():].strip()
    if not action_text:
        return ParsedOutput(thought, [problem("the Action line is empty")], reasoning, action_text)

    setup = check_setup(convention, sent_size, captured_size)
    if setup is not None:
        return ParsedOutput(thought, [problem(setup)], reasoning, action_text)

    try:
        calls = _Lexer(action_text).calls()
    except _Syntax as exc:
        loose = _LOOSE_CONTENT.fullmatch(action_text)
        if loose is None:
            return ParsedOutput(thought, [problem(f"unreadable UI-TARS action: {exc}", action_text)],
                                reasoning, action_text)
        content = loose.group(3)
        if re.search(re.escape(loose.group(2)) + r"\s*\)", content):
            # the call closed earlier and something follows it: not a stray quote
            return ParsedOutput(thought, [problem(f"unreadable UI-TARS action: {exc}", action_text)],
                                reasoning, action_text)
        calls = [(loose.group(1), {"content": _unescape(content)}, action_text)]
    if len(calls) > MAX_ACTIONS:
        return ParsedOutput(thought, [problem(f"{len(calls)} actions in one answer (limit {MAX_ACTIONS})",
                                              action_text)], reasoning, action_text)

    actions: list[_Action | ActionProblem] = []
    for name, args, raw in calls:
        try:
            actions.extend(_to_actions(name, args, raw, convention, sent_size, captured_size))
        except _Reject as exc:
            actions.append(problem(f"rejected UI-TARS action {name}: {exc}", raw))
    return ParsedOutput(thought, actions, reasoning, action_text)


# --- lexer ---------------------------------------------------------------------


class _Lexer:
    """``name(key=value, …)`` calls separated by whitespace; nothing else."""

    def __init__(self, s: str):
        self.s = s
        self.i = 0

    def _ws(self) -> None:
        self.i = _WS.match(self.s, self.i).end()  # type: ignore[union-attr]

    def _fail(self, what: str) -> _Syntax:
        near = self.s[self.i:self.i + 30]
        return _Syntax(f"{what} at offset {self.i} (near {near!r})" if near else f"{what} at the end")

    def _ident(self, what: str) -> str:
        m = _IDENT.match(self.s, self.i)
        if m is None:
            raise self._fail(f"expected {what}")
        self.i = m.end()
        return m.group()

    def _expect(self, ch: str) -> None:
        if self.i >= len(self.s) or self.s[self.i] != ch:
            raise self._fail(f"expected {ch!r}")
        self.i += 1

    def calls(self) -> list[tuple[str, dict[str, str], str]]:
        out = []
        self._ws()
        while self.i < len(self.s):
            if len(out) > MAX_ACTIONS:
                raise self._fail(f"more than {MAX_ACTIONS} actions")
            out.append(self._call())
            self._ws()
        if not out:
            raise self._fail("expected an action")
        return out

    def _call(self) -> tuple[str, dict[str, str], str]:
        start = self.i
        name = self._ident("an action name")
        self._ws()
        self._expect("(")
        args: dict[str, str] = {}
        self._ws()
        if self.i < len(self.s) and self.s[self.i] == ")":
            self.i += 1
            return name, args, self.s[start:self.i]
        while True:
            self._ws()
            if len(args) >= MAX_PARAMS:
                raise self._fail(f"more than {MAX_PARAMS} parameters")
            if self.i < len(self.s) and self.s[self.i] == ")":  # a trailing comma
                self.i += 1
                break
            key = self._ident("a parameter name (arguments are key='value')")
            self._ws()
            self._expect("=")
            self._ws()
            if key in args:
                raise self._fail(f"parameter {key!r} given twice")
            args[key] = self._value()
            self._ws()
            if self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1
                continue
            self._expect(")")
            break
        return name, args, self.s[start:self.i]

    def _value(self) -> str:
        if self.i >= len(self.s):
            raise self._fail("expected a value")
        q = self.s[self.i]
        if q in "'\"":
            m = _QUOTED[q].match(self.s, self.i, self.i + MAX_QUOTED_CHARS + 2)
            if m is None:
                if len(self.s) - self.i > MAX_QUOTED_CHARS + 2:
                    raise self._fail(f"a quoted value longer than {MAX_QUOTED_CHARS} characters")
                raise _Syntax(f"unterminated string starting at offset {self.i} ({self.s[self.i:self.i + 30]!r})")
            self.i = m.end()
            return _unescape(m.group(1))
        # bare value: up to a ',' or ')' outside brackets (boxes, directions, keys: short)
        start, depth = self.i, 0
        while self.i < len(self.s):
            if self.i - start > MAX_BARE_CHARS:
                raise self._fail(f"an unquoted value longer than {MAX_BARE_CHARS} characters")
            stop = _BARE_STOP.search(self.s, self.i, start + MAX_BARE_CHARS + 2)
            if stop is None:
                self.i = min(len(self.s), start + MAX_BARE_CHARS + 1)
                continue
            self.i = stop.start()
            c = self.s[self.i]
            if c in "([<":
                depth += 1
            elif c in ")]>":
                if depth == 0 and c == ")":
                    break
                depth = max(depth - 1, 0)
            elif c == "," and depth == 0:
                break
            elif c in "'\"\n":
                raise self._fail("unexpected quote or newline in an unquoted value")
            self.i += 1
        value = self.s[start:self.i].strip()
        if not value:
            raise self._fail("expected a value")
        return value


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "\\": "\\"}


parse = parser("UI-TARS", _parse, "Parse one UI-TARS answer; never raises, never evaluates anything.")


def _unescape(s: str) -> str:
    """Backslash escapes, read left to right: ``\\\\`` pairs first, then ``\\n \\t \\r \\' \\"``; others kept.

    Done with str.split/replace (C speed) rather than a callback per escape:
    100,000 escapes in one value cost milliseconds, not a tenth of a second.
    """
    if "\\" not in s:
        return s
    parts = s.split("\\\\")  # a left-to-right pair of backslashes is one backslash
    for esc, ch in _ESCAPES.items():
        if esc != "\\":
            parts = [p.replace("\\" + esc, ch) for p in parts]
    return "\\".join(parts)


# --- mapping -----------------------------------------------------------------------


def _box(param: str, value: str, convention: Any, sent: Size, captured: Size) -> tuple[float, float]:
    t = _BOX_TOKENS.sub(" ", value)
    if not _BOX_CHARS.fullmatch(t):
        raise _Reject(f"{param}={value!r} is not a point or box")
    nums = [float(n) for n in _NUMBER.findall(t)]
    if len(nums) == 2:
        x, y = nums
    elif len(nums) == 4:
        x, y = (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2
    else:
        raise _Reject(f"{param}={value!r} has {len(nums)} numbers (expected x,y or x1,y1,x2,y2)")
    mapped = map_point(x, y, convention, sent, captured, what=param)
    if isinstance(mapped, str):
        raise _Reject(mapped)
    return mapped


def _split_keys(value: str) -> list[str]:
    parts = value.split()
    if len(parts) == 1 and "+" in parts[0] and parts[0] != "+":
        parts = [p for p in parts[0].split("+") if p]
    if not parts and value == " ":
        parts = [" "]
    return [normalize_key(p, combo=len(parts) > 1) for p in parts]


_POINTER_TYPES = {"click": "click", "left_single": "click", "left_double": "double_click",
                  "right_single": "right_click", "hover": "move", "mouse_move": "move"}
"""Each UI-TARS call at one point -> the action type it is."""

_Point = Callable[..., tuple[float, float]]
"""A call's box parameter (`start_box` by default) as a point in captured pixels; a `_Reject` when it is missing."""


def _to_actions(name: str, args: dict[str, str], raw: str, convention: Any, sent: Size,
                captured: Size) -> list[_Action | ActionProblem]:
    params = _params(name, args)

    def point(p: str = "start_box") -> tuple[float, float]:
        if p not in params:
            raise _Reject(f"needs {p}")
        return _box(p, params[p], convention, sent, captured)

    return [build_action(fields, raw) for fields in _fields(name, params, point)]


def _params(name: str, args: dict[str, str]) -> dict[str, str]:
    """The call's arguments by their canonical names, empty ones left out (but an empty `content`)."""
    if name in _UNSUPPORTED:
        raise _Reject(f"{_UNSUPPORTED[name]}")
    if name not in _PARAMS:
        raise _Reject(f"unknown action; known: {', '.join(sorted(_PARAMS))}")
    params: dict[str, str] = {}
    for k, v in args.items():
        k2 = _PARAM_ALIASES.get(k, k)
        if k2 not in _PARAMS[name]:
            raise _Reject(f"no parameter {k!r}; allowed: {', '.join(sorted(_PARAMS[name])) or 'none'}")
        if k2 in params:
            raise _Reject(f"parameter {k2!r} given twice (as {k!r})")
        if v != "" or k2 == "content":
            params[k2] = v
    return params


def _fields(name: str, params: dict[str, str], point: _Point) -> list[dict[str, Any]]:
    """The action fields one call stands for."""
    if name in _POINTER_TYPES:
        x, y = point()
        return [{"type": _POINTER_TYPES[name], "x": x, "y": y}]
    if name in ("drag", "select"):
        x, y = point("start_box")
        tx, ty = point("end_box")
        return [{"type": "drag", "x": x, "y": y, "to_x": tx, "to_y": ty}]
    if name in ("hotkey", "press"):
        return [_key_fields(name, params)]
    if name == "type":
        return _type_fields(params)
    if name == "scroll":
        return [_scroll_fields(params, point)]
    if name == "wait":
        return [{"type": "wait", "seconds": WAIT_SECONDS}]
    if name == "finished":
        return [{"type": "finish", "status": "DONE", "message": params.get("content", "")}]
    if name == "call_user":
        extra = params.get("content", "").strip()
        return [{"type": "finish", "status": "FAIL", "message": CALL_USER_MESSAGE + (f": {extra}" if extra else "")}]
    raise _Reject("not mapped to an action")  # pragma: no cover - tables and code agree


def _key_fields(name: str, params: dict[str, str]) -> dict[str, Any]:
    value = params.get("key", params.get(name))
    if value is None:
        raise _Reject("needs key")
    keys = _split_keys(value)
    if not keys:
        raise _Reject(f"key={value!r} names no key")
    if name == "press" and len(keys) > 1:
        raise _Reject(f"press takes one key, got {value!r} (use hotkey for a combination)")
    if len(keys) == 1:
        return {"type": "key", "key": keys[0]}
    return {"type": "hotkey", "keys": keys}


def _type_fields(params: dict[str, str]) -> list[dict[str, Any]]:
    """The text typed, and an Enter when the content ends in a newline (UI-TARS's way to submit)."""
    content = params.get("content", "")
    submit = False
    for nl in ("\n", "\\n"):
        if content.endswith(nl):
            content, submit = content[: -len(nl)], True
            break
    if not content and not submit:
        raise _Reject("needs content to type")
    out: list[dict[str, Any]] = [{"type": "type", "text": content}] if content else []
    if submit:
        out.append({"type": "key", "key": "enter"})
    return out


def _scroll_fields(params: dict[str, str], point: _Point) -> dict[str, Any]:
    direction = params.get("direction", "").strip().lower()
    if direction not in _SCROLL:
        raise _Reject(f"direction must be down, up, left or right, got {params.get('direction')!r}")
    axis, sign = _SCROLL[direction]
    fields: dict[str, Any] = {"type": "scroll", axis: sign * SCROLL_CLICKS}
    if "start_box" in params:
        fields["x"], fields["y"] = point()
    return fields
