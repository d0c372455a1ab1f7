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

from conway.actions import ACTION_TYPES, KEY_CHOICES, KeyNameRule, _Action
from conway.geometry import Convention, Size

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

_JSON_CHAR = (r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | '
              r'[dD] [0-7] [0-9a-fA-F]{2}))')
"""One JSON string character; a \\u escape never names a lone surrogate (D800–DFFF: not valid text)."""
_COORD_FIELDS = {"x": "x", "y": "y", "to_x": "x", "to_y": "y"}
URL_TAIL_MAX_CHARS = 500
"""Longest path, query and fragment a grammar's URL may have (the host has its own bound)."""
_URL_RULES = [
    # what the browser tool opens (`conway.tools.browser.check_url`): an http(s) URL with a host, a file URL with
    # a path; written as a subset (lowercase schemes, printable ASCII without quote or backslash, no user part,
    # no bracketed host) so that no escape or odd character can reach the check
    r'url ::= "\"" ("http" "s"? "://" url-host (":" [0-9]{1,5})? ([/?#] url-char{0,'
    f'{URL_TAIL_MAX_CHARS}}})? | "file:///" url-char{{0,{URL_TAIL_MAX_CHARS}}})' r' "\""',
    "url-host ::= [a-zA-Z0-9] [a-zA-Z0-9.-]{0,252}",
    r"url-char ::= [\x21\x23-\x5B\x5D-\x7E]",
]
_FIELD_RULES = {("open_browser", "url"): "url"}
"""Fields whose validity is checked beyond their type (by the tool that runs the action): their own rule."""
_JSON_VALUE_RULES = [
    'json-object ::= "{" ( json-string ": " json-value ( ", " json-string ": " json-value ){0,31} )? "}"',
    'json-array ::= "[" ( json-value ( ", " json-value ){0,63} )? "]"',
    'json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"',
    f'json-string ::= "\\"" char{{0,{TEXT_MAX_CHARS}}} "\\""',
    'json-number ::= "-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?',  # no leading 0s
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
    top = Convention(convention).rule.integer_range(sent_size, captured_size)
    if top is not None:
        return {"x": int_range(0, top[0]), "y": int_range(0, top[1])}
    rel = '("0" ("." [0-9] [0-9]? [0-9]?)? | "1" (".0" "0"? "0"?)?)'  # a fraction 0..1, three decimals at most
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


def _is_key_name(metadata: Any) -> bool:
    return any(isinstance(m, KeyNameRule) for m in metadata or ())


def _number_range(bounds: dict[str, Any]) -> tuple[int, int]:
    """Integer bounds the grammar may write; an exclusive bound moves inward (a subset of the valid range)."""
    import math

    lo = math.ceil(bounds["ge"]) if "ge" in bounds else (math.floor(bounds["gt"]) + 1 if "gt" in bounds else -(10**6))
    hi = math.floor(bounds["le"]) if "le" in bounds else (math.ceil(bounds["lt"]) - 1 if "lt" in bounds else 10**6)
    return lo, hi


def _value_rule(name: str, field: str, info: FieldInfo, coord_rules: dict[str, str]) -> str:
    """GBNF expression for one field's value (always inside what the action's validator accepts)."""
    if field in _COORD_FIELDS:
        return f"coord-{_COORD_FIELDS[field]}"
    if (name, field) in _FIELD_RULES:
        return _FIELD_RULES[name, field]
    annotation, _ = _annotation_parts(info.annotation)
    bounds = _bounds(info)
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return "(" + " | ".join(literal(json.dumps(v)) for v in typing.get_args(annotation)) + ")"
    if annotation is str and _is_key_name(info.metadata):
        return "keyname"
    if annotation is str:
        hi = min(int(bounds.get("max_length", TEXT_MAX_CHARS)), TEXT_MAX_CHARS)
        lo = int(bounds.get("min_length", 0))
        return _json_string(hi, lo)
    if annotation is int or annotation is float:
        lo, hi = _number_range(bounds)
        expr = int_range(lo, hi)
        if annotation is float and hi > lo:  # a fraction only below the upper bound
            expr = f"({expr}) | ({int_range(lo, hi - 1)}) \".\" [0-9] [0-9]?"
        return f"({expr})"
    if origin is dict:  # free JSON arguments (an MCP tool's; its own schema is checked after parsing)
        return "json-object"
    if origin is list:
        (item,) = typing.get_args(annotation)
        inner = typing.get_args(item)[0] if typing.get_origin(item) is typing.Annotated else item
        item_bounds = _inner_bounds(item)
        if inner is not str:
            raise TypeError(f"{name}.{field}: lists of {inner} are not supported")
        if _is_key_name(getattr(item, "__metadata__", ())):
            item_rule = "keyname"
        else:
            item_rule = _json_string(min(int(item_bounds.get("max_length", 40)), TEXT_MAX_CHARS),
                                     int(item_bounds.get("min_length", 0)))
        lo = int(bounds.get("min_length", 0))
        hi = int(bounds.get("max_length", 8))
        if lo < 1:
            raise TypeError(f"{name}.{field}: empty lists are not supported by the grammar")
        return f'"[" {item_rule} (", " {item_rule}){{{lo - 1},{hi - 1}}} "]"'
    raise TypeError(f"{name}.{field}: no grammar for type {annotation!r}")


def _action_rule(name: str, cls: type[_Action], coord_rules: dict[str, str]) -> str:
    """One action's JSON, fields in schema order; the class's cross-field rules shape the optional ones.

    `paired` fields are written together or not at all; of `one_nonzero` fields at least one is
    written, non-zero (one alternative per leading field, the ones before it left out).
    """
    paired = {f: pair for pair in cls.paired for f in pair}
    nonzero = list(cls.one_nonzero)

    def piece(field: str, value: str) -> str:
        return f'{literal(", " + json.dumps(field) + ": ")} {value}'

    def fields_rule(lead: str | None) -> str:
        body: list[str] = []
        done: set[str] = set()
        for field, info in cls.model_fields.items():
            if field == "type" or field in done:
                continue
            if field in nonzero and lead is not None:
                if nonzero.index(field) < nonzero.index(lead):
                    continue  # zero: left out
                if field == lead:
                    lo, hi = _number_range(_bounds(info))
                    body.append(piece(field, f"({int_range(lo, -1)} | {int_range(1, hi)})"))
                    continue
            if field in paired:
                group = paired[field]
                done.update(group)
                joined = " ".join(piece(f, _value_rule(name, f, cls.model_fields[f], coord_rules)) for f in group)
                required = all(cls.model_fields[f].is_required() for f in group)
                body.append(joined if required else f"({joined})?")
                continue
            value = _value_rule(name, field, info, coord_rules)
            body.append(piece(field, value) if info.is_required() else f"({piece(field, value)})?")
        return " ".join(body)

    head = literal('{"type": ' + json.dumps(name))
    if nonzero:
        alts = " | ".join(f"({fields_rule(lead)})" for lead in nonzero)
        return f'{head} ({alts}) "}}"'
    return f'{head} {fields_rule(None)} "}}"'.replace("  ", " ")


def key_name_rule(choices: tuple[str, ...] = KEY_CHOICES) -> str:
    """GBNF for a JSON string holding one accepted key name (the validator's key set)."""
    return "keyname ::= " + " | ".join(literal(json.dumps(k)) for k in choices)


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
    if "open_browser" in names:
        lines += _URL_RULES
    lines.append(f"char ::= {_JSON_CHAR}")
    lines.append(key_name_rule())
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
    "scroll": f'"pyautogui.scroll(" ({int_range(-20, -1)} | {int_range(1, 20)}) ")"',  # 0 scrolls nothing
    "wait": f'"computer.wait(seconds=" ({int_range(1, 30)}) ")"',
    "finish": "\"computer.terminate(status='\" (\"success\" | \"failure\") \"')\"",
}

