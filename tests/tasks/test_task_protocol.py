"""OSWorld's runner protocol in `conway tasks run` (`conway/evals/task_protocol.py`): the settings' defaults are
`lib_run_single`'s, every other value is a named deviation, the waits are made on a real desktop (set short
here: no test sleeps OSWorld's 60 s), and the settle before evaluation turns a result written late into the
score OSWorld's VM would give.

The measured-readiness deviation (`conway/sandbox/readiness.py`) is checked on a real desktop too: a quiet one
is ready before its cap, one whose home is still being written is not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest
from helpers.task_desktop import need_desktop

from conway.config import ConwayConfig, TasksConfig, load_config
from conway.evals.task_protocol import deviations
from conway.sandbox.desktop import DisposableDesktop


def test_the_defaults_are_osworlds_runner() -> None:
    """run.py: --sleep_after_execution 0, --max_steps 15; lib_run_single: sleep(60) after reset, sleep(20) before
    evaluate; and the fixed sleeps, not measured readiness."""
    t = ConwayConfig().tasks
    assert (t.wait_after_setup_s, t.sleep_after_action_s, t.settle_before_eval_s, t.max_steps, t.waits) == \
        (60.0, 0.0, 20.0, 15, "fixed")
    assert deviations(t) == []


def test_every_other_value_is_a_named_deviation() -> None:
    t = TasksConfig(wait_after_setup_s=5, settle_before_eval_s=20, max_steps=50, waits="measured")
    assert deviations(t) == [
        "tasks.wait_after_setup_s=5 (the wait after setup; OSWorld's runner: 60)",
        "tasks.max_steps=50 (the step limit; OSWorld's runner: 15)",
        "tasks.waits=measured (each wait ends once the desktop is quiet for 2 s, at most the fixed time; OSWorld "
        "sleeps the fixed time)"]


def _late_writer_suite(root: Path) -> Path:
    """One OSWorld-format task: a terminal is open and focused; the result file is checked. The script types a
    command that writes it 3 s later and finishes at once: OSWorld's settle scores that as solved."""
    folder = root / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    (folder / "late-writer.json").write_text(json.dumps({
        "id": "late-writer", "instruction": "write solved into ~/late.txt", "related_apps": ["os"],
        "config": [{"type": "launch", "parameters": {"command": ["lxterminal"]}},
                   {"type": "activate_window", "parameters": {"window_name": "LXTerminal", "by_class": True}}],
        "evaluator": {"func": "exact_match",
                      "result": {"type": "vm_command_line", "command": "cat /home/user/late.txt || echo missing",
                                 "shell": True},
                      "expected": {"type": "rule", "rules": {"expected": "solved\n"}}}}))
    scripts = root / "mock"
    scripts.mkdir()
    (scripts / "late-writer.yaml").write_text(
        "- action: {type: type, text: \"(sleep 3; echo solved > ~/late.txt) &\\n\"}\n"
        "- action: {type: finish, status: DONE, message: it is being written}\n")
    return root


@pytest.mark.desktop
def test_the_settle_before_evaluation_scores_a_result_written_after_the_finish(tmp_path: Path) -> None:
    """As chrome 2ad9387a (Chromium writes Bookmarks ~2.5 s after the click, the agent finishes at once): with
    OSWorld's settle the evaluation sees the file. The wait after setup and the pause after each action are made
    and recorded with the task."""
    from conway.evals.tasks_run import tasks_run
    from conway.store.home import Home

    need_desktop()
    root = _late_writer_suite(tmp_path)
    home = Home(tmp_path / "home")
    cfg = load_config(None, ["policy=mock", "tools.gui_failsafe=false", "tasks.waits=fixed",
                             "tasks.wait_after_setup_s=1", "tasks.sleep_after_action_s=0.5",
                             "tasks.settle_before_eval_s=15"])
    out = tmp_path / "report" / "r.json"
    out.parent.mkdir()
    tasks_run(home, cfg, str(root / "suite"), output=str(out), mock_scripts=str(root / "mock"), quiet=True,
              say=lambda line: None, window_wait_s=60)
    report = json.loads(out.read_text())
    case = report["cases"][0]
    assert (case["outcome"], case.get("score")) == ("pass", 1.0), case.get("error") or case.get("metrics")
    waits = case["protocol"]
    assert waits["after_setup"]["seconds"] >= 1 and waits["before_evaluation"]["seconds"] >= 15
    assert waits["after_actions"]["count"] >= 1 and waits["after_actions"]["seconds"] >= 0.5
    params = report["parameters"]["protocol"]
    assert params["settle_before_eval_s"] == 15 and any(
        d.startswith("tasks.settle_before_eval_s=15") for d in params["deviations"])
    assert any(d.startswith("tasks.settle_before_eval_s=15") for d in report["differences_from_osworld"])


@pytest.fixture
def desk(open_desk: Callable[..., DisposableDesktop]) -> DisposableDesktop:
    return open_desk("readiness")


@pytest.mark.desktop
def test_measured_readiness_waits_for_a_home_still_being_written(desk: DisposableDesktop) -> None:
    from conway.sandbox.readiness import wait_until_ready

    home = desk.home
    quiet = wait_until_ready(desk.display, home, cap_s=60, quiet_s=1.0)
    assert quiet.ready and quiet.seconds < 60, quiet
    desk.spawn("while :; do date +%N > /home/user/tick; sleep 0.2; done", shell=True)
    busy = wait_until_ready(desk.display, home, cap_s=4, quiet_s=1.0)
    assert not busy.ready and busy.seconds >= 4 and busy.why == "not quiet within 4 s", busy
