"""The button-board task family: a Tk window of labelled buttons in a seeded random layout; a task names one.

    python conway/evals/button_board.py app LOG --seed S --index I [--x X --y Y]   # the app (needs a display)
    python conway/evals/button_board.py check LOG LABEL                             # exit 0: LABEL pressed first

The app writes LOG (JSON lines): first `{"event": "ready", "target": …, "buttons": {label: box}}` with each
button's box in screen pixels (the layout is the app's own, independent of any model: hindsight labels can
use it), then `{"event": "pressed", "label": …}` per press. `check` passes only when the FIRST press was the
named button, so pressing every button does not pass. `task_file()` writes a single-session task
(`conway start --task-file`) whose acceptance criterion runs `check`: verified by Conway, not declared.

Standard library only (tkinter inside `app`), so the acceptance command runs with any python3.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

GENERATOR = "conway-button-board/1"
LABELS = ("Save", "Open", "Print", "Close", "Help", "Send", "Copy", "Undo", "Next", "Back")
WINDOW = (480, 320)
BUTTON = (96, 40)


def layout(seed: int, index: int, count: int = 4) -> tuple[str, dict[str, tuple[int, int, int, int]]]:
    """(target label, {label: (x0, y0, x1, y1)} in window pixels) for case `index` of `seed`; no overlaps."""
    rng = random.Random(f"{GENERATOR}:{seed}:{index}")
    labels = rng.sample(LABELS, count)
    cols, rows = WINDOW[0] // (BUTTON[0] + 24), WINDOW[1] // (BUTTON[1] + 24)
    cells = rng.sample(range(cols * rows), count)
    boxes = {}
    cw, ch = WINDOW[0] // cols, WINDOW[1] // rows
    for label, cell in zip(labels, cells):
        x0 = (cell % cols) * cw + rng.randint(0, cw - BUTTON[0])
        y0 = (cell // cols) * ch + rng.randint(0, ch - BUTTON[1])
        boxes[label] = (x0, y0, x0 + BUTTON[0] - 1, y0 + BUTTON[1] - 1)
    return labels[0], boxes


def task_file(seed: int, index: int, log: str = "button-log.jsonl") -> str:
    """The task (Markdown with acceptance front matter) for case `index`: press the named button once."""
    target, _ = layout(seed, index)
    here = Path(__file__).resolve()
    check = f"python3 {here} check {log} {target}"
    return (f"---\nacceptance:\n  - command_exits_zero: {check}\n    timeout_s: 30\n---\n"
            f"The window on the screen shows several buttons. Click the button labelled \"{target}\" once, "
            f"then finish. Do not click any other button.\n")


def first_press(log: Path) -> str | None:
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "pressed":
            return str(event.get("label"))
    return None


def run_app(log_path: Path, seed: int, index: int, x: int, y: int) -> int:
    import tkinter as tk

    target, boxes = layout(seed, index)
    out = open(log_path, "a", encoding="utf-8")

    def log(event: str, **data: object) -> None:
        out.write(json.dumps({"event": event, **data}) + "\n")
        out.flush()

    root = tk.Tk()
    root.title("conway button board")
    root.geometry(f"{WINDOW[0]}x{WINDOW[1]}+{x}+{y}")
    root.configure(background="#e6e6e6")
    for label, (x0, y0, x1, y1) in boxes.items():
        b = tk.Button(root, text=label, command=lambda lab=label: log("pressed", label=lab),
                      background="#4a78c2", foreground="white", activebackground="#2f5aa0", font=("DejaVu Sans", 12))
        b.place(x=x0, y=y0, width=x1 - x0 + 1, height=y1 - y0 + 1)
    root.update_idletasks()
    root.update()

    def ready() -> None:
        ox, oy = root.winfo_rootx(), root.winfo_rooty()
        screen = {lab: [x0 + ox, y0 + oy, x1 + ox, y1 + oy] for lab, (x0, y0, x1, y1) in boxes.items()}
        log("ready", generator=GENERATOR, seed=seed, index=index, target=target, buttons=screen)

    root.after(50, ready)
    root.mainloop()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="button_board")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("app", help="show the board (needs a display)")
    a.add_argument("log")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--index", type=int, default=0)
    a.add_argument("--x", type=int, default=40)
    a.add_argument("--y", type=int, default=40)
    c = sub.add_parser("check", help="exit 0 when LABEL was the first button pressed")
    c.add_argument("log")
    c.add_argument("label")
    args = ap.parse_args(argv)
    if args.cmd == "app":
        return run_app(Path(args.log), args.seed, args.index, args.x, args.y)
    pressed = first_press(Path(args.log))
    if pressed == args.label:
        print(f"first press: {pressed}")
        return 0
    print(f"first press: {pressed or 'none'} (wanted {args.label})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
