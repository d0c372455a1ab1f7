"""How a run ended (`RunEnd`) decides `conway start`'s exit code, not the words of its reason."""

from __future__ import annotations

from conway.config import load_config
from conway.loop.ending import RunEnd, StopRun
from conway.loop.parts import RunOutcome
from conway.policies.mock import MockPolicy, MockScript
from conway.protocols import DispatchUncertain, FailSafeTriggered, Tool, ToolResult
from conway.session.task_run import run_task_session
from conway.store.home import init_home, resolve_home
from conway.tools.registry import Toolbox


class Failing(Tool):
    name = "files"
    action_types = frozenset({"append_file"})

    def __init__(self, exc: Exception | None):
        self.exc = exc

    def availability(self):
        return True, "ok"

    def run(self, action, screen=None):
        if self.exc is not None:
            raise self.exc
        return ToolResult(ok=False, error="refused: certainly nothing happened")


def _session(exc: Exception | None) -> int:
    home = resolve_home(None)
    init_home(home)
    append = {"action": {"type": "append_file", "path": "a", "text": "b"}}
    policy = MockPolicy(MockScript.model_validate({"steps": [append]}))
    cfg = load_config(home.config, ["agent.max_steps=1"])
    return run_task_session(home, cfg, task="append", spec=None, execute=True, quiet=True,
                            say=lambda _s: None, policy=policy, toolbox=Toolbox([Failing(exc)]))


def test_an_uncertain_end_exits_1_and_a_certain_failure_does_not():
    assert _session(DispatchUncertain("half written")) == 1
    assert _session(FailSafeTriggered("corner")) == 1
    assert _session(None) == 0  # ok=False: no effect, the run went on to its max-steps budget


def test_the_end_not_the_reason_text_decides():
    out = RunOutcome(reason="running", steps=0).ended("uncertain-looking words", RunEnd.MAX_STEPS, 3)
    assert not out.uncertain and not out.failed
    out = RunOutcome(reason="running", steps=0).ended("anything", RunEnd.FAIL_SAFE, 3)
    assert out.uncertain and not out.failed
    assert RunOutcome(reason="x", steps=0).ended("disk full: x", RunEnd.DISK_FULL, 1).failed
    out = RunOutcome(reason="running", steps=0).ended("anything", RunEnd.PERMANENT_FAILURE, 3)
    assert out.setup_failed and not out.failed and not out.uncertain
    assert not RunOutcome(reason="x", steps=0).ended("x", RunEnd.MAX_STEPS, 1).setup_failed
    assert StopRun("stop requested", RunEnd.STOP_REQUESTED).end is RunEnd.STOP_REQUESTED
