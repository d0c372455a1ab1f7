"""The reward demo's suite (scripts/demos/named_buttons.py): tasks load and can run here; on a real disposable
desktop a click on the named button scores 1 and a click on the other scores 0 (the checker is the only judge)."""

from __future__ import annotations

import json

import pytest
from helpers.task_desktop import need_desktop

from conway.cli.main import main
from scripts.demos.named_buttons import layout, write_suite


def test_train_and_held_out_come_from_different_seeds_and_carry_no_answer(tmp_path):
    train, held = write_suite(tmp_path, train=3, held_out=3, buttons=3)
    tasks = sorted((train / "examples" / "buttons").glob("*.json")) + sorted((held / "examples" / "buttons").glob("*.json"))
    assert len(tasks) == 6
    data = [json.loads(t.read_text()) for t in tasks]
    named = [d["evaluator"]["expected"]["rules"]["expected"].strip() for d in data]
    assert all(f'"{n}"' in d["instruction"] for n, d in zip(named, data))
    assert all("x" not in d["instruction"].lower().split() for d in data)  # no coordinates anywhere it is asked
    assert layout(0, 0, 3, 84) != layout(1_000_000, 0, 3, 84)
    _, boxes = layout(0, 1, 4, 84)
    assert len(boxes) == 4 and all(0 <= v < 84 for box in boxes.values() for v in box)


@pytest.mark.desktop
def test_the_named_button_scores_one_and_the_other_zero(tmp_path, capsys):
    need_desktop()
    train, _ = write_suite(tmp_path / "suite", train=1, held_out=0, buttons=2)
    task = json.loads(next((train / "examples" / "buttons").glob("*.json")).read_text())
    named, boxes = layout(0, 0, 2, 84)
    other = next(label for label in boxes if label != named)
    mock = tmp_path / "mock"
    mock.mkdir()
    for label, name in ((named, "right"), (other, "wrong")):
        x0, y0, x1, y1 = boxes[label]
        (mock / f"{task['id']}.yaml").write_text(json.dumps([{"action": {"type": "click", "x": (x0 + x1) // 2,
                                                                          "y": (y0 + y1) // 2}}]))
        out = tmp_path / f"{name}.json"
        main(["--home", str(tmp_path / "home"), "tasks", "run", str(train), "tools.gui_failsafe=false", "--output",
              str(out), "--mock-scripts", str(mock), "--max-steps", "1", "--quiet"])
        case = json.loads(out.read_text())["cases"][0]
        assert case["score"] == (1.0 if name == "right" else 0.0), case
