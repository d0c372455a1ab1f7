"""A generated task suite whose instruction names what a small VLM can see: the target's colour or its shape.

    python -m scripts.demos.perceivable_targets OUT --train 16 --held-out 16 [--targets 3] [--by colour|shape]
        [--seed 0] [--screen 84]

writes OUT/train/examples/targets/<id>.json and OUT/held-out/examples/targets/<id>.json: OSWorld-format tasks
that `conway tasks run`, `conway rollouts` and `conway candidate-eval --suite tasks` run on a disposable desktop.
The named-label suite (scripts/demos/named_buttons.py) asks the model to read a word on the screen, which the
tiny base cannot; here the word is in the instruction and the screen shows only what it names:

    --by colour   N filled squares of N different colours; "Click the green square."
    --by shape    N shapes (square, circle, triangle, diamond) all of one colour; "Click the circle."

Each task's setup launches a GTK 3 drawing (python3-gi, given inline to `python3 -c`) at the screen's top-left
corner: N targets (2-4) in N of the 2x2 cells, cells and offsets seeded at random per task, so a target's place
says nothing about which one is named. The first press that lands inside a target's box writes the target's name
to ~/pressed.txt (presses on the background, and other buttons than the left, write nothing); the checker compares that file with the named
target: reward 1 for the named one, 0 otherwise (with --partial, the train tasks' checker scores two parts, a
press on any target and a press on the named one, so another target earns 0.25: a denser reward). The answer is nowhere the policy sees but in the instruction's
words, and nothing labels an action. Each task declares its chance level, 1/N (conway.evals.chance). Train and
held-out tasks come from different seeds (held-out: seed + 1_000_000).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

COLOURS = {"red": (220, 30, 30), "green": (30, 160, 50), "blue": (40, 70, 220), "yellow": (235, 200, 20)}
"""Four colours far apart in RGB, each one a plain word."""
SHAPES = ("square", "circle", "triangle", "diamond")
SHAPE_COLOUR = (40, 70, 220)
"""Shapes share one colour, so only the outline tells them apart."""
SIDE = 28
"""A target's side: one token of the tiny VLM's 28-px grid, and inside a 42-px cell of an 84-px screen."""
BACKGROUND = (0.9, 0.9, 0.9)
BY = ("colour", "shape")

APP = r"""
import json, math, os, sys
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, Gtk
spec = json.loads(sys.argv[1])
def draw(_area, cr):
    cr.set_source_rgb(*spec["background"])
    cr.paint()
    for t in spec["targets"]:
        x0, y0, x1, y1 = t["box"]
        w, h = x1 - x0 + 1, y1 - y0 + 1
        cr.set_source_rgb(*[c / 255 for c in t["rgb"]])
        if t["shape"] == "circle":
            cr.arc(x0 + w / 2, y0 + h / 2, w / 2, 0, 2 * math.pi)
        elif t["shape"] == "triangle":
            cr.move_to(x0 + w / 2, y0); cr.line_to(x0 + w, y0 + h); cr.line_to(x0, y0 + h); cr.close_path()
        elif t["shape"] == "diamond":
            cr.move_to(x0 + w / 2, y0); cr.line_to(x0 + w, y0 + h / 2); cr.line_to(x0 + w / 2, y0 + h)
            cr.line_to(x0, y0 + h / 2); cr.close_path()
        else:
            cr.rectangle(x0, y0, w, h)
        cr.fill()
def press(_area, event):
    if event.button != 1:  # a click is the left button, as a GTK button's "clicked" is
        return True
    for t in spec["targets"]:
        x0, y0, x1, y1 = t["box"]
        if x0 <= event.x <= x1 + 1 and y0 <= event.y <= y1 + 1:
            path = os.path.expanduser("~/pressed.txt")
            if not os.path.exists(path):
                with open(path, "w") as fh:
                    fh.write(t["name"] + "\n")
            break
    return True
