"""Parse a JSON action (or a list of them) out of a generic model's answer.

Where the JSON is looked for, in order:

1. the whole answer (after `<think>` blocks are removed) when it is JSON;
2. the last fenced block tagged ``json`` (or untagged) holding an object or list;
3. the first balanced ``{…}`` in prose that parses (a ``[{…}, …]`` list too).

No repair is attempted: a trailing comma, single quotes or a comment are
reported with the decoder's position (and a hint for the trailing comma).

Accepted shapes: one action ``{"type": "click", "x": …, "y": …}`` (the
`conway.actions` schema), a list of them, the wrapped form
``{"thought": "…", "action": {…}}`` (also ``"actions": […]``; other keys of the
wrapper are ignored), and the dialects unconstrained models write
(``{"action": "click", …}``, OpenAI tool calls, ``"coordinate": [x, y]``,
``"bbox"`` …), mapped by `dialects` beside it (its table). Coordinates of GUI actions (``x``/``y``, ``to_x``/``to_y``,
a scroll's optional ``x``/``y``) are in the model's convention and are mapped to
captured-screenshot pixels; a point outside the image sent is refused naming
the bounds.

`wrapped_schema()` gives the JSON schema of the wrapped form for servers that
constrain output with a schema.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import conway.policies.families.generic.dialects as dialects
from conway.actions import GUI_TYPES, ActionProblem, _Action, action_schema
from conway.geometry import Size
from conway.policies.parsed import (
    MAX_ACTIONS,
    ParsedOutput,
    build_action,
    check_setup,
    map_point,
    parser,
    problem,
)

__all__ = ["parse", "extract_json", "wrapped_schema", "NoJsonFound"]

_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+.-]*+)[^\n`]*+\n(.*?)```", re.S)  # possessive: no backtracking
_TRAILING_COMMA = re.compile(r",\s*[}\]]")
_MAX_PROSE_TRIES = 20
_POINTS = (("x", "y"), ("to_x", "to_y"))


class NoJsonFound(ValueError):
    pass


def _parse(visible: str, reasoning: str | None, convention: Any, sent_size: Any, captured_size: Any) -> ParsedOutput:
    try:
        value, start, end = extract_json(visible)
    except NoJsonFound as exc:
        return ParsedOutput(None, [problem(str(exc), visible)], reasoning)
    raw = visible[start:end]
    prose = (visible[:start] + " " + visible[end:]).strip() or None

    thought: str | None = prose
    try:
        wrapper_thought, items = dialects.unwrap(value)
    except dialects.DialectError as exc:
        return ParsedOutput(thought, [problem(str(exc), raw)], reasoning, raw)
    if wrapper_thought is not None:
        thought = wrapper_thought
    elif isinstance(value, dict) and value.get("thought") is not None and not isinstance(value["thought"], str):
        thought = json.dumps(value["thought"])
    if not items:
        return ParsedOutput(thought, [problem("no action in the JSON", raw)], reasoning, raw)
    if len(items) > MAX_ACTIONS:
        return ParsedOutput(thought, [problem(f"{len(items)} actions in one answer (limit {MAX_ACTIONS})", raw)],
                            reasoning, raw)
    setup = check_setup(convention, sent_size, captured_size)
    if setup is not None:
        return ParsedOutput(thought, [problem(setup)], reasoning, raw)
    actions = []
    for item in items:
        action, inline_thought = _action(item, convention, sent_size, captured_size)
        if thought is None and inline_thought is not None:
            thought = inline_thought
        actions.append(action)
    return ParsedOutput(thought, actions, reasoning, raw)


parse = parser("JSON", _parse, "Parse one generic-policy answer; never raises.")


def _action(item: Any, convention: Any, sent: Size, captured: Size) -> tuple[_Action | ActionProblem, str | None]:
    """One item in any accepted dialect → an action in captured pixels (or the problem), and its inline thought."""
    try:
        fields, thought = dialects.normalize(item)
    except dialects.DialectError as exc:
        return problem(str(exc), item), None
    kind = fields.get("type")
    if not isinstance(kind, str) or kind not in GUI_TYPES:
        return build_action(fields, item), thought
    for px, py in _POINTS:
        has_x, has_y = px in fields, py in fields
        if not has_x and not has_y:
            continue
        if has_x != has_y:
            return problem(f"{kind}: {px} and {py} go together, got only {px if has_x else py}", item), thought
        if fields[px] is None and fields[py] is None and kind == "scroll":
            continue
        mapped = map_point(fields[px], fields[py], convention, sent, captured, what=f"{kind} ({px}, {py})")
        if isinstance(mapped, str):
            return problem(mapped, item), thought
        fields[px], fields[py] = mapped
    return build_action(fields, item), thought


# --- extraction ------------------------------------------------------------------


def _loads(s: str) -> tuple[Any, str | None]:
    try:
        return json.loads(s), None
    except (ValueError, RecursionError) as exc:
        msg = f"{exc}"
        if isinstance(exc, RecursionError):
            msg = "nested too deeply"
        elif _TRAILING_COMMA.search(s):
            msg += " (a trailing comma before '}' or ']'? JSON does not allow one)"
        elif "'" in s and "double quotes" in msg:
            msg += " (JSON strings and keys take double quotes, not single)"
        return None, msg


def extract_json(text: str) -> tuple[Any, int, int]:
    """(the decoded value, start, end) of the JSON action in `text`.

    Raises `NoJsonFound` (a ValueError) with the reason when there is none;
    `parse` turns that into an `ActionProblem`.
    """
    stripped = text.strip()
    lead = len(text) - len(text.lstrip())
    if stripped[:1] in ("{", "["):
        value, err = _loads(stripped)
        if err is None:
            return value, lead, lead + len(stripped)
        whole_err: str | None = err
    else:
        whole_err = None

    fenced = [m for m in _FENCE.finditer(text)
              if m.group(1).lower() in ("", "json", "jsonc", "json5")
              and m.group(2).strip()[:1] in ("{", "[")]
    if fenced:
        m = fenced[-1]
        body = m.group(2)
        value, err = _loads(body)
        if err is None:
            s = m.start(2) + (len(body) - len(body.lstrip()))
            return value, s, s + len(body.strip())
        raise NoJsonFound(f"invalid JSON in the ```json block: {err}")

    first_err: str | None = None
    tries = 0
    i = 0
    budget = [_MAX_SCAN_EVENTS]
    while tries < _MAX_PROSE_TRIES and budget[0] > 0:
        i = _next_start(text, i)
        if i < 0:
            break
        end = _balanced(text, i, budget)
        if end is None:
            if first_err is None and '"' in text[i:]:
                first_err = "an unbalanced '{' (truncated JSON?)"
            i += 1
            tries += 1
            continue
        tries += 1
        value, err = _loads(text[i:end])
        if err is None and isinstance(value, (dict, list)):
            return value, i, end
        if first_err is None and '"' in text[i:end]:
            first_err = err
        i += 1
    if whole_err is not None:
        raise NoJsonFound(f"invalid JSON: {whole_err}")
    if first_err is not None:
        raise NoJsonFound(f"invalid JSON: {first_err}")
    raise NoJsonFound('no JSON action found (expected an object like {"type": "click", "x": 10, "y": 20})')


_LIST_OF_OBJECTS = re.compile(r"\[[ \t\r\n]{0,200}\{")


def _next_start(text: str, i: int) -> int:
    """Index of the next '{' (or a '[' that opens a list of objects) at or after i (one scan, no per-'[' work)."""
    j = text.find("{", i)
    m = _LIST_OF_OBJECTS.search(text, i, j + 1 if j != -1 else len(text))
    return m.start() if m else j


_BRACKET_EVENT = re.compile(r'[{}\[\]"]')
_STRING_TAIL = re.compile(r'(?:[^"\\]++|\\.)*+"', re.S)
"""The rest of a JSON string after its opening quote, escapes included (possessive: no backtracking)."""
_MAX_SCAN_EVENTS = 10_000
"""Brackets and strings `_balanced` may look at over all prose tries of one answer (a few ms); then it stops."""


def _balanced(text: str, start: int, budget: list[int]) -> int | None:
    """End (exclusive) of the bracketed span opening at `start`, strings respected.

    Jumps from bracket to bracket and over whole strings (C-speed regex), and
    spends from `budget` (shared by the tries of one answer) so that no input
    costs more than a bounded number of steps.
    """
    stack: list[str] = []
    pos = start
    while budget[0] > 0:
        m = _BRACKET_EVENT.search(text, pos)
        if m is None:
            return None
        budget[0] -= 1
        i = m.start()
        c = text[i]
        if c == '"':
            tail = _STRING_TAIL.match(text, i + 1)
            if tail is None:  # an unterminated string never closes the span
                return None
            pos = tail.end()
            continue
        if c in "{[":
            stack.append("}" if c == "{" else "]")
            if len(stack) > 64:
                return None
        elif not stack or stack.pop() != c:
            return None
        elif not stack:
            return i + 1
        pos = i + 1
    return None


# --- schema ----------------------------------------------------------------------


def wrapped_schema(action_types: list[str] | None = None) -> dict[str, Any]:
    """JSON schema of ``{"thought": str, "action": <one action>}``.

    `action_types` limits the action to those types (the ones the tools can
    run here). ``type`` is required in every action (the bare action schema
    lets it default). The schema's `$defs` sit at the root so `$ref`s resolve.
    """
    inner = copy.deepcopy(action_schema())
    defs: dict[str, Any] = inner.pop("$defs", {})
    mapping: dict[str, str] = inner.get("discriminator", {}).get("mapping", {})
    if action_types is not None:
        unknown = sorted(set(action_types) - set(mapping))
        if unknown:
            raise ValueError(f"unknown action types {unknown}; known: {', '.join(sorted(mapping))}")
        keep = {t: ref for t, ref in mapping.items() if t in action_types}
        refs = set(keep.values())
        inner["oneOf"] = [o for o in inner["oneOf"] if o.get("$ref") in refs]
        inner["discriminator"]["mapping"] = keep
        names = {ref.rsplit("/", 1)[-1] for ref in refs}
        defs = {k: v for k, v in defs.items() if k in names}
    for d in defs.values():
        req = d.setdefault("required", [])
        if "type" in d.get("properties", {}) and "type" not in req:
            req.insert(0, "type")
    return {
        "$defs": defs,
        "type": "object",
        "properties": {"thought": {"type": "string"}, "action": inner},
        "required": ["thought", "action"],
        "additionalProperties": False,
    }
