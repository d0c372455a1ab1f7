"""A GTK 3 "Open File" window: the stock file chooser widget over a folder of a few files.

Run: ``python gtk_file_chooser.py [--x X --y Y] [--log FILE] [--folder DIR]``
(under a D-Bus session with AT-SPI so the accessibility tree can be read).
Without ``--folder`` it shows ``<tmp>/conway-chooser-<uid>/Documents``, refilled
with the same few files at every start (a fixed name: the path bar shows it).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from _gtk_common import log_ready, parse_args, when_settled

FILES = ("budget-2024.ods", "holiday-photo.png", "meeting-notes.txt", "project-plan.pdf")
FOLDERS = ("Archive", "Drafts")


def main(argv: list[str] | None = None) -> int:
    extra = [a for a in (argv if argv is not None else sys.argv[1:])]
    folder = None
    if "--folder" in extra:
        i = extra.index("--folder")
        folder = extra[i + 1]
        del extra[i:i + 2]
    args = parse_args(extra)
    import gi

    gi.require_version("Gtk", "3.0")
    from gi.repository import Gtk

    if folder is None:
        folder = str(Path(tempfile.gettempdir()) / f"conway-chooser-{os.getuid()}" / "Documents")
        shutil.rmtree(folder, ignore_errors=True)
        Path(folder).mkdir(parents=True)
        for name in FILES:
            Path(folder, name).write_text("sample\n")
        for name in FOLDERS:
            Path(folder, name).mkdir()
    win = Gtk.Window(title="Open File")
    win.set_default_size(args.width, args.height)
    win.move(args.x, args.y)
    win.connect("destroy", Gtk.main_quit)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
    box.set_border_width(8)
    win.add(box)
    chooser = Gtk.FileChooserWidget(action=Gtk.FileChooserAction.OPEN)
    chooser.set_current_folder(folder)
    chooser.set_show_hidden(False)
    box.pack_start(chooser, True, True, 0)
    buttons = Gtk.Box(spacing=8)
    box.pack_start(buttons, False, False, 0)
    for label in ("Cancel", "Open"):
        b = Gtk.Button(label=label)
        b.set_size_request(110, 34)
        buttons.pack_end(b, False, False, 0)
    when_settled(win, lambda w: log_ready(w, args.log))
    win.show_all()
    Gtk.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