win = Gtk.Window(title="targets")
win.set_decorated(False)
win.set_default_size(*spec["screen"])
win.move(0, 0)
area = Gtk.DrawingArea()
area.set_size_request(*spec["screen"])
area.add_events(Gdk.EventMask.BUTTON_PRESS_MASK)
area.connect("draw", draw)
area.connect("button-press-event", press)
win.add(area)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
"""


def layout(seed: int, index: int, count: int, screen: int, by: str) -> tuple[str, list[dict]]:
    """(the named target's name, the targets: {name, shape, rgb, box [x0, y0, x1, y1]}) of task `index`."""
    if not 2 <= count <= 4:
        raise ValueError("2-4 targets")
    if by not in BY:
        raise ValueError(f"--by must be one of {', '.join(BY)}")
    rng = random.Random(f"perceivable-targets:{by}:{seed}:{index}:{count}:{screen}")
    names = rng.sample(list(COLOURS) if by == "colour" else list(SHAPES), count)
    cells = rng.sample(range(4), count)
    cell = screen // 2
    targets = []
    for name, c in zip(names, cells):
        x0 = (c % 2) * cell + rng.randint(1, max(1, cell - SIDE - 1))
        y0 = (c // 2) * cell + rng.randint(1, max(1, cell - SIDE - 1))
        shape, rgb = ("square", COLOURS[name]) if by == "colour" else (name, SHAPE_COLOUR)
        targets.append({"name": name, "shape": shape, "rgb": list(rgb), "box": [x0, y0, x0 + SIDE - 1, y0 + SIDE - 1]})
    return names[0], targets  # names were drawn at random: the first is as good as any


def instruction(named: str, by: str) -> str:
    return f"Click the {named} square." if by == "colour" else f"Click the {named}."


PRESSED = {"type": "vm_command_line", "command": "cat ~/pressed.txt 2>/dev/null; true", "shell": True}
ANY = {"type": "vm_command_line", "command": "test -s ~/pressed.txt && echo pressed; true", "shell": True}
PARTIAL_WEIGHTS = [1, 3]
"""--partial: pressing a target at all is one part in four, pressing the named one the other three."""


def evaluator(named: str, partial: bool) -> dict:
    """Reward 1 for the named target; with `partial`, 0.25 for another target (conway.tasks.evaluate's
    partial credit: a dense reward that separates a press on a target from a press on nothing), else 0."""
    if not partial:
        return {"func": "exact_match", "result": PRESSED, "expected": {"type": "rule", "rules": {"expected": f"{named}\n"}}}
    return {"func": ["exact_match", "exact_match"], "result": [ANY, PRESSED],
            "expected": [{"type": "rule", "rules": {"expected": "pressed\n"}},
                         {"type": "rule", "rules": {"expected": f"{named}\n"}}],
            "partial_credit": PARTIAL_WEIGHTS}


def task(seed: int, index: int, count: int, screen: int, by: str, prefix: str, partial: bool = False) -> dict:
    named, targets = layout(seed, index, count, screen, by)
    spec = json.dumps({"screen": [screen, screen], "background": list(BACKGROUND), "targets": targets},
                      separators=(",", ":"))
    return {
        "id": f"{prefix}-{index:03d}",
        "instruction": instruction(named, by),
        "config": [{"type": "launch", "parameters": {"command": ["python3", "-c", APP, spec]}}],
        "related_apps": ["os"],
        "chance": round(1 / count, 4),  # a press on one of the targets at random (conway.evals.chance)
        "evaluator": evaluator(named, partial),
    }


def write_suite(out: Path, *, train: int, held_out: int, targets: int = 3, by: str = "colour", seed: int = 0,
                screen: int = 84, partial: bool = False) -> tuple[Path, Path]:
    """(train folder, held-out folder); `partial` gives the train tasks partial credit (held-out tasks are always
    scored 1 or 0: success is what is measured)."""
    folders = []
    for name, n, s in (("train", train, seed), ("held-out", held_out, seed + 1_000_000)):
        folder = out / name
        tasks = folder / "examples" / "targets"
        tasks.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            t = task(s, i, targets, screen, by, name, partial=partial and name == "train")
            (tasks / f"{t['id']}.json").write_text(json.dumps(t, indent=1) + "\n", encoding="utf-8")
        folders.append(folder)
    return folders[0], folders[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="perceivable_targets", description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=16)
    ap.add_argument("--held-out", type=int, default=16)
    ap.add_argument("--targets", type=int, default=3, choices=(2, 3, 4))
    ap.add_argument("--by", default="colour", choices=BY)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--screen", type=int, default=84)
    ap.add_argument("--partial", action="store_true", help="train tasks give 0.25 for a press on another target")
    a = ap.parse_args(argv)
    tr, ho = write_suite(Path(a.out), train=a.train, held_out=a.held_out, targets=a.targets, by=a.by, seed=a.seed,
                         screen=a.screen, partial=a.partial)
    print(f"train: {tr}\nheld-out: {ho}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
