"""conway sweep over `tasks run`: a tiny task suite under two sets of mock scripts, in a pool of two workers.

Real desktops (bubblewrap, Xvfb, a session bus), real cell processes and worker processes, the real loop
with scripted policies (the point: a script stands in for the model), the tasks' own checkers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers.task_desktop import need_desktop

from conway.cli.main import main

pytestmark = pytest.mark.desktop

FINISH = [{"action": {"type": "finish", "status": "DONE", "message": "done"}}]
WRITE_OK = [{"action": {"type": "shell", "command": "echo ok > ~/out.txt"}}] + FINISH
WRITE_NO = [{"action": {"type": "shell", "command": "echo no > ~/out.txt"}}] + FINISH


def _task(task_id: str) -> dict:
    return {"id": task_id, "instruction": "Write ok into ~/out.txt.", "config": [], "related_apps": ["os"],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_command_line", "command": "cat ~/out.txt", "shell": True},
                          "expected": {"type": "rule", "rules": {"expected": "ok\n"}}}}


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CONWAY_HOME", str(tmp_path / "home"))


def test_a_sweep_of_tasks_run_rates_each_cell_from_the_tasks_report(tmp_path):
    need_desktop()
    suite = tmp_path / "suite" / "examples" / "os"
    suite.mkdir(parents=True)
    scripts = {"all-ok": {"a": WRITE_OK, "b": WRITE_OK}, "half-ok": {"a": WRITE_OK, "b": WRITE_NO}}
    for folder, steps in scripts.items():
        (tmp_path / folder).mkdir()
        for task_id, script in steps.items():
            (suite / f"{task_id}.json").write_text(json.dumps(_task(task_id)))
            (tmp_path / folder / f"{task_id}.yaml").write_text(json.dumps(script))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({
        "command": "tasks run", "args": [str(tmp_path / "suite"), "--max-seconds", "120"],
        "overrides": ["policy=mock"],
        "grid": {"--mock-scripts": [str(tmp_path / "all-ok"), str(tmp_path / "half-ok")]}}))
    code = main(["sweep", str(sweep), "--output", str(tmp_path / "out"), "--workers", "2"])
    assert code == 0
    table = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert table["summary"]["cells"] == table["summary"]["finished"] == 2
    rows = {Path(c["settings"]["--mock-scripts"]).name: c for c in table["cases"]}
    assert (rows["all-ok"]["rate"], rows["all-ok"]["successes"], rows["all-ok"]["cases"]) == (1.0, 2, 2)
    assert (rows["half-ok"]["rate"], rows["half-ok"]["successes"], rows["half-ok"]["cases"]) == (0.5, 1, 2)
    assert rows["all-ok"]["status"] == "pass" and rows["half-ok"]["status"] == "fail"
    assert table["summary"]["best"] == rows["all-ok"]["cell"]
    for row in rows.values():
        cell = json.loads((tmp_path / "out" / row["report"]).read_text())
        assert cell["kind"] == "tasks" and cell["pool"]["workers"] == 2
        assert [c["task"] for c in cell["cases"]] == ["a", "b"]

