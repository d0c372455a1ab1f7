"""The supervised upper bound's labels (scripts/demos/upper_bound.py): each recorded request keeps its prompt and
screenshot and gets the right answer, a click at the named target's centre from the task's own layout; the copy
says it is labelled, and every row trains."""

from __future__ import annotations

import json

from helpers.rollout_sets import click, write_rollout_set

from scripts.demos.perceivable_targets import layout, write_suite
from scripts.demos.upper_bound import label_rollouts


def test_every_request_is_labelled_with_a_click_on_the_named_target(tmp_path):
    train, _ = write_suite(tmp_path / "suite", train=3, held_out=0, targets=3, by="shape", partial=True)
    raw = write_rollout_set(tmp_path / "raw", {f"train-{i:03d}": [(click(1, 1), 0.0), (click(2, 2), 0.25)]
                                               for i in range(3)})
    assert label_rollouts(raw, train, tmp_path / "labelled") == 6
    from training.rollout_data import rollout_examples
    examples, _ = rollout_examples(tmp_path / "labelled")
    assert len(examples) == 6
    for ex in examples:
        named, targets = layout(0, int(ex.meta["task"].split("-")[1]), 3, 84, "shape")
        x0, y0, x1, y1 = next(t["box"] for t in targets if t["name"] == named)
        action = json.loads(ex.completion)["action"]
        assert action == {"type": "click", "x": (x0 + x1) // 2, "y": (y0 + y1) // 2}
    manifest = json.loads((tmp_path / "labelled" / "manifest.json").read_text())
    assert "labelled" in manifest and "not checker scores" in manifest["labelled"]
    assert json.loads((raw / "manifest.json").read_text())["rollouts"][1]["reward"] == 0.25  # the original is kept


def test_said_labels_name_the_target_and_its_quarter_before_the_click(tmp_path):
    train, _ = write_suite(tmp_path / "suite", train=4, held_out=0, targets=3, by="colour")
    raw = write_rollout_set(tmp_path / "raw", {f"train-{i:03d}": [(click(1, 1), 0.0)] for i in range(4)})
    assert label_rollouts(raw, train, tmp_path / "labelled", say=True) == 4
    from training.rollout_data import rollout_examples
    examples, _ = rollout_examples(tmp_path / "labelled")
    assert len(examples) == 4
    for ex in examples:
        named, targets = layout(0, int(ex.meta["task"].split("-")[1]), 3, 84, "colour")
        x0, y0, x1, y1 = next(t["box"] for t in targets if t["name"] == named)
        answer = json.loads(ex.completion)
        quarter = ("top" if y1 < 42 else "bottom") + " " + ("left" if x1 < 42 else "right")
        assert answer["thought"] == f"{named}: {quarter}"
        assert answer["action"] == {"type": "click", "x": (x0 + x1) // 2, "y": (y0 + y1) // 2}


def test_cell_labels_click_the_centre_of_the_targets_quarter_which_lies_inside_it(tmp_path):
    train, _ = write_suite(tmp_path / "suite", train=6, held_out=0, targets=3, by="colour")
    raw = write_rollout_set(tmp_path / "raw", {f"train-{i:03d}": [(click(1, 1), 0.0)] for i in range(6)})
    label_rollouts(raw, train, tmp_path / "labelled", say=True, cell=True)
    from training.rollout_data import rollout_examples
    examples, _ = rollout_examples(tmp_path / "labelled")
    for ex in examples:
        named, targets = layout(0, int(ex.meta["task"].split("-")[1]), 3, 84, "colour")
        x0, y0, x1, y1 = next(t["box"] for t in targets if t["name"] == named)
        action = json.loads(ex.completion)["action"]
        assert action["x"] in (21, 63) and action["y"] in (21, 63)
        assert x0 <= action["x"] <= x1 and y0 <= action["y"] <= y1


def test_generated_rows_refuse_a_suite_they_cannot_draw_in_one_line(capsys):
    import pytest

    from scripts.demos import upper_bound

    with pytest.raises(SystemExit) as exit_:
        upper_bound.main(["--rows", "generated", "--suite", "shape"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--rows generated draws coloured squares only" in err and "Traceback" not in err
