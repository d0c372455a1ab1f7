"""A per-task mock script stands in for a model that looks until the screen is ready: its waits follow the
machine's load (as the task runner's window waits do) when the runner gives it a scale, and stay as written
otherwise."""

from __future__ import annotations

from conway.actions import Click, Wait
from conway.evals.tasks_run import TasksSuite
from conway.policies.mock import MockPolicy, MockScript, MockStep
from conway.protocols import DecisionContext
from conway.sandbox.setup import load_factor


def _script() -> MockScript:
    return MockScript(steps=[MockStep(action={"type": "wait", "seconds": 5}), MockStep(action={"type": "wait"}),
                             MockStep(action={"type": "click", "x": 3, "y": 4})])


def _decide_all(policy: MockPolicy) -> list:
    context = DecisionContext.__new__(DecisionContext)
    return [policy.decide(context).actions[0] for _ in range(3)]


def test_waits_are_stretched_by_the_scale_and_nothing_else_is() -> None:
    waits = _decide_all(MockPolicy(_script(), wait_scale=lambda: 3.0))
    assert waits[0] == Wait(seconds=15.0)
    assert waits[1] == Wait()  # the loop's own idle backoff: no seconds to stretch
    assert isinstance(waits[2], Click) and (waits[2].x, waits[2].y) == (3, 4)


def test_a_scale_below_one_never_shortens_and_none_keeps_the_script() -> None:
    assert _decide_all(MockPolicy(_script(), wait_scale=lambda: 0.2))[0] == Wait(seconds=5.0)
    assert _decide_all(MockPolicy(_script()))[0] == Wait(seconds=5.0)
    assert MockPolicy(_script(), wait_scale=lambda: 2.0).restarted().wait_scale() == 2.0


def test_the_task_runner_gives_each_task_script_the_load_factor(tmp_path) -> None:
    (tmp_path / "t1.yaml").write_text("- action: {type: wait, seconds: 1}\n")
    suite = TasksSuite.__new__(TasksSuite)
    suite.mock_scripts = tmp_path
    policy = suite._policy_for("t1", MockPolicy())
    assert isinstance(policy, MockPolicy) and policy.wait_scale is load_factor
