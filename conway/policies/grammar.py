"""GBNF grammars (llama.cpp's grammar format) that constrain a model to answers our parsers accept.

Three shapes, one per adapter family:

* `action_json_grammar` — the generic adapter's wrapped JSON
  ``{"thought": "…", "action": {"type": …, …}}`` generated from the action
  classes in `conway.actions`, limited to the action types the tools can run
  here. Unlike llama.cpp's JSON-schema converter, numeric bounds are enforced:
  a coordinate can only be written inside the image that was sent (in the
  adapter's convention), wheel clicks inside ±100, and so on. Keys come in a
  fixed order, optional fields may be left out, strings are bounded.
* `opencua_grammar` — ``## Thought:`` / ``## Action:`` / ``## Code:`` with one
  allowlisted pyautogui/computer call in a python fence.
* `uitars_grammar` — ``Thought: …`` / ``Action: click(start_box='(x,y)')``.

The grammars are data handed to the inference engine; nothing here runs model
output. A grammar only narrows what the model may write: every answer is still
parsed and validated by the adapter's parser.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal

from pydantic.fields import FieldInfo

from ..actions import ACTION_TYPES, _Action
from ..geometry import Convention, Size

__all__ = [
    "int_range",
    "action_json_grammar",
    "opencua_grammar",
    "uitars_grammar",
    "literal",
    "THOUGHT_MAX_CHARS",
    "TEXT_MAX_CHARS",
]

THOUGHT_MAX_CHARS = 400
"""Longest thought a grammar allows (keeps a rambling model's decode bounded)."""
TEXT_MAX_CHARS = 800
"""Longest free-text field (typed text, paths, commands) a grammar allows."""

_JSON_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
_COORD_FIELDS = {"x": "x", "y": "y", "to_x": "x", "to_y": "y"}
_JSON_VALUE_RULES = [
    'json-object ::= "{" ( json-string ": " json-value ( ", " json-string ": " json-value ){0,31} )? "}"',
    'json-array ::= "[" ( json-value ( ", " json-value ){0,63} )? "]"',
    'json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"',
    f'json-string ::= "\\"" char{{0,{TEXT_MAX_CHARS}}} "\\""',
    'json-number ::= "-"? [0-9]{1,15} ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?',
]


def literal(text: str) -> str:
    """A GBNF string literal matching `text` exactly."""
    out = []
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


# --- integer ranges ------------------------------------------------------------


def _same_length(lo: str, hi: str) -> list[list[str]]:
    """Sequences of character classes matching exactly the numbers lo..hi (equal digit counts)."""
    n = len(lo)
    if lo == "0" * n and hi == "9" * n:
        return [["[0-9]"] * n]
    if n == 1:
        return [[f"[{lo}-{hi}]" if lo != hi else f'"{lo}"']]
    if lo[1:] == "0" * (n - 1) and hi[1:] == "9" * (n - 1):
        head = f"[{lo[0]}-{hi[0]}]" if lo[0] != hi[0] else f'"{lo[0]}"'
        return [[head] + ["[0-9]"] * (n - 1)]
    if lo[0] == hi[0]:
        return [[f'"{lo[0]}"'] + rest for rest in _same_length(lo[1:], hi[1:])]
    parts = [[f'"{lo[0]}"'] + rest for rest in _same_length(lo[1:], "9" * (n - 1))]
    a, b = int(lo[0]) + 1, int(hi[0]) - 1
    if a <= b:
        parts.append([f"[{a}-{b}]" if a != b else f'"{a}"'] + ["[0-9]"] * (n - 1))
    parts += [[f'"{hi[0]}"'] + rest for rest in _same_length("0" * (n - 1), hi[1:])]
    return parts


def int_range(lo: int, hi: int) -> str:
    """A GBNF expression matching the decimal integers lo..hi (no leading zeros, '-' for negatives)."""
    if lo > hi:
        raise ValueError(f"empty integer range {lo}..{hi}")
    alts: list[str] = []
    if lo < 0:
        neg_hi = -lo
        neg_lo = max(1, -hi) if hi < 0 else 1
        alts.append('"-" (' + _nonneg_range(neg_lo, neg_hi) + ")")
    if hi >= 0:
        alts.append(_nonneg_range(max(lo, 0), hi))
    return alts[0] if len(alts) == 1 else "(" + " | ".join(f"({a})" for a in alts) + ")"


def _nonneg_range(lo: int, hi: int) -> str:
    seqs: list[list[str]] = []
    for digits in range(len(str(lo)), len(str(hi)) + 1):
        d_lo = max(lo, 10 ** (digits - 1) if digits > 1 else 0)
        d_hi = min(hi, 10**digits - 1)
        if d_lo <= d_hi:
            seqs += _same_length(str(d_lo), str(d_hi))
    return " | ".join(" ".join(s) for s in seqs)


# --- coordinates in a convention -------------------------------------------------


def _coord_rules(convention: Convention | str, sent_size: Size, captured_size: Size) -> dict[str, str]:
    """GBNF for x and y in the model's convention, inside the image."""
    c = Convention(convention)
    if c in (Convention.ABSOLUTE, Convention.SCREEN):
        w, h = sent_size if c is Convention.ABSOLUTE else captured_size
        return {"x": int_range(0, w - 1), "y": int_range(0, h - 1)}
    if c is Convention.RELATIVE1000:
        return {"x": int_range(0, 1000), "y": int_range(0, 1000)}
    rel = '("0" ("." [0-9] [0-9]? [0-9]?)? | "1" (".0" "0"? "0"?)?)'
    return {"x": rel, "y": rel}


# --- the generic adapter's JSON ----------------------------------------------------


def _json_string(max_chars: int, min_chars: int = 0) -> str:
    return f'"\\"" char{{{min_chars},{max_chars}}} "\\""'


def _annotation_parts(annotation: Any) -> tuple[Any, bool]:
    """(inner type, optional?) of an annotation like `float | None`."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), len(args) < len(typing.get_args(annotation))
    return annotation, False


def _bounds(info: FieldInfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in info.metadata:
        for key in ("ge", "gt", "le", "lt", "min_length", "max_length"):
            v = getattr(m, key, None)
            if v is not None:
                out[key] = v
    return out


def _inner_bounds(annotation: Any) -> dict[str, Any]:
    """Bounds carried inside Annotated[...] (e.g. the items of a list)."""
    out: dict[str, Any] = {}
    for m in getattr(annotation, "__metadata__", ()):
        if isinstance(m, FieldInfo):
            out.update(_bounds(m))
        else:
            for key in ("ge", "gt", "le", "lt", "min_length", "max_length"):
                v = getattr(m, key, None)
                if v is not None:
                    out[key] = v
    return out


def _value_rule(name: str, field: str, info: FieldInfo, coord_rules: dict[str, str]) -> str:
    """GBNF expression for one field's value."""
    if field in _COORD_FIELDS:
        return f"coord-{_COORD_FIELDS[field]}"
    annotation, _ = _annotation_parts(info.annotation)
    bounds = _bounds(info)
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return "(" + " | ".join(literal(json.dumps(v)) for v in typing.get_args(annotation)) + ")"
    if annotation is str:
        hi = min(int(bounds.get("max_length", TEXT_MAX_CHARS)), TEXT_MAX_CHARS)
        lo = int(bounds.get("min_length", 0))
        return _json_string(hi, lo)
    if annotation is int or annotation is float:
        lo = int(bounds.get("ge", bounds.get("gt", -(10**6))))
        hi = int(bounds.get("le", bounds.get("lt", 10**6)))
        expr = int_range(lo, hi)
        if annotation is float:
            expr = f"({expr}) (\".\" [0-9] [0-9]?)?"
        return f"({expr})"
    if origin is dict:  # free JSON arguments (an MCP tool's; its own schema is checked after parsing)
        return "json-object"
    if origin is list:
        (item,) = typing.get_args(annotation)
        inner = typing.get_args(item)[0] if typing.get_origin(item) is typing.Annotated else item
        item_bounds = _inner_bounds(item)
        if inner is not str:
            raise TypeError(f"{name}.{field}: lists of {inner} are not supported")
        item_rule = _json_string(min(int(item_bounds.get("max_length", 40)), TEXT_MAX_CHARS),
                                 int(item_bounds.get("min_length", 0)))
        lo = int(bounds.get("min_length", 0))
        hi = int(bounds.get("max_length", 8))
        if lo < 1:
            raise TypeError(f"{name}.{field}: empty lists are not supported by the grammar")
        return f'"[" {item_rule} (", " {item_rule}){{{lo - 1},{hi - 1}}} "]"'
    raise TypeError(f"{name}.{field}: no grammar for type {annotation!r}")


def _action_rule(name: str, cls: type[_Action], coord_rules: dict[str, str]) -> str:
    body = [literal('{"type": ' + json.dumps(name))]
    for field, info in cls.model_fields.items():
        if field == "type":
            continue
        value = _value_rule(name, field, info, coord_rules)
        piece = f'{literal(", " + json.dumps(field) + ": ")} {value}'
        body.append(piece if info.is_required() else f"({piece})?")
    body.append('"}"')
    return " ".join(body)


def action_json_grammar(action_types: list[str] | None, *, convention: Convention | str,
                        sent_size: Size, captured_size: Size,
                        thought_max_chars: int = THOUGHT_MAX_CHARS) -> str:
    """GBNF for ``{"thought": "…", "action": {…}}`` with one of `action_types` (None: all)."""
    names = [n for n in ACTION_TYPES if action_types is None or n in action_types]
    unknown = sorted(set(action_types or []) - set(ACTION_TYPES))
    if unknown:
        raise ValueError(f"unknown action types {unknown}; known: {', '.join(ACTION_TYPES)}")
    if not names:
        raise ValueError("no action types to build a grammar for")
    coords = _coord_rules(convention, sent_size, captured_size)
    lines = [
        'root ::= "{\\"thought\\": " thought ", \\"action\\": " action "}"',
        f"thought ::= {_json_string(thought_max_chars)}",
        "action ::= " + " | ".join(f"act-{n.replace('_', '-')}" for n in names),
    ]
    for n in names:
        lines.append(f"act-{n.replace('_', '-')} ::= {_action_rule(n, ACTION_TYPES[n], coords)}")
    lines.append(f"coord-x ::= {coords['x']}")
    lines.append(f"coord-y ::= {coords['y']}")
    if any("json-object" in line for line in lines):
        lines += _JSON_VALUE_RULES
    lines.append(f"char ::= {_JSON_CHAR}")
    return "\n".join(lines) + "\n"


# --- OpenCUA and UI-TARS text formats ------------------------------------------------

_LINE = r"[^\n`#]"  # prose without newlines, fences or section marks
_PY_CHAR = r"[^'\\\n\x00-\x1F]"


def _prose_rule(max_chars: int) -> str:
    return f"{_LINE}{{1,{max_chars}}}"


def _call_grammar(calls_by_type: dict[str, str], action_types: list[str] | None, *, root: str,
                  coords: dict[str, str], thought_max_chars: int, family: str,
                  extra_rules: tuple[str, ...] = ()) -> str:
    """GBNF for a prose-then-one-call answer; `calls_by_type` maps an action type to its call form."""
    allowed = set(action_types) if action_types is not None else set(ACTION_TYPES)
    calls = [form for name, form in calls_by_type.items() if name in allowed]
    if not calls:
        raise ValueError(f"none of the action types has {family} form")
    lines = [
        root,
        f"prose ::= {_prose_rule(thought_max_chars)}",
        "call ::= " + " | ".join(calls),
        *extra_rules,
        f"pychar ::= {_PY_CHAR}",
        f"coord-x ::= {coords['x']}",
        f"coord-y ::= {coords['y']}",
    ]
    return "\n".join(lines) + "\n"


_PT = '"x=" coord-x ", y=" coord-y'
_OPENCUA_CALLS = {  # in the order the alternatives appear in the grammar
    "click": f'"pyautogui.click(" {_PT} ")"',
    "double_click": f'"pyautogui.doubleClick(" {_PT} ")"',
    "right_click": f'"pyautogui.rightClick(" {_PT} ")"',
    "triple_click": f'"computer.triple_click(" {_PT} ")"',
    "move": f'"pyautogui.moveTo(" {_PT} ")"',
    "type": "\"pyautogui.write(message='\" pychar{1,200} \"')\"",
    "key": "\"pyautogui.press('\" keyname \"')\"",
    "hotkey": "\"pyautogui.hotkey('\" keyname \"', '\" keyname \"')\"",
    "scroll": f'"pyautogui.scroll(" ({int_range(-20, 20)}) ")"',
    "wait": f'"computer.wait(seconds=" ({int_range(1, 30)}) ")"',
    "finish": "\"computer.terminate(status='\" (\"success\" | \"failure\") \"')\"",
}

_BOX = "\"'(\" coord-x \",\" coord-y \")'\""
_UITARS_CALLS = {  # in the order the alternatives appear in the grammar
    "click": f'"click(start_box=" {_BOX} ")"',
    "double_click": f'"left_double(start_box=" {_BOX} ")"',
    "right_click": f'"right_single(start_box=" {_BOX} ")"',
    "drag": f'"drag(start_box=" {_BOX} ", end_box=" {_BOX} ")"',
    "hotkey": "\"hotkey(key='\" [a-z]{1,8} \" \" [a-z0-9]{1,8} \"')\"",
    "type": "\"type(content='\" pychar{1,200} \"')\"",
    "scroll": f"\"scroll(start_box=\" {_BOX} \", direction='\" (\"up\" | \"down\") \"')\"",
    "wait": '"wait()"',
    "finish": "\"finished(content='\" pychar{0,200} \"')\"",
}


def opencua_grammar(action_types: list[str] | None, *, convention: Convention | str,
                    sent_size: Size, captured_size: Size,
                    thought_max_chars: int = THOUGHT_MAX_CHARS) -> str:
    """GBNF for an OpenCUA L2 answer whose code is one allowlisted call."""
    coords = _coord_rules(convention, sent_size, captured_size)
    return _call_grammar(
        _OPENCUA_CALLS, action_types, coords=coords, thought_max_chars=thought_max_chars, family="an OpenCUA",
        root='root ::= "## Thought:\\n" prose "\\n\\n## Action:\\n" prose "\\n\\n## Code:\\n```python\\n" call "\\n```"',
        extra_rules=("keyname ::= [a-z0-9]{1,10}",),
    )


def uitars_grammar(action_types: list[str] | None, *, convention: Convention | str,
                   sent_size: Size, captured_size: Size,
                   thought_max_chars: int = THOUGHT_MAX_CHARS) -> str:
    """GBNF for a UI-TARS answer: ``Thought: …`` then ``Action: <one call>``."""
    coords = _coord_rules(convention, sent_size, captured_size)
    return _call_grammar(
        _UITARS_CALLS, action_types, coords=coords, thought_max_chars=thought_max_chars, family="a UI-TARS",
        root='root ::= "Thought: " prose "\\nAction: " call',
    )
