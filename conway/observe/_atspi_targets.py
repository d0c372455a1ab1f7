"""Subprocess half of grounding-check's target harvest: every showing, named node of some applications.

Run by `conway.observe.screen_targets.harvest_atspi` as a script, under a time limit:

    python _atspi_targets.py [--pid PID ...] [--max-nodes N] [--max-depth D]

Prints one JSON object: ``{"ok": true, "app": ..., "nodes": [...], "apps":
[...], "truncated": bool}`` or ``{"ok": false, "reason": ...}``. A node is
``{"app", "pid", "window", "window_bounds", "role", "name", "states",
"bounds"}`` with bounds ``[x, y, w, h]`` in screen (input) coordinates and
every state nick (``showing``, ``visible``, ``sensitive``, ...). With
``--pid`` only applications whose process id is listed are read; without,
every application with a showing window. Read-only: no action is invoked.
"""

from __future__ import annotations

import argparse
import json
import sys

from _atspi_snapshot import _bounds, _children, _load_atspi  # a sibling file: both run as scripts in a subprocess


def _states(node) -> list[str]:
    try:
        return sorted(s.value_nick for s in node.get_state_set().get_states())
    except Exception:
        return []


def dump(pids: set[int] | None, max_nodes: int, max_depth: int) -> dict:
    Atspi, unavailable = _load_atspi()
    if Atspi is None:
        return {"ok": False, "reason": unavailable}
    try:
        apps = _children(Atspi.get_desktop(0), 5000)
    except Exception as exc:
        return {"ok": False, "reason": f"cannot reach the AT-SPI registry: {exc}"}
    seen = []
    nodes: list[dict] = []
    truncated = False
    for app in apps:
        try:
            name = app.get_name() or ""
            pid = int(app.get_process_id())
        except Exception:
            continue
        seen.append({"name": name, "pid": pid})
        if pids is not None and pid not in pids:
            continue
        for w_index, window in enumerate(_children(app, 5000)):
            if "showing" not in _states(window):
                continue
            where = {"app": name, "pid": pid, "window": w_index, "window_title": _title(window),
                     "window_bounds": _bounds(window, Atspi)}
            truncated = _window_nodes(window, where, Atspi, nodes, max_nodes, max_depth) or truncated
    if pids is not None and not any(a["pid"] in pids for a in seen):
        return {"ok": False, "reason": f"no accessible application with process id {sorted(pids)} (yet)",
                "apps": seen}
    return {"ok": True, "app": ", ".join(sorted({n["app"] for n in nodes})) or None, "nodes": nodes,
            "apps": seen, "truncated": truncated}


def _title(window) -> str:
    try:
        return window.get_name() or ""
    except Exception:
        return ""


def _window_nodes(window, where: dict, Atspi, nodes: list[dict], max_nodes: int, max_depth: int) -> bool:
    """Append the window's showing, named nodes with bounds (each with `where` it is) to `nodes`, depth first;
    True when `max_nodes` cut the walk short."""
    stack = [(window, 0)]
    while stack:
        node, depth = stack.pop()
        if len(nodes) >= max_nodes:
            return True
        states = _states(node)
        if "showing" not in states:
            continue  # hidden subtree
        try:
            role = node.get_role_name() or ""
            label = node.get_name() or ""
        except Exception:
            continue
        bounds = _bounds(node, Atspi)
        if label.strip() and bounds:
            nodes.append({**where, "role": role, "name": label[:200], "states": states, "bounds": bounds})
        if depth < max_depth:
            stack.extend((c, depth + 1) for c in reversed(_children(node, 5000)))
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int, action="append")
    ap.add_argument("--max-nodes", type=int, default=4000)
    ap.add_argument("--max-depth", type=int, default=60)
    args = ap.parse_args(argv)
    try:
        result = dump(set(args.pid) if args.pid else None, args.max_nodes, args.max_depth)
    except Exception as exc:
        result = {"ok": False, "reason": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
