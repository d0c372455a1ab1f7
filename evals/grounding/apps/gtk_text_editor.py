"""A GTK 3 text editor window: menu bar, tool bar, a search field, the text, a status line.

Run: ``python gtk_text_editor.py [--x X --y Y] [--log FILE]`` (under a D-Bus
session with AT-SPI so the accessibility tree can be read).
"""

from __future__ import annotations

import sys

from _gtk_common import log_ready, parse_args, when_settled

TEXT = """Meeting notes

- ship the grounding check
- measure the tiny model
- write the README section
"""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import gi

    gi.require_version("Gtk", "3.0")
    from gi.repository import Gtk

    win = Gtk.Window(title="notes.txt - Text Editor")
    win.set_default_size(args.width, args.height)
    win.move(args.x, args.y)
    win.connect("destroy", Gtk.main_quit)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
    win.add(box)

    menubar = Gtk.MenuBar()
    for title, items in (("File", ("New", "Open…", "Save", "Quit")), ("Edit", ("Undo", "Cut", "Copy", "Paste")),
                         ("View", ("Zoom In", "Zoom Out")), ("Help", ("About",))):
        top = Gtk.MenuItem(label=title)
        menu = Gtk.Menu()
        for label in items:
            menu.append(Gtk.MenuItem(label=label))
        top.set_submenu(menu)
        menubar.append(top)
    box.pack_start(menubar, False, False, 0)

    toolbar = Gtk.Box(spacing=6)
    toolbar.set_border_width(6)
    for label in ("New", "Open", "Save", "Print"):
        b = Gtk.Button(label=label)
        toolbar.pack_start(b, False, False, 0)
    wrap = Gtk.CheckButton(label="Wrap lines")
    toolbar.pack_start(wrap, False, False, 12)
    spin = Gtk.SpinButton.new_with_range(8, 48, 1)
    spin.set_value(12)
    spin.get_accessible().set_name("Font size")
    toolbar.pack_start(spin, False, False, 0)
    search = Gtk.SearchEntry()
    search.get_accessible().set_name("Search")
    toolbar.pack_end(search, False, False, 0)
    box.pack_start(toolbar, False, False, 0)

    scroll = Gtk.ScrolledWindow()
    view = Gtk.TextView()
    view.get_buffer().set_text(TEXT)
    view.get_accessible().set_name("Document text")
    scroll.add(view)
    box.pack_start(scroll, True, True, 0)

    status = Gtk.Box(spacing=8)
    status.set_border_width(4)
    status.pack_start(Gtk.Label(label="Ln 1, Col 1"), False, False, 0)
    mode = Gtk.ToggleButton(label="Insert mode")
    status.pack_end(mode, False, False, 0)
    box.pack_start(status, False, False, 0)

    when_settled(win, lambda w: log_ready(w, args.log))
    win.show_all()
    Gtk.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
