"""The button-board task family (issue 16 §2, first piece): a seeded Tk board under real Xvfb, a task file whose
acceptance criterion Conway checks itself from the app's log (first press = the named button)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.desktop_fixtures import xdotool

from conway.tasks.task_file import parse_task, verify
from scripts.demos import button_board as bb

SCRIPT = Path(bb.__file__)


def test_layouts_are_seeded_varied_and_never_overlap():
    seen = set()
    for i in range(200):
        target, boxes = bb.layout(3, i)
        assert target in boxes and len(boxes) == 4
        assert bb.layout(3, i) == (target, boxes)
        items = list(boxes.values())
        for j, a in enumerate(items):
            assert 0 <= a[0] < a[2] < bb.WINDOW[0] and 0 <= a[1] < a[3] < bb.WINDOW[1]
            for b in items[j + 1:]:
                assert a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1]
        seen.add((target, boxes[target]))
    assert len(seen) > 150


def test_task_file_parses_and_names_its_target():
    spec = parse_task(bb.task_file(5, 2), "button task")
    target, _ = bb.layout(5, 2)
    assert f'labelled "{target}"' in spec.body and len(spec.criteria) == 1
    assert spec.criteria[0].kind == "command_exits_zero" and spec.criteria[0].target.endswith(f"check button-log.jsonl {target}")


def test_check_passes_only_on_the_first_press(tmp_path):
    log = tmp_path / "button-log.jsonl"
    assert bb.main(["check", str(log), "Save"]) == 1  # no log: not pressed
    log.write_text('{"event": "ready"}\n{"event": "pressed", "label": "Open"}\n{"event": "pressed", "label": "Save"}\n')
    assert bb.main(["check", str(log), "Save"]) == 1  # pressing everything does not pass
    assert bb.main(["check", str(log), "Open"]) == 0


@pytest.mark.parametrize("right", [True, False])
def test_pressing_on_a_real_display_is_verified_by_the_acceptance_check(desktop, tmp_path, right):
    log = tmp_path / "button-log.jsonl"
    log.write_text("")
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "app", str(log), "--seed", "7", "--index", "1"],
                            env={**os.environ, "DISPLAY": desktop.display}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 20
        ready = None
        while ready is None and time.time() < deadline:
            ready = next((json.loads(x) for x in log.read_text().splitlines() if '"ready"' in x), None)
            time.sleep(0.05)
        assert ready is not None, "the board did not start"
        target = ready["target"]
        label = target if right else next(lab for lab in ready["buttons"] if lab != target)
        x0, y0, x1, y1 = ready["buttons"][label]
        xdotool(desktop.display, "mousemove", str((x0 + x1) // 2), str((y0 + y1) // 2), "click", "1")
        deadline = time.time() + 10
        while bb.first_press(log) is None and time.time() < deadline:
            time.sleep(0.05)
        assert bb.first_press(log) == label
        spec = parse_task(bb.task_file(7, 1), "button task")
        results = verify(spec.criteria, tmp_path)
        assert results[0]["verified"] is right, results
        assert ("first press: " + label) in results[0]["observed"]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_small_boards_fit_the_tiny_models_image_one_token_centre_per_button(count):
    centres = (14, 42, 70)  # 28-px image-token centres of an 84x84 screenshot
    for i in range(100):
        target, boxes = bb.layout(2, i, count, "small")
        assert len(boxes) == count and target in boxes
        for x0, y0, x1, y1 in boxes.values():
            assert 0 <= x0 < x1 < 84 and 0 <= y0 < y1 < 84
            inside = [(cx, cy) for cx in centres for cy in centres if x0 <= cx <= x1 and y0 <= cy <= y1]
            assert len(inside) == 1
    assert bb.task_file(2, 0, count=1, board="small").count("shows a button") == 1


def test_a_board_refuses_more_buttons_than_it_holds():
    with pytest.raises(ValueError, match="small board holds 1-4 buttons"):
        bb.layout(1, 0, 5, "small")
    assert bb.max_buttons("large") == 20
