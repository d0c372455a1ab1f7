"""After Ctrl+C the console and the report agree: a task that ends once the stop is set is not shown as a result
(the runner drops it from the report, which says "N of M case(s) finished"), no desktop needed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from conway.cancel import current_cancel
from conway.config import load_config
from conway.evals.report import Report
from conway.evals.runner import run_suite
from conway.evals.tasks_run import TaskCase, TasksSuite


def _task(task_id: str) -> SimpleNamespace:
    return SimpleNamespace(id=task_id, source=f"{task_id}.json", format="osworld", domain="os", related_apps=[],
                           instruction="Do it.", raw={})


def test_a_task_that_passes_after_ctrl_c_is_not_shown_as_a_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    said: list[str] = []
    cfg = load_config(None, ["policy=mock"])
    suite = TasksSuite(config=cfg, folder=tmp_path / "r", report_dir=tmp_path,
                       total=3, say=said.append)

    def fake_run(self, policy, case, record):  # the second task's Ctrl+C arrives as it is being scored: a pass
        if case.index == 1:
            current_cancel().set("interrupted (Ctrl+C)")
        record.update(outcome="pass", score=1.0, steps=1, declared={"status": "DONE"})

    monkeypatch.setattr(TasksSuite, "_run", fake_run)
    cases = [TaskCase(index=i, task=_task(f"t{i}")) for i in range(3)]
    report = Report("tasks", tmp_path / "r.json", argv=[], config=cfg, parameters={})
    result = run_suite(suite, None, cases, report, progress=False)
    assert result.status == "partial"
    assert result.summary["interrupted"] == "interrupted (Ctrl+C): 1 of 3 case(s) finished"
    assert said[0].startswith("[1/3] t0: pass")
    assert len(said) == 2 and said[1].startswith("[2/3] t1: not counted — interrupted (Ctrl+C)"), said
    assert not any(": pass" in line for line in said[1:]), said  # the console's count is the report's
