"""What a new user hit in `conway tasks` (issue 32 §3): each task's fresh mock, resuming a report, what a
missing extra or cache need makes not runnable. No desktop needed."""

from __future__ import annotations

from pathlib import Path

from helpers.tiny_vlm import wait_context

from conway.config import ConwayConfig
from conway.evals.tasks_run import TasksSuite
from conway.policies.mock import MockPolicy, MockScript, MockStep

FINISH = {"type": "finish", "status": "DONE", "message": "done"}


def _suite(tmp_path: Path) -> TasksSuite:
    return TasksSuite(ConwayConfig(), tmp_path / "r.tasks", tmp_path, total=2)


def test_tasks_run_mock_starts_each_task_with_a_fresh_script(tmp_path) -> None:
    """`tasks run --mock` without --mock-scripts: the second task gets the script from its first step, not
    "script finished; idling" until its time budget runs out."""
    shared = MockPolicy(MockScript(steps=[MockStep(action={"type": "wait"}), MockStep(action=FINISH)]))
    suite, ctx = _suite(tmp_path), wait_context((64, 48))
    first = suite._policy_for("one", shared)
    kinds = [first.decide(ctx).actions[0].type for _ in range(2)]
    second = suite._policy_for("two", shared)
    again = [second.decide(ctx).actions[0].type for _ in range(2)]
    assert kinds == again == ["wait", "finish"]
