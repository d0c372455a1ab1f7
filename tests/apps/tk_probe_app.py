"""A small Tk window that reports what happens to it, for the desktop tests.

Run: ``python tests/apps/tk_probe_app.py LOG.jsonl [--x X --y Y]``

Every line of LOG is one JSON object. The first is ``{"event": "ready",
"widgets": {...}}`` with each widget's bounds in root-window (input)
coordinates: ``{"x", "y", "w", "h", "cx", "cy"}``. Then one line per event:

- ``click`` (the button was pressed and released), ``double``, ``triple``,
  ``right`` (with the widget name);
- ``drag_start`` / ``drag_end`` with root coordinates, ``drag_motion`` count
  on ``drag_end``;
- ``text`` with the entry's whole value after every change;
- ``key`` with ``keysym``, ``char`` and ``mods`` (e.g. ``["Control"]``);
- ``scroll`` with ``dir`` in up/down/left/right.

The button is painted pure magenta (#ff00ff) so a scripted policy can find it
in a screenshot by colour. The app has no window manager to talk to: it
places itself with ``+X+Y`` and flushes the log after every line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tkinter as tk

BUTTON_RGB = (255, 0, 255)

_MODS = ((0x0001, "Shift"), (0x0004, "Control"), (0x0008, "Alt"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--x", type=int, default=40)
    ap.add_argument("--y", type=int, default=40)
    args = ap.parse_args(argv)
    out = open(args.log, "a", encoding="utf-8")

    def log(event: str, **data: object) -> None:
        out.write(json.dumps({"event": event, **data}, ensure_ascii=False) + "\n")
        out.flush()

    root = tk.Tk()
    root.title("conway tk probe")
    root.geometry(f"760x560+{args.x}+{args.y}")
    root.configure(background="#dddddd")

    button = tk.Button(root, text="Press me", background="#ff00ff", activebackground="#ff00ff",
                       foreground="#000000", highlightthickness=0, borderwidth=0, relief="flat",
                       command=lambda: log("click", widget="button"))
    button.place(x=20, y=20, width=160, height=60)

    dbl = tk.Label(root, text="double / triple", background="#88ccff")
    dbl.place(x=200, y=20, width=160, height=60)
    dbl.bind("<Double-Button-1>", lambda e: log("double", widget="dbl"))
    dbl.bind("<Triple-Button-1>", lambda e: log("triple", widget="dbl"))

    ctx = tk.Label(root, text="right-click me", background="#ffcc88")
    ctx.place(x=380, y=20, width=160, height=60)
    ctx.bind("<Button-3>", lambda e: log("right", widget="ctx"))

    var = tk.StringVar(root)
    entry = tk.Entry(root, textvariable=var, font=("TkFixedFont", 14))
    entry.place(x=20, y=100, width=520, height=36)
    var.trace_add("write", lambda *_: log("text", value=var.get()))

    drag = tk.Canvas(root, background="#ccffcc", highlightthickness=0)
    drag.place(x=20, y=160, width=340, height=200)
    motion = {"n": 0}

    def drag_start(e: tk.Event) -> None:
        motion["n"] = 0
        log("drag_start", x=e.x_root, y=e.y_root)

    def drag_move(e: tk.Event) -> None:
        motion["n"] += 1

    def drag_end(e: tk.Event) -> None:
        log("drag_end", x=e.x_root, y=e.y_root, motions=motion["n"])

    drag.bind("<ButtonPress-1>", drag_start)
    drag.bind("<B1-Motion>", drag_move)
    drag.bind("<ButtonRelease-1>", drag_end)

    scroll = tk.Canvas(root, background="#ffffcc", highlightthickness=0)
    scroll.place(x=380, y=160, width=340, height=200)
    # X11 wheel: buttons 4/5 vertical, 6/7 horizontal. Tk 8.6 reports 6/7 as
    # Shift+Button-4/5; newer Tk reports <MouseWheel>/<Shift-MouseWheel>.
    names = {4: "up", 5: "down", 6: "left", 7: "right"}

    def on_button(e: tk.Event) -> None:
        num = int(e.num) if str(e.num).isdigit() else 0
        if num in (4, 5) and int(e.state) & 0x0001:
            num += 2  # Tk 8.6: horizontal wheel arrives as Shift + vertical
        if num in names:
            log("scroll", dir=names[num], via=f"button{e.num}")

    scroll.bind("<ButtonPress>", on_button)
    scroll.bind("<MouseWheel>", lambda e: log("scroll", dir="up" if e.delta > 0 else "down", via="wheel"))
    scroll.bind("<Shift-MouseWheel>", lambda e: log("scroll", dir="left" if e.delta > 0 else "right",
                                                    via="shift-wheel"))

    keys = tk.Label(root, text="keys land here when nothing else has focus", background="#eeeeee")
    keys.place(x=20, y=380, width=700, height=60)

    def on_key(e: tk.Event) -> None:
        mods = [name for bit, name in _MODS if int(e.state) & bit]
        log("key", keysym=e.keysym, char=e.char, mods=mods, widget=str(e.widget))

    root.bind_all("<KeyPress>", on_key, add="+")

    root.update_idletasks()
    root.wait_visibility(root)
    root.update()

    def bounds(w: tk.Misc) -> dict[str, int]:
        x, y, bw, bh = w.winfo_rootx(), w.winfo_rooty(), w.winfo_width(), w.winfo_height()
        return {"x": x, "y": y, "w": bw, "h": bh, "cx": x + bw // 2, "cy": y + bh // 2}

    log("ready", widgets={n: bounds(w) for n, w in (
        ("window", root), ("button", button), ("dbl", dbl), ("ctx", ctx), ("entry", entry),
        ("drag", drag), ("scroll", scroll), ("keys", keys))}, tk=str(tk.TkVersion))
    root.mainloop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