_BOX = "\"'(\" coord-x \",\" coord-y \")'\""
_UITARS_CALLS = {  # in the order the alternatives appear in the grammar
    "click": f'"click(start_box=" {_BOX} ")"',
    "double_click": f'"left_double(start_box=" {_BOX} ")"',
    "right_click": f'"right_single(start_box=" {_BOX} ")"',
    "drag": f'"drag(start_box=" {_BOX} ", end_box=" {_BOX} ")"',
    "hotkey": "\"hotkey(key='\" keyname \" \" keyname \"')\"",
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
        extra_rules=(f"keyname ::= {_plain_key_names()}",),
    )


def uitars_grammar(action_types: list[str] | None, *, convention: Convention | str,
                   sent_size: Size, captured_size: Size,
                   thought_max_chars: int = THOUGHT_MAX_CHARS) -> str:
    """GBNF for a UI-TARS answer: ``Thought: …`` then ``Action: <one call>``."""
    coords = _coord_rules(convention, sent_size, captured_size)
    return _call_grammar(
        _UITARS_CALLS, action_types, coords=coords, thought_max_chars=thought_max_chars, family="a UI-TARS",
        root='root ::= "Thought: " prose "\\nAction: " call',
        extra_rules=(f"keyname ::= {_plain_key_names()}",),
    )


def _plain_key_names() -> str:
    """Alternatives for the key names that are plain lowercase letters and digits (safe inside quotes)."""
    names = [k for k in KEY_CHOICES if k.isascii() and k.isalnum() and k == k.lower()]
    return " | ".join(literal(k) for k in names)
