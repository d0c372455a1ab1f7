"""Parse OpenCUA-style output: `## Thought` / `## Action` / `## Code` sections.

The L2 form is ``## Thought:`` / ``## Action:`` / ``## Code:``; L1 drops the
Thought and L3 adds an ``## Observation:`` first. The code is the LAST fenced
block tagged ``python``/``py``/``code`` (or untagged) anywhere in the answer;
without a fence, the whole ``## Code`` section; without either, an answer that
*is* a bare ``pyautogui.…``/``computer.…`` line.

The code is **never run**. It is parsed with `ast.parse` (parse only) and
accepted when every statement in it (at most `MAX_STATEMENTS` of them; the
caller may lower or raise the bound) calls an allowlisted dotted name with
literal arguments only. Each statement is validated alone and becomes its
action(s), in order; one bad statement refuses the whole block with its reason
and its number, so nothing of it is half-dispatched. OpenCUA's training data
(AgentNet) and its OSWorld agent (`mm_agents/opencua/opencua_agent.py`, which
runs the whole block) write several lines in one step, e.g.
``pyautogui.write(message='stat')`` then ``pyautogui.press(keys=['enter'])``:

========================================  =====================================
``pyautogui.click(x, y, clicks, button)``  Click / DoubleClick / TripleClick
``pyautogui.doubleClick`` / ``tripleClick``  DoubleClick / TripleClick
``pyautogui.rightClick`` / ``middleClick``  RightClick / Click(button=middle)
``pyautogui.moveTo(x, y)``                 Move
``pyautogui.scroll(clicks, x=, y=)``       Scroll(dy=clicks) (positive = up)
``pyautogui.hscroll(clicks, x=, y=)``      Scroll(dx=clicks) (positive = right)
``pyautogui.write`` / ``typewrite(msg)``   TypeText
``pyautogui.press(keys, presses=)``        Key, once per key per press
``pyautogui.hotkey(*keys)`` / ``(keys=[…])``  Hotkey
``computer.triple_click(x, y)``            TripleClick
``computer.wait(seconds=)``                Wait
``computer.terminate(status, answer=)``    Finish(DONE for 'success', FAIL for 'failure')
========================================  =====================================

A ``pyautogui.moveTo(x1, y1)`` directly followed by ``pyautogui.dragTo(x2, y2)``
(how OpenCUA writes a drag) is one Drag. A ``dragTo`` not right after a
``moveTo`` is refused: it drags from wherever the pointer is, which this
parser cannot know. ``duration`` / ``interval`` are checked (0..60 s) and
ignored: the GUI tool chooses its own timing.

Literals are ints, floats (a leading ``-``/``+`` allowed), strings, and
lists/tuples of strings. Refused, each with its reason: any other statement
or expression, names, calls or attribute access inside arguments, f-strings,
``*args``/``**kwargs``, keywords a function does not take, numbers beyond
±1e6 or outside the image sent, and identifiers that are not plain ASCII in
the source (``ast`` NFKC-normalizes identifiers, so a full-width ``ｐyautogui``
would otherwise pass as ``pyautogui``).

Work is linear in the answer's length whatever its shape: fence and
heading patterns cannot backtrack, and an answer with more than
`MAX_HEADINGS` section headings is refused as not an OpenCUA answer.

Coordinates are in the caller's convention: absolute pixels of the
smart-resized image for OpenCUA-7B/32B (`Convention.ABSOLUTE`), 0..1 for the
other variants (`Convention.RELATIVE`).
"""

from __future__ import annotations

import ast
import bisect
import io
import math
import re
import tokenize
import warnings
from typing import Any, Callable

from conway.actions import ActionProblem, _Action
from conway.geometry import Convention, Size
from conway.policies.parsed import (
    MAX_NUMBER,
    ParsedOutput,
    build_action,
    check_setup,
    map_point,
    normalize_key,
    problem,
    run_parser,
)

__all__ = ["parse", "ALLOWED_CALLS", "MAX_CODE_CHARS", "MAX_STATEMENTS"]

MAX_CODE_CHARS = 20_000
MAX_STATEMENTS = 8
"""Default bound on the statements of one code block (AgentNet steps have one to a few: type, then enter)."""
MAX_LINES = 5_000
"""A real answer has tens of lines; more are refused before the heading scan (its cost grows with lines)."""
MAX_HEADINGS = 100
"""A real answer has a handful of ## sections; thousands mean garbage (refused, without reading them all)."""
MAX_KEY_PRESSES = 50
"""Most Key actions one `press` may expand to (keys x presses)."""
_MAX_SECONDS = 60.0

