"""A Tk form with many labelled controls, for toolkits without an accessibility bridge.

Run: ``python tk_form.py [--x X --y Y] [--log FILE]``

Tk 8.6 on Linux exposes no AT-SPI tree, so this app reports its own widgets:
when ``$CONWAY_GROUNDING_TARGETS`` names a file it writes ``{"window": [x, y,
w, h], "targets": [{"role", "name", "states", "bounds"}]}`` there (root
coordinates, AT-SPI role names) once it is mapped; ``--log`` gets the same
as a ``ready`` line. One control is disabled on purpose.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tkinter as tk


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--x", type=int, default=60)
    ap.add_argument("--y", type=int, default=60)
    ap.add_argument("--log")
    args = ap.parse_args(argv)

    root = tk.Tk()
    root.title("Registration form")
    root.geometry(f"620x520+{args.x}+{args.y}")
    controls: list[tuple[str, str, tk.Widget, list[str]]] = []  # role, name, widget, extra states

    form = tk.Frame(root, padx=16, pady=12)
    form.pack(fill="both", expand=True)
    for row, label in enumerate(("First name", "Last name", "Email", "Phone", "City")):
        tk.Label(form, text=label, anchor="w", width=12).grid(row=row, column=0, sticky="w", pady=3)
        e = tk.Entry(form, width=32)
        e.grid(row=row, column=1, sticky="we", pady=3)
        controls.append(("text", label, e, ["editable", "single-line"]))
    row = 5
    tk.Label(form, text="Size", anchor="w").grid(row=row, column=0, sticky="w")
    size = tk.StringVar(value="Medium")
    sizes = tk.Frame(form)
    sizes.grid(row=row, column=1, sticky="w")
    for s in ("Small", "Medium", "Large"):
        rb = tk.Radiobutton(sizes, text=s, variable=size, value=s)
        rb.pack(side="left", padx=4)
        controls.append(("radio button", s, rb, []))
    for r, text in ((6, "Subscribe to the newsletter"), (7, "I accept the terms")):
        cb = tk.Checkbutton(form, text=text)
        cb.grid(row=r, column=1, sticky="w")
        controls.append(("check box", text, cb, []))
    tk.Label(form, text="Quantity", anchor="w").grid(row=8, column=0, sticky="w", pady=3)
    spin = tk.Spinbox(form, from_=1, to=10, width=6)
    spin.grid(row=8, column=1, sticky="w", pady=3)
    controls.append(("spin button", "Quantity", spin, ["editable"]))
    tk.Label(form, text="Volume", anchor="w").grid(row=9, column=0, sticky="w")
    scale = tk.Scale(form, from_=0, to=100, orient="horizontal", length=220)
    scale.grid(row=9, column=1, sticky="w")
    controls.append(("slider", "Volume", scale, []))
    tk.Label(form, text="Country", anchor="w").grid(row=10, column=0, sticky="w", pady=3)
    country = tk.StringVar(value="Canada")
    menu = tk.OptionMenu(form, country, "Canada", "France", "Japan")
    menu.grid(row=10, column=1, sticky="w", pady=3)
    controls.append(("combo box", "Country", menu, []))
    buttons = tk.Frame(root, pady=10)
    buttons.pack(fill="x")
    for text in ("Help", "Reset", "Cancel", "Submit"):
        b = tk.Button(buttons, text=text, width=9)
        b.pack(side="left" if text == "Help" else "right", padx=8)
        controls.append(("push button", text, b, []))
    gone = tk.Button(buttons, text="Delete account", state="disabled")
    gone.pack(side="left", padx=8)
    controls.append(("push button", "Delete account", gone, []))

    root.update_idletasks()
    root.wait_visibility(root)
    root.update()

    def report() -> None:
        root.update()
        targets = []
        for role, name, w, extra in controls:
            enabled = str(w.cget("state")) != "disabled"
            states = ["showing", "visible", *(["enabled", "sensitive"] if enabled else []), *extra]
            targets.append({"role": role, "name": name, "states": sorted(states),
                            "bounds": [w.winfo_rootx(), w.winfo_rooty(), w.winfo_width(), w.winfo_height()]})
        window = [root.winfo_rootx(), root.winfo_rooty(), root.winfo_width(), root.winfo_height()]
        data = {"window": window, "targets": targets}
        path = os.environ.get("CONWAY_GROUNDING_TARGETS")
        if path:
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
            os.replace(tmp, path)
        if args.log:
            with open(args.log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"event": "ready", "window": window,
                                     "widgets": [{k: t[k] for k in ("role", "name", "bounds")} for t in targets]})
                         + "\n")

    root.after(200, report)
    root.mainloop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
