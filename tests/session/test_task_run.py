"""One task through the real loop in its own home: the home is passed, never put into the process environment."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from conway.config import load_config
from conway.loop.control import SimulatedClock
from conway.observe.synthetic import SyntheticObserver
from conway.policies.mock import MockPolicy, MockScript
from conway.session.task_run import no_desktop_toolbox, run_task
from conway.store.home import Home, init_home


class Watching(MockPolicy):
    """The scripted mock, noting the process's CONWAY_HOME whenever the loop asks it (mid-run, not after)."""

    seen: list[str | None]

    def decide(self, ctx):  # type: ignore[no-untyped-def]
        self.seen.append(os.environ.get("CONWAY_HOME"))
        return super().decide(ctx)


def _policy(steps: list[dict], clock: SimulatedClock) -> Watching:
    policy = Watching(MockScript.model_validate({"steps": steps}), sleep=clock.sleep)
    policy.seen = []
    return policy


@pytest.mark.parametrize("own_toolbox", [False, True], ids=["configured-tools", "no-desktop-toolbox"])
def test_a_task_run_leaves_the_process_environment_alone_and_its_shell_knows_the_home(tmp_path: Path,
                                                                                      own_toolbox: bool):
    home = Home(tmp_path / "task-home")  # not the CONWAY_HOME the test process has
    init_home(home)
    work = tmp_path / "work"
    work.mkdir()
    cfg = load_config(None, ["policy=mock", "observe.source=synthetic", "tools.enabled=[files,shell]",
                             f"tools.workdir={work}", "agent.idle_backoff_start_s=0.01"])
    nested = f"{shlex.quote(sys.executable)} -m conway.cli.main run --mock --max-steps 1"
    clock = SimulatedClock()
    steps = [{"action": {"type": "shell", "command": 'printf %s "$CONWAY_HOME" > seen.txt'}},
             {"action": {"type": "shell", "command": nested}},
             {"action": {"type": "finish", "status": "DONE", "message": "looked"}}]
    before = dict(os.environ)
    policy = _policy(steps, clock)
    run = run_task(home, cfg, "Look around.", max_steps=5, policy=policy, observer=SyntheticObserver(),
                   toolbox=no_desktop_toolbox(cfg, home, work) if own_toolbox else None, clock=clock,
                   say=lambda _line: None)
    assert dict(os.environ) == before
    assert policy.seen == [before["CONWAY_HOME"]] * 3  # never pointed at the task's home, even during the run
    assert os.environ["CONWAY_HOME"] != str(home.root)
    assert (work / "seen.txt").read_text() == str(home.root)
    assert run.outcome.finish["status"] == "DONE" and run.outcome.steps == 3 and run.home == home
    results = [e["payload"] for e in run.events() if e["kind"] in ("result", "error")]
    nested_out = " ".join(str(r.get("output") or "") + str(r.get("error") or "") for r in results)
    assert "another Conway agent is running" in nested_out  # the nested agent met this session's lock


def test_the_budget_given_to_the_task_bounds_its_session(tmp_path: Path):
    home = Home(tmp_path / "task-home")
    init_home(home)
    cfg = load_config(None, ["policy=mock", "observe.source=synthetic", "tools.enabled=[files]",
                             f"tools.workdir={tmp_path}", "agent.max_steps=50", "agent.idle_backoff_start_s=0.01"])
    clock = SimulatedClock()
    steps = [{"action": {"type": "list_dir", "path": "."}}] * 10
    run = run_task(home, cfg, "List forever.", max_steps=2, policy=_policy(steps, clock),
                   observer=SyntheticObserver(), clock=clock, say=lambda _line: None)
    assert run.outcome.steps == 2 and run.outcome.reason.startswith("max-steps")
    assert cfg.agent.max_steps == 50  # the caller's config is not changed