# (module, function) -> (positional parameter names, keyword-only names)
_SIGNATURES: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("pyautogui", "click"): (("x", "y", "clicks", "interval", "button", "duration"), ()),
    ("pyautogui", "doubleClick"): (("x", "y", "interval", "button", "duration"), ()),
    ("pyautogui", "tripleClick"): (("x", "y", "interval", "button", "duration"), ()),
    ("pyautogui", "rightClick"): (("x", "y", "interval", "duration"), ()),
    ("pyautogui", "middleClick"): (("x", "y", "interval", "duration"), ()),
    ("pyautogui", "moveTo"): (("x", "y", "duration"), ()),
    ("pyautogui", "dragTo"): (("x", "y", "duration"), ("button",)),
    ("pyautogui", "scroll"): (("clicks", "x", "y"), ()),
    ("pyautogui", "hscroll"): (("clicks", "x", "y"), ()),
    ("pyautogui", "write"): (("message", "interval"), ()),
    ("pyautogui", "typewrite"): (("message", "interval"), ()),
    ("pyautogui", "press"): (("keys", "presses", "interval"), ()),
    ("pyautogui", "hotkey"): ((), ("keys", "interval")),  # plus *keys, handled below
    ("computer", "triple_click"): (("x", "y"), ()),
    ("computer", "wait"): (("seconds",), ()),
    ("computer", "terminate"): (("status", "answer"), ()),
}
ALLOWED_CALLS = frozenset(f"{m}.{f}" for m, f in _SIGNATURES)

_CODE_LANGS = {"", "python", "py", "python3", "code"}
# Possessive quantifiers (*+): a fence opener with no newline after it ("```" + 100k letters) must
# fail in one pass, not backtrack through every split of the tag (measured quadratic before).
_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+.-]*+)[^\n`]*+\n(.*?)(?:```|\Z)", re.S)
_HEADING = re.compile(  # the lookahead lets most lines fail on their first character
    r"^(?=[ \t#]*+[otac])[ \t]*+(?P<hash>#{1,6}[ \t]*+)?(?P<name>observation|thought|action|code)\b[ \t]*+"
    r"(?P<colon>:)?[ \t]*+(?P<rest>[^\n]*+)$",
    re.M | re.I,
)


class _Reject(Exception):
    """A reason to refuse the code block (internal control flow only)."""


def parse(text: str, *, convention: Convention | str, sent_size: Size, captured_size: Size,
          max_statements: int = MAX_STATEMENTS) -> ParsedOutput:
    """Parse one OpenCUA answer; never raises, never executes anything."""
    return run_parser("OpenCUA", _parse, text, convention, sent_size, captured_size, max_statements)


def _parse(visible: str, reasoning: str | None, convention: Any, sent_size: Any, captured_size: Any,
           max_statements: int) -> ParsedOutput:
    try:
        sections, code = _split(visible)
    except _Reject as exc:
        return ParsedOutput(None, [problem(f"not an OpenCUA answer: {exc}", visible)], reasoning, None)
    thought = sections.get("thought") or sections.get("action") or None
    if code is None:
        msg = ("no code found: expected a ```python block (or a '## Code' section) with "
               "pyautogui.* or computer.* calls")
        return ParsedOutput(thought, [problem(msg, visible)], reasoning, None)
    setup = check_setup(convention, sent_size, captured_size)
    if setup is not None:
        return ParsedOutput(thought, [problem(setup)], reasoning, code)
    try:
        actions = _code_to_actions(code, convention, sent_size, captured_size, max_statements)
    except _Reject as exc:
        actions = [problem(f"rejected OpenCUA code: {exc}", code)]
    return ParsedOutput(thought, actions, reasoning, code)


# --- sections and code -------------------------------------------------------


