"""A small GTK 3 window for the accessibility tests.

Run: ``python tests/apps/gtk_probe_app.py LOG.jsonl [--x X --y Y]`` under a
D-Bus session (``dbus-run-session``) so that AT-SPI can see it.

Writes JSON lines to LOG: ``{"event": "ready", "window": [x, y, w, h]}`` once
the window is mapped, then ``{"event": "clicked", "widget": NAME}`` for each
button press and ``{"event": "toggled", ...}`` for the check box.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--x", type=int, default=60)
    ap.add_argument("--y", type=int, default=60)
    args = ap.parse_args(argv)

    import gi

    gi.require_version("Gtk", "3.0")
    from gi.repository import GLib, Gtk

    out = open(args.log, "a", encoding="utf-8")

    def log(event: str, **data: object) -> None:
        out.write(json.dumps({"event": event, **data}) + "\n")
        out.flush()

    win = Gtk.Window(title="Conway GTK probe")
    win.set_default_size(420, 240)
    win.move(args.x, args.y)
    win.connect("destroy", Gtk.main_quit)

    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=12)
    box.set_border_width(16)
    win.add(box)
    box.pack_start(Gtk.Label(label="Accessibility probe"), False, False, 0)
    row = Gtk.Box(spacing=12)
    box.pack_start(row, False, False, 0)
    for name in ("Save draft", "Discard"):
        b = Gtk.Button(label=name)
        b.set_size_request(150, 48)
        b.connect("clicked", lambda _b, n=name: log("clicked", widget=n))
        row.pack_start(b, False, False, 0)
    check = Gtk.CheckButton(label="Remember me")
    check.connect("toggled", lambda c: log("toggled", active=c.get_active()))
    box.pack_start(check, False, False, 0)
    entry = Gtk.Entry()
    entry.set_text("hello")
    box.pack_start(entry, False, False, 0)

    def ready(*_: object) -> bool:
        x, y = win.get_position()
        w, h = win.get_size()
        log("ready", window=[x, y, w, h])
        return False

    win.connect("map-event", lambda *_: GLib.timeout_add(50, ready) and False)
    win.show_all()
    Gtk.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
