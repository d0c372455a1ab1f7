"""Map the JSON action dialects unconstrained VLMs write onto the one action schema.

A server that ignores output constraints (many do) gets whatever JSON the
model likes best. `unwrap` finds the actions in the decoded value and
`normalize` turns each into a `conway.actions` dict, still in the model's
coordinate convention (the caller maps coordinates afterwards). Nothing is
guessed beyond the table below: an unknown name or a field that fits no
action is refused by the schema, with the reason.

=================================================  =========================================
shape                                              read as
=================================================  =========================================
``{"type": "click", "x": 1, "y": 2}``              the schema itself
``[{…}, {…}]``                                     several actions, in order
``{"thought": "…", "action": {…}}``                wrapped (also ``"actions": [...]``)
``{"action": "click", "x": 1, "y": 2}``            ``action`` names the type
``{"action": {"action": "click", …}}``             the same, wrapped
``{"name": "click", "arguments": {…}}``            OpenAI tool call (``arguments`` may be a
                                                   JSON string; also ``parameters``/``args``/
                                                   ``input``, ``{"function": {…}}`` and
                                                   ``{"tool_calls": [...]}``)
``{"name": "computer", "arguments":``              a computer-use tool whose ``action``
``{"action": "left_click", …}}``                   argument names the type
``"coordinate": [x, y]``                           ``x``, ``y`` (also ``coordinates``,
                                                   ``point``, ``position``, ``location``,
                                                   ``start_coordinate``, ``{"x":…,"y":…}``)
``"bbox": [x1, y1, x2, y2]``                       its centre (also ``box``, ``bounding_box``)
``"to_coordinate": [x, y]``                        ``to_x``, ``to_y`` (also ``end_coordinate``,
                                                   ``to_point``, ``end_point``)
``"thought"`` / ``"reasoning"`` … inside an action  taken as the thought, not a field
=================================================  =========================================

Type names are matched case-insensitively with ``-``/space read as ``_``, and
these aliases: ``left_click``/``tap`` → click, ``middle_click`` → click
(middle), ``doubleclick`` → double_click, ``mouse_move``/``hover`` → move,
``left_click_drag``/``drag_to`` → drag, ``type_text``/``write``/``input_text``
→ type, ``press``/``key_press`` → key, ``key_combination``/``shortcut`` →
hotkey, ``sleep`` → wait, ``done``/``finished`` → finish (DONE), ``fail`` →
finish (FAIL), ``terminate`` → finish (its status says which),
``open_url`` → open_browser. Field aliases: ``type`` takes
``content``/``value``; ``key`` takes ``text`` (computer-use) and becomes a
hotkey when it holds ``ctrl+c``; ``hotkey`` takes a ``"ctrl+c"`` string;
``scroll`` takes ``direction`` (up/down/left/right) with ``amount``/``clicks``
(default 5, as UI-TARS); ``wait`` takes ``duration``; ``finish`` takes
``success``/``done``/``failure`` as status and ``answer``/``text`` as message.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from conway.actions import ACTION_TYPES
from conway.policies.parsed import MAX_NUMBER

__all__ = ["unwrap", "normalize", "DialectError", "THOUGHT_KEYS", "SCROLL_CLICKS"]

THOUGHT_KEYS = ("thought", "thoughts", "reasoning", "reason", "explanation", "rationale", "observation")
"""Commentary a model puts beside (or inside) its action; recorded as the thought, never an action field."""
SCROLL_CLICKS = 5
"""Wheel clicks of a ``direction`` scroll that names no amount (UI-TARS's reference uses 5)."""
_MAX_ARGUMENT_CHARS = 50_000

_ALIASES = {
    "left_click": "click", "tap": "click", "single_click": "click", "left_single": "click",
    "mouse_click": "click", "doubleclick": "double_click", "left_double": "double_click",
    "dblclick": "double_click", "tripleclick": "triple_click", "rightclick": "right_click",
    "right_single": "right_click", "mouse_move": "move", "move_mouse": "move", "hover": "move",
    "move_to": "move", "moveto": "move", "left_click_drag": "drag", "drag_to": "drag", "dragto": "drag",
    "drag_and_drop": "drag", "type_text": "type", "typing": "type", "write": "type", "input_text": "type",
    "typewrite": "type", "press": "key", "key_press": "key", "keypress": "key", "press_key": "key",
    "key_combination": "hotkey", "shortcut": "hotkey", "hotkeys": "hotkey", "sleep": "wait",
    "done": "finish", "finished": "finish", "terminate": "finish", "fail": "finish",
    "middle_click": "click", "open_url": "open_browser",
}
_POINT_KEYS = ("coordinate", "coordinates", "point", "position", "location", "start_coordinate", "start_point")
_BOX_KEYS = ("bbox", "box", "bounding_box")
_TO_KEYS = ("to_coordinate", "end_coordinate", "to_point", "end_point", "target_coordinate")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_STATUS = {"done": "DONE", "success": "DONE", "succeeded": "DONE", "true": "DONE", "ok": "DONE",
           "fail": "FAIL", "failure": "FAIL", "failed": "FAIL", "false": "FAIL", "infeasible": "FAIL"}


class DialectError(ValueError):
    """The value holds no action in any accepted shape (the message says why)."""


def _thought_of(d: dict[str, Any]) -> str | None:
    for k in THOUGHT_KEYS:
        v = d.get(k)
        if isinstance(v, str) and v.strip():
            return v
    return None


def unwrap(value: Any) -> tuple[str | None, list[Any]]:
    """(the thought the wrapper carries, the action items) of a decoded JSON answer.

    Raises `DialectError` when the wrapper is recognisable but malformed
    (``"action": 5``); items are not checked here (see `normalize`).
    """
    if isinstance(value, list):
        return None, value
    if not isinstance(value, dict):
        return None, [value]
    thought = _thought_of(value)
    if "type" in value:
        return thought, [value]
    calls = value.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise DialectError('"tool_calls" must be a list of tool calls')
        return thought, calls
    for key in ("action", "actions"):
        if key in value:
            inner = value[key]
            if isinstance(inner, dict):
                return thought, [inner]
            if isinstance(inner, list):
                return thought, inner
            if isinstance(inner, str):
                return thought, [value]  # {"action": "click", "x": …}: the name, fields beside it
            raise DialectError(f'"{key}" must be an action object or a list of them')
    return thought, [value]


def _type_name(v: Any) -> str | None:
    if not isinstance(v, str):
        return None
    name = v.strip().lower().replace("-", "_").replace(" ", "_")
    return name if name in ACTION_TYPES else _ALIASES.get(name, name)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _pair(v: Any, what: str) -> tuple[Any, Any]:
    if isinstance(v, dict) and set(v) >= {"x", "y"}:
        return v["x"], v["y"]
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return v[0], v[1]
    raise DialectError(f'"{what}" must be [x, y], got {_short(v)}')


def _centre(v: Any, what: str) -> tuple[Any, Any]:
    if isinstance(v, (list, tuple)) and len(v) == 4 and all(_number(n) for n in v):
        if any(abs(n) > MAX_NUMBER for n in v):
            raise DialectError(f'"{what}" holds a number beyond {MAX_NUMBER} (not a plausible coordinate)')
        x1, y1, x2, y2 = v
        return (x1 + x2) / 2, (y1 + y2) / 2
    raise DialectError(f'"{what}" must be [x1, y1, x2, y2] numbers, got {_short(v)}')


def _short(v: Any, n: int = 80) -> str:
    try:
        s = json.dumps(v)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= n else s[:n] + "…"


def _take(fields: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, Any] | None:
    found = [(k, fields.pop(k)) for k in keys if k in fields]
    if len(found) > 1:
        raise DialectError(f"give one of {', '.join(k for k, _ in found)}, not several")
    return found[0] if found else None


def _arguments(item: dict[str, Any]) -> dict[str, Any]:
    key = next((k for k in _ARGUMENT_KEYS if k in item), None)
    if key is None:
        return {}
    args = item[key]
    if isinstance(args, str):  # OpenAI sends tool-call arguments as a JSON string
        if len(args) > _MAX_ARGUMENT_CHARS:
            raise DialectError(f'tool-call "{key}" is {len(args)} chars (limit {_MAX_ARGUMENT_CHARS})')
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as exc:
            raise DialectError(f'tool-call "{key}" is not a JSON object: {str(exc)[:120]}') from None
    if not isinstance(args, dict):
        raise DialectError(f'tool-call "{key}" must be an object, got {_short(args)}')
    return dict(args)


def normalize(item: Any) -> tuple[dict[str, Any], str | None]:
    """One action item in any accepted dialect → (a schema-shaped dict, its inline thought).

    The dict may still be invalid (the schema says why); `DialectError` when the
    item is not an action in any accepted shape.
    """
    if not isinstance(item, dict):
        raise DialectError(f'an action must be a JSON object like {{"type": "click", ...}}, got {_kind(item)}')
    fields = _unwrapped(dict(item))
    thought = _pop_thought(fields)
    if "type" not in fields and "action" in fields:
        name = fields.pop("action")
        if not isinstance(name, str):
            raise DialectError(f'"action" must be an action object or an action name, got {_short(name)}')
        fields["type"] = name
    raw_type = fields.get("type")
    kind = _type_name(raw_type)
    if kind is None:
        return fields, thought  # not a string: the schema names the problem
    if kind not in ACTION_TYPES:
        if "type" in item or not isinstance(item.get("action"), str):
            return fields, thought
        raise DialectError(f'"action" must be an action object or a known action name, got {_short(raw_type)}')
    fields["type"] = kind
    said = raw_type.strip().lower().replace("-", "_").replace(" ", "_")  # type: ignore[union-attr]
    if said == "middle_click":
        fields.setdefault("button", "middle")
    elif said == "fail":
        fields.setdefault("status", "FAIL")
    elif said in ("done", "finished"):
        fields.setdefault("status", "DONE")
    _points(fields)
    _fields_of(kind, fields)
    return fields, thought


def _unwrapped(fields: dict[str, Any]) -> dict[str, Any]:
    """A tool call's fields as an action's: `{"type": "function", "function": {…}}` and `{"name": …,
    "arguments": {…}}` give their arguments, typed by the call's name unless an argument names the action."""
    if isinstance(fields.get("function"), dict) and "name" not in fields:  # {"type": "function", "function": {…}}
        fields = dict(fields["function"])
    if "name" in fields and "type" not in fields and (any(k in fields for k in _ARGUMENT_KEYS) or len(fields) == 1):
        name = fields["name"]
        args = _arguments(fields)
        if "action" in args and "type" not in args:  # a computer-use tool: the argument names the action
            return args
        return {**args, "type": name}
    return fields


def _pop_thought(fields: dict[str, Any]) -> str | None:
    """Removes every thought key; the first non-empty text among them is the item's thought."""
    thought = None
    for k in THOUGHT_KEYS:
        if k in fields:
            v = fields.pop(k)
            if thought is None and isinstance(v, str) and v.strip():
                thought = v
    return thought


def _points(fields: dict[str, Any]) -> None:
    point = _take(fields, _POINT_KEYS)
    box = _take(fields, _BOX_KEYS)
    if point and box:
        raise DialectError(f'give either "{point[0]}" or "{box[0]}", not both')
    if point or box:
        if "x" in fields or "y" in fields:
            where = (point or box)[0]  # type: ignore[index]
            raise DialectError(f'give either x/y or "{where}", not both')
        fields["x"], fields["y"] = _pair(point[1], point[0]) if point else _centre(box[1], box[0])  # type: ignore[index]
    to = _take(fields, _TO_KEYS)
    if to:
        if "to_x" in fields or "to_y" in fields:
            raise DialectError(f'give either to_x/to_y or "{to[0]}", not both')
        fields["to_x"], fields["to_y"] = _pair(to[1], to[0])


def _fields_of(kind: str, f: dict[str, Any]) -> None:
    """The dialects' field names for `kind` rewritten as the schema's (in place)."""
    fix = _FIELD_FIXES.get(kind)
    if fix is not None:
        fix(f)


def _move_first(f: dict[str, Any], keys: tuple[str, ...], to: str) -> None:
    """Renames the first of `keys` that `f` holds to `to` (any other stays, for the schema to refuse)."""
    key = next((k for k in keys if k in f), None)
    if key is not None:
        f[to] = f.pop(key)


def _split_keys(combo: str) -> list[str]:
    return [k.strip() for k in combo.replace("+", " ").split() if k.strip()]


def _type_fields(f: dict[str, Any]) -> None:
    if "text" not in f:
        _move_first(f, ("content", "value"), "text")


def _key_fields(f: dict[str, Any]) -> None:
    if "key" not in f and "text" in f:
        f["key"] = f.pop("text")
    if "key" not in f and isinstance(f.get("keys"), list) and len(f["keys"]) == 1:
        f["key"] = f.pop("keys")[0]
    key = f.get("key")
    if "keys" not in f and isinstance(key, str) and "+" in key.strip("+") and len(key) > 1:
        f.pop("key")  # computer-use writes a combination as key "ctrl+c"
        f["type"], f["keys"] = "hotkey", [k.strip() for k in key.split("+") if k.strip()]
    elif isinstance(f.get("keys"), list) and "key" not in f:
        f["type"] = "hotkey"


def _hotkey_fields(f: dict[str, Any]) -> None:
    raw = f.pop("key", None) if "keys" not in f else None
    raw = raw if raw is not None else (f.pop("text", None) if "keys" not in f else None)
    if isinstance(raw, str):
        f["keys"] = _split_keys(raw)
    elif raw is not None:
        f["keys"] = raw
    if isinstance(f.get("keys"), str):
        f["keys"] = _split_keys(f["keys"])


_SCROLL_AXES = {"up": (1, "dy"), "down": (-1, "dy"), "right": (1, "dx"), "left": (-1, "dx")}
"""A scroll direction -> (sign, the schema's field)."""


def _scroll_fields(f: dict[str, Any]) -> None:
    if "direction" not in f:
        return
    direction = f.pop("direction")
    amount_key = next((k for k in ("amount", "clicks", "scroll_amount", "distance") if k in f), None)
    amount = f.pop(amount_key) if amount_key is not None else None
    amount = SCROLL_CLICKS if amount is None else amount
    if not (isinstance(amount, int) and not isinstance(amount, bool)) or amount < 0:
        raise DialectError(f"scroll: amount must be a whole number of wheel clicks >= 0, got {_short(amount)}")
    sign = _SCROLL_AXES.get(str(direction).strip().lower())
    if sign is None:
        raise DialectError(f"scroll: direction must be up, down, left or right, got {_short(direction)}")
    if "dy" in f or "dx" in f:
        raise DialectError("scroll: give either direction or dy/dx, not both")
    f[sign[1]] = sign[0] * amount


def _wait_fields(f: dict[str, Any]) -> None:
    if "seconds" not in f:
        _move_first(f, ("duration",), "seconds")


def _finish_fields(f: dict[str, Any]) -> None:
    status = f.get("status")
    if isinstance(status, bool):
        f["status"] = "DONE" if status else "FAIL"
    elif isinstance(status, str) and status.strip().lower() in _STATUS:
        f["status"] = _STATUS[status.strip().lower()]
    if "message" not in f:
        _move_first(f, ("answer", "text", "content", "result"), "message")


_FIELD_FIXES: dict[str, Callable[[dict[str, Any]], None]] = {
    "type": _type_fields, "key": _key_fields, "hotkey": _hotkey_fields, "scroll": _scroll_fields,
    "wait": _wait_fields, "finish": _finish_fields}
"""Each action type whose fields the dialects name differently -> what renames them."""


def _kind(v: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean",
            type(None): "null"}.get(type(v), type(v).__name__)