def _split(text: str) -> tuple[dict[str, str], str | None]:
    """Sections (lower-case name -> text) and the code to parse (or None)."""
    lines = text.count("\n") + 1
    if lines > MAX_LINES:
        raise _Reject(f"{lines} lines (a real answer has tens; limit {MAX_LINES})")
    fences = list(_FENCE.finditer(text))
    starts = [m.start() for m in fences]  # fences never overlap, so starts and ends are both sorted

    # Only the last heading of each name matters ("the last one wins") and its body runs to the next
    # heading: keep (start, end, name, rest) tuples, one pass, no per-heading work beyond the filter.
    heads: list[tuple[int, int, str, str]] = []
    for m in _HEADING.finditer(text):
        at = m.start()
        i = bisect.bisect_right(starts, at) - 1  # the one fence that could hold it: linear, not n x m
        if i >= 0 and at < fences[i].end():
            continue  # a comment inside code is not a heading
        hashes, name, colon, rest = m.group("hash", "name", "colon", "rest")
        if not colon and (not hashes or rest.strip()):
            continue  # "Action items ..." in prose; "## Thought process" is a different heading
        heads.append((at, m.end(), name, rest))
        if len(heads) > MAX_HEADINGS:  # bounded Python work per answer, whatever its shape
            raise _Reject(f"more than {MAX_HEADINGS} section headings")
    last: dict[str, int] = {}
    for i, h in enumerate(heads):
        last[h[2].lower()] = i  # the last one of a name wins
    sections: dict[str, str] = {}
    for name, i in last.items():
        end = heads[i + 1][0] if i + 1 < len(heads) else len(text)
        sections[name] = (heads[i][3] + text[heads[i][1]:end]).strip()

    code = next((m.group(2) for m in reversed(fences) if m.group(1).lower() in _CODE_LANGS), None)
    if code is not None:
        return sections, code.strip()
    if "code" in sections and sections["code"]:
        return sections, sections["code"].strip().strip("`").strip()
    bare = text.strip()
    if bare.startswith(("pyautogui.", "computer.")):
        return sections, bare
    return sections, None


# --- the code ------------------------------------------------------------------


def _code_to_actions(code: str, convention: Any, sent: Size, captured: Size,
                     max_statements: int) -> list[_Action | ActionProblem]:
    if not code:
        raise _Reject("the code block is empty")
    if len(code) > MAX_CODE_CHARS:
        raise _Reject(f"the code block is {len(code)} chars (limit {MAX_CODE_CHARS})")
    _check_identifiers(code)
    try:
        with warnings.catch_warnings():  # "SyntaxWarning: invalid decimal literal" would reach the user's terminal
            warnings.simplefilter("ignore")
            tree = ast.parse(code, mode="exec")  # parse only: nothing is compiled to run
    except SyntaxError as exc:
        raise _Reject(f"not valid Python ({exc.msg}, line {exc.lineno})") from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise _Reject(f"not parseable Python ({type(exc).__name__}: {exc})") from None
    body = tree.body
    if not body:
        raise _Reject("the code block has no statement")
    if len(body) > max_statements:
        raise _Reject(f"{len(body)} statements in one code block (limit {max_statements})")
    actions: list[_Action | ActionProblem] = []
    i = 0
    while i < len(body):  # every statement is checked before any action leaves the parser
        pair = i + 1 < len(body) and [_shape(s) for s in body[i:i + 2]] == [("pyautogui", "moveTo"),
                                                                              ("pyautogui", "dragTo")]
        where = _numbered(i, len(body), pair)
        try:
            if pair:
                step = [_drag(_call_of(body[i], code), _call_of(body[i + 1], code), convention, sent, captured, code)]
            else:
                step = _one_call(_call_of(body[i], code), convention, sent, captured, code)
        except _Reject as exc:
            raise _Reject(f"{where}{exc}") from None
        bad = [a for a in step if isinstance(a, ActionProblem)]
        if bad:  # the schema refused one: the block is refused whole, with that reason
            raise _Reject(f"{where}{bad[0].message}")
        actions.extend(step)
        i += 2 if pair else 1
    return actions


def _numbered(i: int, n: int, pair: bool) -> str:
    """How a refusal names the statement(s) it is about; nothing when the block has one statement."""
    if n == 1:
        return ""
    return f"statements {i + 1}-{i + 2} of {n}: " if pair else f"statement {i + 1} of {n}: "


