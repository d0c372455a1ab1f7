"""Subprocess half of the accessibility snapshot: dump one app's AT-SPI tree as JSON.

Run by `conway.observe.accessibility.snapshot` as a script (not ``-m``, so it
needs nothing from Conway on ``sys.path``), under a time limit:

    python _atspi_snapshot.py [--app NAME] [--max-nodes N] [--max-depth D]

Prints one JSON object on stdout: ``{"ok": true, "app": ..., "pid": ...,
"rule": ..., "nodes": [...], "truncated": bool, "apps": [...]}`` or
``{"ok": false, "reason": ...}``. Each node is ``{"depth", "role", "name",
"states", "bounds": [x, y, w, h] | null, "value"?}`` in screen (input)
coordinates. Read-only: it never invokes an action.

Which application: ``--app`` (a case-insensitive substring of the name), else
the application owning a window in the ``active`` state, else (no window
manager marks windows active) the most recently registered application with
a showing window; the rule used is reported.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

KEEP_STATES = ("focused", "checked", "selected", "pressed", "expanded", "collapsed", "editable",
               "active", "indeterminate", "modal", "multi-line")
"""States worth showing a model; "sensitive" is shown inverted as "disabled"."""
BORING_CONTAINERS = ("filler", "panel", "section", "unknown", "scroll pane", "viewport")


def _states(node) -> set[str]:
    try:
        return {s.value_nick for s in node.get_state_set().get_states()}
    except Exception:
        return set()


def _bounds(node, Atspi) -> list[int] | None:
    try:
        e = node.get_extents(Atspi.CoordType.SCREEN)
    except Exception:
        return None
    if e.width <= 0 or e.height <= 0:
        return None
    return [int(e.x), int(e.y), int(e.width), int(e.height)]


def _children(node, limit: int = 2000):
    try:
        n = node.get_child_count()
    except Exception:
        return []
    out = []
    for i in range(min(n, limit)):
        try:
            c = node.get_child_at_index(i)
        except Exception:
            continue
        if c is not None:
            out.append(c)
    return out


def _text_value(node, states: set[str]) -> str | None:
    if "editable" not in states:
        return None
    try:
        text = node.get_text_iface()
        if text is None:
            return None
        n = text.get_character_count()
        return text.get_text(0, min(n, 200))
    except Exception:
        return None


def _pick_app(apps, Atspi, wanted: str | None):
    showing = []
    for app in apps:
        try:
            name = app.get_name() or ""
        except Exception:
            continue
        if wanted is not None:
            if wanted.lower() in name.lower():
                return app, f"named {wanted!r}"
            continue
        windows = _children(app)
        for w in windows:
            st = _states(w)
            if "active" in st:
                return app, "active window"
            if "showing" in st and _bounds(w, Atspi):
                showing.append(app)
                break
    if wanted is not None:
        return None, f"no accessible application named like {wanted!r}"
    if showing:
        return showing[-1], "no active window; most recent application with a showing window"
    return None, "no accessible application has a showing window"


def _load_atspi():
    """The Atspi module, or (None, why not) when PyGObject or the typelib is missing."""
    try:
        import gi

        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi
    except Exception as exc:
        return None, (f"AT-SPI is not available ({type(exc).__name__}: {exc}); install "
                      "gir1.2-atspi-2.0 and PyGObject")
    return Atspi, None


def _app_names(apps) -> list[str]:
    names = []
    for a in apps:
        try:
            names.append(a.get_name() or "")
        except Exception:
            names.append("?")
    return names


def _node_item(node, Atspi, role: str, name: str, states: set[str], depth: int, shown_depth: int) -> dict:
    """One shown node: its role, name, the states worth showing, bounds and (for editable text) value."""
    disabled = depth > 0 and "sensitive" not in states and "enabled" not in states
    item = {"depth": shown_depth, "role": role, "name": name[:120],
            "states": sorted((states & set(KEEP_STATES)) | ({"disabled"} if disabled else set())),
            "bounds": _bounds(node, Atspi)}
    value = _text_value(node, states)
    if value:
        item["value"] = value
    return item


def _walk_tree(app, Atspi, max_nodes: int, max_depth: int) -> tuple[list[dict], bool]:
    """The showing nodes under `app`, depth first (unnamed boring containers skipped), and whether it was cut."""
    nodes: list[dict] = []
    truncated = False

    def walk(node, depth: int, shown_depth: int) -> None:
        nonlocal truncated
        if len(nodes) >= max_nodes or depth > max_depth:
            truncated = True
            return
        try:
            role = node.get_role_name() or ""
            name = node.get_name() or ""
        except Exception:
            return
        states = _states(node)
        if depth > 0 and "showing" not in states:
            return  # hidden subtree
        boring = depth > 0 and not name and role in BORING_CONTAINERS
        child_depth = shown_depth
        if not boring:
            nodes.append(_node_item(node, Atspi, role, name, states, depth, shown_depth))
            child_depth = shown_depth + 1
        for child in _children(node):
            walk(child, depth + 1, child_depth)

    walk(app, 0, 0)
    return nodes, truncated


def dump(app_name: str | None, max_nodes: int, max_depth: int) -> dict:
    Atspi, unavailable = _load_atspi()
    if Atspi is None:
        return {"ok": False, "reason": unavailable}
    t0 = time.perf_counter()
    try:
        desktop = Atspi.get_desktop(0)
        apps = _children(desktop)
    except Exception as exc:
        return {"ok": False, "reason": f"cannot reach the AT-SPI registry: {exc}"}
    names = _app_names(apps)
    if not apps:
        return {"ok": False, "reason": "the AT-SPI desktop lists no applications (no D-Bus session bus, "
                "accessibility disabled, or no accessible app running)"}
    app, rule = _pick_app(apps, Atspi, app_name)
    if app is None:
        return {"ok": False, "reason": rule, "apps": names}
    nodes, truncated = _walk_tree(app, Atspi, max_nodes, max_depth)
    try:
        pid = app.get_process_id()
    except Exception:
        pid = None
    return {"ok": True, "app": names[apps.index(app)], "pid": pid, "rule": rule, "nodes": nodes,
            "truncated": truncated, "apps": names, "elapsed_ms": round((time.perf_counter() - t0) * 1000, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app")
    ap.add_argument("--max-nodes", type=int, default=400)
    ap.add_argument("--max-depth", type=int, default=40)
    args = ap.parse_args(argv)
    try:
        result = dump(args.app, args.max_nodes, args.max_depth)
    except Exception as exc:
        result = {"ok": False, "reason": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
