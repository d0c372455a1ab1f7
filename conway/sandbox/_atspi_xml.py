"""Helper run in a subprocess (AT-SPI calls can block): print the accessibility tree of every application on the
session bus in DBUS_SESSION_BUS_ADDRESS as XML in OSWorld's format (what its VM server's `/accessibility` returns
on Ubuntu), for the `accessibility_tree` getter.

Written afresh from that format: a `desktop-frame` root; one element per node, its tag the role name with spaces
made hyphens ("push button" → `push-button`); attribute `name`; each state as `st:NAME="true"` (the state's
upper-case name, lower-cased: `st:showing`, `st:multi_line`); each object attribute as `attr:KEY`; for a visible,
showing node with a component, `cp:screencoord="(x, y)"` and `cp:size="(w, h)"`; `image`, `selection` ="true"
for nodes with those interfaces; `val:value/min/max/step` for a value; `act:NAME_desc`, `act:NAME_kb` per action;
the node's text (U+FFFC and U+FFFD removed) as the element's text. Depth is cut at 50 and width at 1024 children,
as OSWorld's server does. Standard library and PyGObject only: it runs as a script, outside Conway's imports.

Prints one JSON line: {"xml": "<desktop-frame ...>"} or {"xml": null, "reason": "..."}.
"""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET

NS = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}
MAX_DEPTH = 50
MAX_WIDTH = 1024
MAX_NODES = 50000
"""A bound of Conway's own (OSWorld's server has none): a tree larger than this is cut, never waited on forever."""
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def _clean(text: str) -> str:
    """Text an XML document can hold (a control character would make the whole tree unreadable)."""
    return _NOT_XML.sub("", text)


def _q(prefix: str, name: str) -> str:
    return "{%s}%s" % (NS[prefix], name)


def _states(node, attrs: dict[str, str]) -> None:
    for state in node.get_state_set().get_states():
        name = state.value_name.removeprefix("ATSPI_STATE_").lower()
        if name:
            attrs[_q("st", name)] = "true"


def _component(node, attrs: dict[str, str], Atspi) -> None:
    if attrs.get(_q("st", "visible")) != "true" or attrs.get(_q("st", "showing")) != "true":
        return
    component = node.get_component_iface()
    if component is None:
        return
    e = component.get_extents(Atspi.CoordType.SCREEN)
    attrs[_q("cp", "screencoord")] = str((e.x, e.y))
    attrs[_q("cp", "size")] = str((e.width, e.height))


def _value(node, attrs: dict[str, str]) -> None:
    value = node.get_value_iface()
    if value is None:
        return
    for key, read in (("value", value.get_current_value), ("min", value.get_minimum_value),
                      ("max", value.get_maximum_value), ("step", value.get_minimum_increment)):
        try:
            attrs[_q("val", key)] = str(read())
        except Exception:
            pass


def _actions(node, attrs: dict[str, str]) -> None:
    action = node.get_action_iface()
    if action is None:
        return
    for i in range(action.get_n_actions()):
        name = (action.get_action_name(i) or "").replace(" ", "-")
        attrs[_q("act", f"{name}_desc")] = _clean(action.get_action_description(i) or "")
        attrs[_q("act", f"{name}_kb")] = _clean(action.get_key_binding(i) or "")


def _text(node) -> str:
    text = node.get_text_iface()
    if text is None:
        return ""
    return _clean(text.get_text(0, text.get_character_count()) or "").replace("\ufffc", "").replace("\ufffd", "")


def _guarded(part, *args) -> None:
    try:
        part(*args)
    except Exception:  # a node that went away, or an interface that answers with an error: that part is left out
        pass


def _element(node, Atspi) -> ET.Element:
    attrs: dict[str, str] = {"name": _clean(node.get_name() or "")}
    _guarded(_states, node, attrs)
    try:
        for key, value in (node.get_attributes() or {}).items():
            if key and _NAME.fullmatch(key):
                attrs[_q("attr", key)] = _clean(str(value))
    except Exception:
        pass
    _guarded(_component, node, attrs, Atspi)
    for flag, iface in (("image", node.get_image_iface), ("selection", node.get_selection_iface)):
        try:
            if iface() is not None:
                attrs[flag] = "true"
        except Exception:
            pass
    _guarded(_value, node, attrs)
    _guarded(_actions, node, attrs)
    role = (node.get_role_name() or "").strip()
    element = ET.Element((role or "unknown").replace(" ", "-"), attrs)
    try:
        text = _text(node)
    except Exception:
        text = ""
    if text:
        element.text = text
    return element


def _tree(node, Atspi, depth: int, budget: list[int]) -> ET.Element | None:
    if budget[0] <= 0:
        return None
    budget[0] -= 1
    try:
        element = _element(node, Atspi)
    except Exception:  # the node went away mid-walk
        return None
    if depth >= MAX_DEPTH:
        return element
    try:
        count = min(node.get_child_count(), MAX_WIDTH)
    except Exception:
        return element
    for i in range(count):
        try:
            child = node.get_child_at_index(i)
        except Exception:
            continue
        if child is not None and (sub := _tree(child, Atspi, depth + 1, budget)) is not None:
            element.append(sub)
    return element


def dump() -> dict:
    try:
        import gi
        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi
    except (ImportError, ValueError) as exc:
        return {"xml": None, "reason": f"AT-SPI unavailable: {exc}"}
    for prefix, uri in NS.items():
        ET.register_namespace(prefix, uri)
    root = ET.Element("desktop-frame")
    budget = [MAX_NODES]
    desktop = Atspi.get_desktop(0)
    for i in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(i)
        if app is not None and (element := _tree(app, Atspi, 1, budget)) is not None:
            root.append(element)
    return {"xml": ET.tostring(root, encoding="unicode"), "cut": budget[0] <= 0}


def main() -> int:
    try:
        result = dump()
    except Exception as exc:
        result = {"xml": None, "reason": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