def _shape(stmt: ast.stmt) -> tuple[str, str] | None:
    """(module, function) when `stmt` is `module.function(...)`, else None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            return f.value.id, f.attr
    return None


_MAX_TOKENS = 500
"""Tokens read when looking for non-ASCII names (a few pyautogui calls have a few dozen each)."""


def _check_identifiers(code: str) -> None:
    """Refuse non-ASCII identifiers as written (before `ast` normalizes them).

    Python's tokenizer is pure Python (~15 µs a token), so it runs only when
    the code has a non-ASCII character at all, and reads at most _MAX_TOKENS.
    """
    if code.isascii():
        return
    try:
        for n, tok in enumerate(tokenize.generate_tokens(io.StringIO(code).readline)):
            if n >= _MAX_TOKENS:
                raise _Reject(f"more than {_MAX_TOKENS} tokens in the code block (one call has a few dozen)")
            if tok.type == tokenize.NAME and not tok.string.isascii():
                raise _Reject(
                    f"identifier {tok.string!r} contains non-ASCII characters "
                    f"(a lookalike of an allowed name?)"
                )
            if tok.type == tokenize.ERRORTOKEN and not tok.string.isspace() and not tok.string.isascii():
                raise _Reject(f"unexpected character {tok.string!r} in code")
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass  # ast.parse reports syntax errors with a better message


_Call = tuple[str, dict[str, Any], ast.Call]


def _call_of(stmt: ast.stmt, code: str) -> _Call:
    """(dotted name, bound literal arguments, node) of an allowlisted call statement."""
    if not isinstance(stmt, ast.Expr):
        raise _Reject(f"only a call is allowed, got a {_describe(stmt)}")
    call = stmt.value
    if not isinstance(call, ast.Call):
        raise _Reject(f"only a call is allowed, got {_describe(call)}")
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        raise _Reject(
            f"the called object must be a plain module.function name, got {_describe(func)}; "
            f"allowed: {', '.join(sorted(ALLOWED_CALLS))}"
        )
    name = f"{func.value.id}.{func.attr}"
    key = (func.value.id, func.attr)
    if key not in _SIGNATURES:
        raise _Reject(f"{name} is not an allowed call; allowed: {', '.join(sorted(ALLOWED_CALLS))}")
    written = ast.get_source_segment(code, func)
    if written is None or re.sub(r"\s+", "", written) != name:
        raise _Reject(f"the call name is written as {written!r}, not exactly {name!r}")
    return name, _bind(name, key, call), call


def _bind(name: str, key: tuple[str, str], call: ast.Call) -> dict[str, Any]:
    positional, keyword_only = _SIGNATURES[key]
    args: dict[str, Any] = {}
    if name == "pyautogui.hotkey":
        keys = [_literal(a, f"{name} key {i + 1}") for i, a in enumerate(call.args)]
        if keys:
            args["*keys"] = keys
    else:
        if len(call.args) > len(positional):
            raise _Reject(
                f"{name} takes at most {len(positional)} positional arguments "
                f"({', '.join(positional) or 'none'}), got {len(call.args)}"
            )
        for pname, node in zip(positional, call.args):
            args[pname] = _literal(node, f"{name} argument {pname}")
    allowed = set(positional) | set(keyword_only)
    for kw in call.keywords:
        if kw.arg is None:
            raise _Reject(f"{name}: **kwargs are not allowed")
        if kw.arg not in allowed:
            raise _Reject(
                f"{name} has no keyword {kw.arg!r}; allowed: {', '.join(sorted(allowed)) or 'none'}"
            )
        if kw.arg in args:
            raise _Reject(f"{name}: argument {kw.arg!r} given twice")
        args[kw.arg] = _literal(kw.value, f"{name} argument {kw.arg}")
    return args


def _literal(node: ast.AST, where: str) -> Any:
    """The value of a literal argument, or _Reject saying what it was instead."""
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or v is None or not isinstance(v, (int, float, str)):
            raise _Reject(f"{where}: {v!r} is not an allowed literal (numbers, strings, lists of strings)")
        if isinstance(v, (int, float)):
            return _number(v, where)
        return v
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = node.operand
        if (
            isinstance(inner, ast.Constant)
            and isinstance(inner.value, (int, float))
            and not isinstance(inner.value, bool)
        ):
            v = _number(inner.value, where)
            return -v if isinstance(node.op, ast.USub) else v
        raise _Reject(f"{where}: a sign may only precede a number literal, got {_describe(inner)}")
    if isinstance(node, (ast.List, ast.Tuple)):
        if len(node.elts) > 10:
            raise _Reject(f"{where}: a list of {len(node.elts)} items (limit 10)")
        out = []
        for elt in node.elts:
            if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
                raise _Reject(f"{where}: list items must be string literals, got {_describe(elt)}")
            out.append(elt.value)
        return out
    raise _Reject(f"{where}: only literals are allowed, got {_describe(node)}")


def _number(v: int | float, where: str) -> int | float:
    if isinstance(v, int):
        if abs(v) > MAX_NUMBER:
            raise _Reject(f"{where}: number too large (|v| > {MAX_NUMBER})")
        return v
    if not math.isfinite(v) or abs(v) > MAX_NUMBER:
        raise _Reject(f"{where}: {v!r} is not a plausible number (|v| <= {MAX_NUMBER})")
    return v


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"a variable name ({node.id})"
    if isinstance(node, ast.Call):
        return "a function call"
    if isinstance(node, ast.Attribute):
        return f"attribute access (.{node.attr})"
    if isinstance(node, ast.Subscript):
        return "a subscript"
    if isinstance(node, ast.JoinedStr):
        return "an f-string"
    if isinstance(node, ast.Starred):
        return "*args"
    if isinstance(node, ast.Constant):
        return f"the constant {node.value!r}"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "import statement"
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return "assignment"
    return f"{type(node).__name__} expression" if isinstance(node, ast.expr) else f"{type(node).__name__} statement"


# --- mapping to actions -------------------------------------------------------


def _point(name: str, args: dict[str, Any], convention: Any, sent: Size, captured: Size,
           required: bool = True) -> tuple[float, float] | None:
    has_x, has_y = "x" in args, "y" in args
    if not has_x and not has_y:
        if required:
            raise _Reject(
                f"{name} needs x and y (acting wherever the pointer happens to be cannot be checked)"
            )
        return None
    if has_x != has_y:
        raise _Reject(f"{name} needs both x and y, got only {'x' if has_x else 'y'}")
    mapped = map_point(args["x"], args["y"], convention, sent, captured, what=name)
    if isinstance(mapped, str):
        raise _Reject(mapped)
    return mapped


def _seconds(name: str, args: dict[str, Any], *params: str) -> None:
    for p in params:
        if p in args:
            v = args[p]
            if not isinstance(v, (int, float)) or not 0 <= v <= _MAX_SECONDS:
                raise _Reject(f"{name}: {p} must be a number of seconds in 0..{_MAX_SECONDS:g}, got {v!r}")


def _button(name: str, args: dict[str, Any]) -> str:
    b = args.get("button", "left")
    if b not in ("left", "right", "middle"):
        raise _Reject(f"{name}: button must be 'left', 'right' or 'middle', got {b!r}")
    return b


def _int(name: str, param: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or not lo <= v <= hi:
        raise _Reject(f"{name}: {param} must be a whole number in {lo}..{hi}, got {v!r}")
    return v


def _string(name: str, param: str, v: Any) -> str:
    if not isinstance(v, str):
        raise _Reject(f"{name}: {param} must be a string, got {v!r}")
    return v


def _keys(name: str, v: Any, combo: bool = False) -> list[str]:
    keys = [v] if isinstance(v, str) else v
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
        raise _Reject(f"{name}: keys must be a non-empty key name or list of key names, got {v!r}")
    return [normalize_key(k, combo=combo and len(keys) > 1) for k in keys]


_POINTER_CALLS = ("click", "doubleClick", "tripleClick", "triple_click", "rightClick", "middleClick", "moveTo")


def _one_call(parsed: _Call, convention: Any, sent: Size, captured: Size, code: str) -> list[_Action | ActionProblem]:
    name, args, _node = parsed
    fn = name.split(".", 1)[1]
    _seconds(name, args, "duration", "interval")
    if fn in _POINTER_CALLS:
        x, y = _point(name, args, convention, sent, captured)  # type: ignore[misc]
        return [build_action(_pointer_fields(name, fn, args, x, y), code)]
    if fn in ("scroll", "hscroll"):
        return [build_action(_scroll_fields(name, fn, args, convention, sent, captured), code)]
    fields_of = _CALL_FIELDS.get(fn)
    if fields_of is None:
        raise _Reject(f"{name} is not mapped to an action")  # pragma: no cover - table and code agree
    return [build_action(fields, code) for fields in fields_of(name, args)]


def _pointer_fields(name: str, fn: str, args: dict[str, Any], x: Any, y: Any) -> dict[str, Any]:
    """A click, multi-click or move at (x, y) in captured pixels."""
    if fn == "click":
        clicks = _int(name, "clicks", args.get("clicks", 1), 1, 3)
        button = _button(name, args)
        if clicks == 1:
            return {"type": "click", "x": x, "y": y, "button": button}
        if button != "left":
            raise _Reject(f"{name}: {clicks} clicks are only supported with the left button")
        return {"type": "double_click" if clicks == 2 else "triple_click", "x": x, "y": y}
    if fn in ("doubleClick", "tripleClick"):
        if _button(name, args) != "left":
            raise _Reject(f"{name}: only the left button is supported")
        return {"type": "double_click" if fn == "doubleClick" else "triple_click", "x": x, "y": y}
    if fn == "triple_click":
        return {"type": "triple_click", "x": x, "y": y}
    if fn == "rightClick":
        return {"type": "right_click", "x": x, "y": y}
    if fn == "middleClick":
        return {"type": "click", "x": x, "y": y, "button": "middle"}
    return {"type": "move", "x": x, "y": y}


def _scroll_fields(name: str, fn: str, args: dict[str, Any], convention: Any, sent: Size,
                   captured: Size) -> dict[str, Any]:
    if "clicks" not in args:
        raise _Reject(f"{name} needs the number of clicks")
    clicks = _int(name, "clicks", args["clicks"], -100, 100)
    point = _point(name, args, convention, sent, captured, required=False)
    scroll: dict[str, Any] = {"type": "scroll", ("dy" if fn == "scroll" else "dx"): clicks}
    if point is not None:
        scroll["x"], scroll["y"] = point
    return scroll


def _drag_to(name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    raise _Reject(
        "pyautogui.dragTo drags from the current pointer position, which is unknown here; "
        "write pyautogui.moveTo(x1, y1) directly before pyautogui.dragTo(x2, y2)"
    )


def _write(name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    if "message" not in args:
        raise _Reject(f"{name} needs the text to type (message)")
    return [{"type": "type", "text": _string(name, "message", args["message"])}]


def _press(name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    if "keys" not in args:
        raise _Reject(f"{name} needs the key(s) to press")
    keys = _keys(name, args["keys"])
    presses = _int(name, "presses", args.get("presses", 1), 1, MAX_KEY_PRESSES)
    if len(keys) * presses > MAX_KEY_PRESSES:
        raise _Reject(f"{name}: {len(keys)} keys x {presses} presses is more than {MAX_KEY_PRESSES} key presses")
    return [{"type": "key", "key": k} for _ in range(presses) for k in keys]


def _hotkey(name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    if "*keys" in args and "keys" in args:
        raise _Reject(f"{name}: give the keys either as arguments or as keys=[...], not both")
    raw_keys = args.get("*keys", args.get("keys"))
    if raw_keys is None:
        raise _Reject(f"{name} needs the keys")
    if "*keys" in args:  # hotkey('ctrl', 'c'): each argument one key name
        if len(raw_keys) == 1 and isinstance(raw_keys[0], list):
            raw_keys = raw_keys[0]  # hotkey(['ctrl', 'c']), as pyautogui also accepts
        elif not all(isinstance(k, str) for k in raw_keys):
            raise _Reject(f"{name}: each key must be a string, got {raw_keys!r}")
    return [{"type": "hotkey", "keys": _keys(name, raw_keys, combo=True)}]


def _wait(name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    wait: dict[str, Any] = {"type": "wait"}
    if "seconds" in args:
        s = args["seconds"]
        if not isinstance(s, (int, float)) or not 0 <= s <= 3600:
            raise _Reject(f"{name}: seconds must be a number in 0..3600, got {s!r}")
        wait["seconds"] = s
    return [wait]


def _terminate(name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    status = args.get("status")
    if not isinstance(status, str) or status.strip().lower() not in ("success", "failure", "fail"):
        raise _Reject(f"{name}: status must be 'success' or 'failure', got {status!r}")
    answer = args.get("answer", "")
    if not isinstance(answer, str):
        answer = str(answer)
    done = status.strip().lower() == "success"
    return [{"type": "finish", "status": "DONE" if done else "FAIL", "message": answer}]


_CALL_FIELDS: dict[str, Callable[[str, dict[str, Any]], list[dict[str, Any]]]] = {
    "dragTo": _drag_to, "write": _write, "typewrite": _write, "press": _press, "hotkey": _hotkey, "wait": _wait,
    "terminate": _terminate,
}
"""Each call without a point -> the action fields it stands for (a `_Reject` naming what is wrong)."""


def _drag(move: _Call, drag: _Call, convention: Any, sent: Size, captured: Size, code: str) -> _Action | ActionProblem:
    mname, margs, _ = move
    dname, dargs, _ = drag
    _seconds(mname, margs, "duration")
    _seconds(dname, dargs, "duration")
    if _button(dname, dargs) != "left":
        raise _Reject(f"{dname}: only left-button drags are supported")
    x, y = _point(mname, margs, convention, sent, captured)  # type: ignore[misc]
    tx, ty = _point(dname, dargs, convention, sent, captured)  # type: ignore[misc]
    return build_action({"type": "drag", "x": x, "y": y, "to_x": tx, "to_y": ty}, code)
