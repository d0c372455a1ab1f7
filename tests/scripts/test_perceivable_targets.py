"""The perceivable suite (scripts/demos/perceivable_targets.py): the instruction's word is the only clue, the
targets' places are shuffled, each task declares its chance; on a real disposable desktop a click on the named
target scores 1, on another target 0 (the checker is the only judge)."""

from __future__ import annotations

import json

import pytest
from helpers.desktop_fixtures import desktop, find_color_box, wait_until, xvfb_session  # noqa: F401  (fixtures)
from helpers.task_desktop import need_desktop

from conway.cli.main import main
from scripts.demos.perceivable_targets import COLOURS, SHAPES, layout, write_suite


@pytest.mark.parametrize("by", ["colour", "shape"])
def test_the_instruction_names_one_target_by_what_it_looks_like_and_carries_nothing_else(tmp_path, by):
    train, held = write_suite(tmp_path, train=6, held_out=2, targets=3, by=by)
    tasks = sorted((train / "examples" / "targets").glob("*.json")) + sorted((held / "examples" / "targets").glob("*.json"))
    assert len(tasks) == 8
    for path in tasks:
        t = json.loads(path.read_text())
        named = t["evaluator"]["expected"]["rules"]["expected"].strip()
        assert named in t["instruction"].split(" ")[2] and t["chance"] == round(1 / 3, 4)
        assert named in (COLOURS if by == "colour" else SHAPES)
    layouts = [layout(0, i, 3, 84, by) for i in range(12)]
    named_cells = {next((tg["box"][0] // 42, tg["box"][1] // 42) for tg in ts if tg["name"] == n) for n, ts in layouts}
    assert len(named_cells) > 1  # the named target is not always in the same place
    for _, ts in layouts:
        names = [tg["name"] for tg in ts]
        assert len(set(names)) == 3 and all(0 <= v < 84 for tg in ts for v in tg["box"])
        cells = {(tg["box"][0] // 42, tg["box"][1] // 42) for tg in ts}
        assert len(cells) == 3  # one target per cell: none overlaps
    assert layout(0, 0, 3, 84, by) != layout(1_000_000, 0, 3, 84, by)


@pytest.mark.desktop
def test_the_named_target_scores_one_and_another_zero(tmp_path):
    need_desktop()
    train, _ = write_suite(tmp_path / "suite", train=1, held_out=0, targets=3, by="colour")
    task = json.loads(next((train / "examples" / "targets").glob("*.json")).read_text())
    named, targets = layout(0, 0, 3, 84, "colour")
    other = next(t for t in targets if t["name"] != named)
    mine = next(t for t in targets if t["name"] == named)
    mock = tmp_path / "mock"
    mock.mkdir()
    for target, expect in ((mine, 1.0), (other, 0.0)):
        x0, y0, x1, y1 = target["box"]
        (mock / f"{task['id']}.yaml").write_text(json.dumps([{"action": {"type": "click", "x": (x0 + x1) // 2,
                                                                          "y": (y0 + y1) // 2}}]))
        out = tmp_path / f"{target['name']}.json"
        main(["--home", str(tmp_path / "home"), "tasks", "run", str(train), "tools.gui_failsafe=false", "--output",
              str(out), "--mock-scripts", str(mock), "--max-steps", "1", "--quiet"])
        report = json.loads(out.read_text())
        assert report["cases"][0]["score"] == expect, report["cases"][0]
        assert report["summary"]["chance"]["chance"] == round(1 / 3, 4)


@pytest.mark.desktop
def test_with_partial_credit_another_target_earns_a_quarter_and_the_background_nothing(tmp_path):
    need_desktop()
    train, _ = write_suite(tmp_path / "suite", train=1, held_out=0, targets=3, by="shape", partial=True)
    task = json.loads(next((train / "examples" / "targets").glob("*.json")).read_text())
    named, targets = layout(0, 0, 3, 84, "shape")
    other = next(t for t in targets if t["name"] != named)
    mine = next(t for t in targets if t["name"] == named)
    for name, (x, y), expect in (("named", _centre(mine), 1.0), ("other", _centre(other), 0.25),
                                 ("background", _background(targets), 0.0)):
        mock = tmp_path / f"mock-{name}"
        mock.mkdir()
        (mock / f"{task['id']}.yaml").write_text(json.dumps([{"action": {"type": "click", "x": x, "y": y}}]))
        out = tmp_path / f"{name}.json"
        main(["--home", str(tmp_path / "home"), "tasks", "run", str(train), "tools.gui_failsafe=false", "--output",
              str(out), "--mock-scripts", str(mock), "--max-steps", "1", "--quiet"])
        case = json.loads(out.read_text())["cases"][0]
        assert case["score"] == expect and case["outcome"] == ("pass" if expect == 1.0 else "fail"), (name, case)


def _centre(t: dict) -> tuple[int, int]:
    x0, y0, x1, y1 = t["box"]
    return (x0 + x1) // 2, (y0 + y1) // 2


def _background(targets: list[dict]) -> tuple[int, int]:
    """A point of the board inside no target's box."""
    return next((x, y) for y in range(2, 82, 4) for x in range(2, 82, 4)
                if not any(t["box"][0] - 1 <= x <= t["box"][2] + 1 and t["box"][1] - 1 <= y <= t["box"][3] + 1
                           for t in targets))


@pytest.mark.desktop
def test_the_board_draws_every_target_where_its_box_says(tmp_path, desktop):  # noqa: F811  (the fixture)
    """What the model sees, not only what the checker reads: the board's click handler scores the boxes whether or
    not they were painted, so without cairo's bindings for PyGObject (python3-gi-cairo) every screen the loop
    sent was the bare window's grey and every score above was a guess (measured: docs/learning.md)."""
    import shutil
    import subprocess

    from PIL import ImageGrab

    from conway.sandbox.environment import SYSTEM_PATH

    task = json.loads(next((write_suite(tmp_path, train=1, held_out=0, targets=3, by="colour")[0] / "examples"
                            / "targets").glob("*.json")).read_text())
    argv = task["config"][0]["parameters"]["command"]
    spec = json.loads(argv[-1])
    python = shutil.which(argv[0], path=SYSTEM_PATH)  # the desktop's python3, as a launch step finds it
    assert python, "python3 is not on the desktop's PATH"
    log = tmp_path / "board.log"
    with log.open("w") as err:
        app = subprocess.Popen([python, *argv[1:]], stdout=err, stderr=err)
    try:
        def drawn() -> bool:
            shot = ImageGrab.grab(xdisplay=desktop.display)
            return all(find_color_box(shot, tuple(t["rgb"]), 8) for t in spec["targets"])

        wait_until(drawn, timeout=60.0, interval=0.25, what=f"the board's targets on screen ({log})")
        shot = ImageGrab.grab(xdisplay=desktop.display)
        for t in spec["targets"]:
            assert find_color_box(shot, tuple(t["rgb"]), 8) == tuple(t["box"]), (t, log.read_text())
    finally:
        app.terminate()
        app.wait(timeout=10)
    assert "Error" not in log.read_text(), log.read_text()
