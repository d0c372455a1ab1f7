"""The button-board task family: a Tk window of labelled buttons in a seeded random layout; a task names one.

    python -m scripts.demos.button_board app LOG --seed S --index I [--board large|small] [--count N] [--x X --y Y]
    python -m scripts.demos.button_board check LOG LABEL          # exit 0: LABEL pressed first

Boards: `large` (the default: 480x320, 4 buttons of 96x40) and `small` (84x84, 1-4 buttons of 34x28 in a 2x2
grid, for a tiny VLM that sees 84x84 screens: `scripts/demos/learning_demo.py --agent` runs it on an 84x84 Xvfb
screen, so every button covers exactly one 28-px image-token centre).

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
from dataclasses import dataclass
from pathlib import Path

GENERATOR = "conway-button-board/1"
LABELS = ("Save", "Open", "Print", "Close", "Help", "Send", "Copy", "Undo", "Next", "Back")
WINDOW = (480, 320)
BUTTON = (96, 40)


@dataclass(frozen=True)
class Board:
    window: tuple[int, int]
    button: tuple[int, int]
    gap: int
    """Space kept free around a button when the window is cut into one cell per possible button."""
    font: int
    inset: int = 0
    """A button keeps this far from its cell's edges (small: off the 28-px token centres on cell borders)."""
    colour: str = "#4a78c2"
    """Button face (white text). The small board's is the vision-check red, (220, 30, 30): the tiny demo model
    stayed at chance on blue buttons (docs/measurements.md)."""


BOARDS = {"large": Board(WINDOW, BUTTON, 24, 12),
          "small": Board((84, 84), (34, 28), 4, 7, inset=1, colour="#dc1e1e")}


def max_buttons(board: str = "large") -> int:
    b = BOARDS[board]
    return (b.window[0] // (b.button[0] + b.gap)) * (b.window[1] // (b.button[1] + b.gap))


def layout(seed: int, index: int, count: int = 4, board: str = "large"
           ) -> tuple[str, dict[str, tuple[int, int, int, int]]]:
    """(target label, {label: (x0, y0, x1, y1)} in window pixels) for case `index` of `seed`; no overlaps."""
    b = BOARDS[board]
    rng = random.Random(f"{GENERATOR}:{seed}:{index}" + ("" if board == "large" else f":{board}:{count}"))
    labels = rng.sample(LABELS, count)
    cols, rows = b.window[0] // (b.button[0] + b.gap), b.window[1] // (b.button[1] + b.gap)
    if not 1 <= count <= cols * rows:
        raise ValueError(f"a {board} board holds 1-{cols * rows} buttons, not {count}")
    cells = rng.sample(range(cols * rows), count)
    boxes = {}
    cw, ch = b.window[0] // cols, b.window[1] // rows
    for label, cell in zip(labels, cells):
        x0 = (cell % cols) * cw + rng.randint(b.inset, cw - b.button[0] - b.inset)
        y0 = (cell // cols) * ch + rng.randint(b.inset, ch - b.button[1] - b.inset)
        boxes[label] = (x0, y0, x0 + b.button[0] - 1, y0 + b.button[1] - 1)
    return labels[0], boxes


def task_file(seed: int, index: int, log: str = "button-log.jsonl", count: int = 4, board: str = "large") -> str:
    """The task (Markdown with acceptance front matter) for case `index`: press the named button once."""
    target, _ = layout(seed, index, count, board)
    here = Path(__file__).resolve()
    check = f"python3 {here} check {log} {target}"
    shows = "a button" if count == 1 else "several buttons"
    return (f"---\nacceptance:\n  - command_exits_zero: {check}\n    timeout_s: 30\n---\n"
            f"The window on the screen shows {shows}. Click the button labelled \"{target}\" once, "
            f"then finish. Do not click any other button.\n")


def _events(log: Path) -> list[dict]:
    """The app log's events in order; unreadable lines (a torn last line) are skipped."""
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def read_ready(log: Path) -> dict | None:
    """The app's `ready` line (target and every button's screen box), or None before the board is shown."""
    return next((e for e in _events(log) if e.get("event") == "ready"), None)


def first_press(log: Path) -> str | None:
    pressed = next((e for e in _events(log) if e.get("event") == "pressed"), None)
    return None if pressed is None else str(pressed.get("label"))


def run_app(log_path: Path, seed: int, index: int, x: int, y: int, count: int = 4, board: str = "large") -> int:
    import tkinter as tk

    target, boxes = layout(seed, index, count, board)
    window, font = BOARDS[board].window, BOARDS[board].font
    out = open(log_path, "a", encoding="utf-8")

    def log(event: str, **data: object) -> None:
        out.write(json.dumps({"event": event, **data}) + "\n")
        out.flush()

    root = tk.Tk()
    root.title("conway button board")
    root.geometry(f"{window[0]}x{window[1]}+{x}+{y}")
    root.configure(background="#e6e6e6")
    for label, (x0, y0, x1, y1) in boxes.items():
        b = tk.Button(root, text=label, command=lambda lab=label: log("pressed", label=lab),
                      background=BOARDS[board].colour, foreground="white",
                      activebackground="#2f5aa0" if board == "large" else BOARDS[board].colour,
                      font=("DejaVu Sans", font), borderwidth=1 if board == "small" else 2,
                      padx=0, pady=0, highlightthickness=0)
        b.place(x=x0, y=y0, width=x1 - x0 + 1, height=y1 - y0 + 1)
    root.update_idletasks()
    root.update()

    def ready() -> None:
        ox, oy = root.winfo_rootx(), root.winfo_rooty()
        screen = {lab: [x0 + ox, y0 + oy, x1 + ox, y1 + oy] for lab, (x0, y0, x1, y1) in boxes.items()}
        log("ready", generator=GENERATOR, seed=seed, index=index, board=board, count=count, target=target,
            buttons=screen)

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
    a.add_argument("--board", default="large", choices=sorted(BOARDS))
    a.add_argument("--count", type=int, default=4, help="buttons on the board (large: 1-20, small: 1-4)")
    a.add_argument("--x", type=int, default=40)
    a.add_argument("--y", type=int, default=40)
    c = sub.add_parser("check", help="exit 0 when LABEL was the first button pressed")
    c.add_argument("log")
    c.add_argument("label")
    args = ap.parse_args(argv)
    if args.cmd == "app":
        if not 1 <= args.count <= max_buttons(args.board):
            ap.error(f"--count: a {args.board} board holds 1-{max_buttons(args.board)} buttons")
        return run_app(Path(args.log), args.seed, args.index, args.x, args.y, args.count, args.board)
    pressed = first_press(Path(args.log))
    if pressed == args.label:
        print(f"first press: {pressed}")
        return 0
    print(f"first press: {pressed or 'none'} (wanted {args.label})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
