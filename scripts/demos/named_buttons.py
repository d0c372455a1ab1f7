"""A generated task suite where the instruction must be read: press the named button among 2-4 on a small screen.

    python -m scripts.demos.named_buttons OUT --train 16 --held-out 16 [--buttons 2] [--seed 0] [--screen 84]

writes OUT/train/examples/buttons/<id>.json and OUT/held-out/examples/buttons/<id>.json: OSWorld-format tasks
that `conway tasks run`, `conway rollouts` and `conway candidate-eval --suite tasks` run on a disposable desktop.
Each task's setup launches a GTK 3 board (python3-gi, given inline to `python3 -c`) at the screen's top-left
corner: N red buttons with white labels in N of the 2x2 cells, in seeded random places; the instruction names
one. Pressing a button writes its label to ~/pressed.txt once (the FIRST press only), and the task's checker
compares that file with the named label: reward 1 for the named button, 0 otherwise (no press, another one).
No task carries its answer anywhere the policy sees, and nothing labels an action: the checker is the only
judge. Train and held-out tasks come from different seeds (held-out: seed + 1_000_000). Each task declares its
chance level, 1/N: what pressing one of its N buttons at random scores (conway.evals.chance).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

LABELS = ("Save", "Open", "Print", "Close", "Help", "Send", "Copy", "Undo")
BUTTON = (34, 28)

APP = r"""
import json, os, sys
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
spec = json.loads(sys.argv[1])
css = Gtk.CssProvider()
css.load_from_data(b"window { background: #e6e6e6; } button { background: #dc1e1e; background-image: none; "
                   b"color: white; font: 7px Sans; padding: 0; margin: 0; min-height: 0; min-width: 0; "
                   b"border: 1px solid #a01010; border-radius: 0; box-shadow: none; text-shadow: none; }")
Gtk.StyleContext.add_provider_for_screen(__import__("gi.repository.Gdk", fromlist=["Gdk"]).Screen.get_default(),
                                         css, Gtk.STYLE_PROVIDER_PRIORITY_USER)
def press(_button, label):
    path = os.path.expanduser("~/pressed.txt")
    if not os.path.exists(path):
        with open(path, "w") as fh:
            fh.write(label + "\n")
win = Gtk.Window(title="named buttons")
win.set_decorated(False)
win.set_default_size(*spec["screen"])
win.move(0, 0)
fixed = Gtk.Fixed()
win.add(fixed)
for label, (x0, y0, x1, y1) in spec["buttons"].items():
    b = Gtk.Button(label=label)
    b.set_size_request(x1 - x0 + 1, y1 - y0 + 1)
    b.connect("clicked", press, label)
    fixed.put(b, x0, y0)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
"""


def layout(seed: int, index: int, count: int, screen: int) -> tuple[str, dict[str, list[int]]]:
    """(named label, {label: [x0, y0, x1, y1]}) of task `index`: `count` buttons in distinct 2x2 cells."""
    if not 2 <= count <= 4:
        raise ValueError("2-4 buttons")
    rng = random.Random(f"named-buttons:{seed}:{index}:{count}:{screen}")
    labels = rng.sample(LABELS, count)
    cells = rng.sample(range(4), count)
    cell = screen // 2
    boxes = {}
    for label, c in zip(labels, cells):
        x0 = (c % 2) * cell + rng.randint(1, max(1, cell - BUTTON[0] - 1))
        y0 = (c // 2) * cell + rng.randint(1, max(1, cell - BUTTON[1] - 1))
        boxes[label] = [x0, y0, x0 + BUTTON[0] - 1, y0 + BUTTON[1] - 1]
    return labels[0], boxes


def task(seed: int, index: int, count: int, screen: int, prefix: str) -> dict:
    named, boxes = layout(seed, index, count, screen)
    spec = json.dumps({"screen": [screen, screen], "buttons": boxes}, separators=(",", ":"))
    return {
        "id": f"{prefix}-{index:03d}",
        "instruction": f'Click the button labelled "{named}".',
        "config": [{"type": "launch", "parameters": {"command": ["python3", "-c", APP, spec]}}],
        "related_apps": ["os"],
        "chance": round(1 / count, 4),  # a press on one of the buttons at random (conway.evals.chance)
        "evaluator": {"func": "exact_match",
                      "result": {"type": "vm_command_line", "command": "cat ~/pressed.txt 2>/dev/null; true",
                                 "shell": True},
                      "expected": {"type": "rule", "rules": {"expected": f"{named}\n"}}},
    }


def write_suite(out: Path, *, train: int, held_out: int, buttons: int = 2, seed: int = 0,
                screen: int = 84) -> tuple[Path, Path]:
    """(train folder, held-out folder)."""
    folders = []
    for name, n, s in (("train", train, seed), ("held-out", held_out, seed + 1_000_000)):
        folder = out / name
        tasks = folder / "examples" / "buttons"
        tasks.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            t = task(s, i, buttons, screen, name)
            (tasks / f"{t['id']}.json").write_text(json.dumps(t, indent=1) + "\n", encoding="utf-8")
        folders.append(folder)
    return folders[0], folders[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="named_buttons", description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=16)
    ap.add_argument("--held-out", type=int, default=16)
    ap.add_argument("--buttons", type=int, default=2, choices=(2, 3, 4))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--screen", type=int, default=84)
    a = ap.parse_args(argv)
    tr, ho = write_suite(Path(a.out), train=a.train, held_out=a.held_out, buttons=a.buttons, seed=a.seed,
                         screen=a.screen)
    print(f"train: {tr}\nheld-out: {ho}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
