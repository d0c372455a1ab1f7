"""Shared by the GTK suite apps: placement arguments and the widget-geometry log.

The log (``--log FILE``, JSON lines) holds one ``{"event": "ready", "window":
[x, y, w, h], "widgets": [{"role", "name", "bounds": [x, y, w, h]}]}`` line
once the window is mapped and laid out: every widget with an accessible
name, in root-window (input) coordinates, as GTK itself places it. Tests
compare the harvested boxes with it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--x", type=int, default=40)
    ap.add_argument("--y", type=int, default=40)
    ap.add_argument("--width", type=int, default=900)
    ap.add_argument("--height", type=int, default=620)
    ap.add_argument("--log", help="JSON-lines file for the widget geometry")
    return ap.parse_args(argv)


def widget_geometry(win: Any) -> list[dict[str, Any]]:
    from gi.repository import Atk, Gtk

    origin = win.get_window().get_origin()  # (ok, x, y) or (x, y) depending on the binding
    ox, oy = origin[-2], origin[-1]
    out = []

    def walk(w: Any) -> None:
        if not w.get_mapped():
            return
        acc = w.get_accessible()
        name = acc.get_name() if acc is not None else None
        if name:
            coords = w.translate_coordinates(win, 0, 0)
            if coords is not None:
                x, y = coords[-2], coords[-1]
                alloc = w.get_allocation()
                out.append({"role": Atk.role_get_name(acc.get_role()), "name": name,
                            "bounds": [ox + x, oy + y, alloc.width, alloc.height]})
        if isinstance(w, Gtk.Container):
            w.forall(walk)  # internal children too (a file chooser's own buttons)

    walk(win)
    return out


def log_ready(win: Any, path: str | None) -> None:
    if not path:
        return
    origin = win.get_window().get_origin()
    x, y = origin[-2], origin[-1]
    w, h = win.get_size()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": "ready", "window": [x, y, w, h], "widgets": widget_geometry(win)}) + "\n")


def when_settled(win: Any, callback: Any, delay_ms: int = 400) -> None:
    """Call `callback(win)` once, `delay_ms` after the window is first drawn (layout done)."""
    from gi.repository import GLib

    state = {"done": False}

    def drawn(*_: Any) -> bool:
        if not state["done"]:
            state["done"] = True
            GLib.timeout_add(delay_ms, lambda: callback(win) and False)
        return False

    win.connect("draw", drawn)
