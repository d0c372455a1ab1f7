"""Every rule of the cycle (docs/architecture.md#loop-semantics), driven by a scripted mock and a fake clock."""

from __future__ import annotations

import json
import os

import pytest
from helpers.loop_harness import ChangingObserver, run_script

from conway.loop.control import SimulatedClock
from conway.loop.ending import RunEnd
from conway.policies.mock import MockPolicy, MockScript
from conway.protocols import Policy, Tool
from conway.store.state import read_json, write_control

WAIT = {"action": {"type": "wait"}}


def idle_waits(run) -> list[float]:
    """The waits the loop planned (the last step's is not slept: the run ends there)."""
    return [p["planned_wait_s"] for p in run.payloads("result") if "planned_wait_s" in p]


def test_idle_backoff_doubles_to_sixty_on_an_unchanged_screen():
    run = run_script([WAIT] * 9, overrides=["agent.max_steps=9"])
    assert idle_waits(run) == [2, 4, 8, 16, 32, 60, 60, 60, 60]


def test_idle_backoff_resets_when_the_screen_changes():
    # observations are counted from 0; the screen changes at the 4th observation (step 4)
    run = run_script([WAIT] * 7, overrides=["agent.max_steps=7"], observer=ChangingObserver({3}))
    assert idle_waits(run) == [2, 4, 8, 2, 4, 8, 16]


def test_recovery_backoff_after_repeated_pre_dispatch_errors():
    steps = [{"error": "HTTP 500"}] * 9
    run = run_script(steps, overrides=["agent.max_steps=9"])
    errors = run.payloads("error")
    assert [e["consecutive"] for e in errors] == list(range(1, 10))
    # the first error retries at once; then 5, 10, 20 … capped at 300
    assert [e["backoff_s"] for e in errors] == [0, 5, 10, 20, 40, 80, 160, 300, 300]
    assert all(e["stage"] == "pre-dispatch" for e in errors)


def test_a_valid_decision_resets_the_error_count():
    steps = [{"error": "x"}, {"raw": "not json at all"}, {"action": {"type": "list_dir", "path": "."}},
             {"error": "y"}]
    run = run_script(steps, overrides=["agent.max_steps=4"])
    errors = run.payloads("error")
    assert [e["consecutive"] for e in errors] == [1, 2, 1]
    assert "invalid action" in errors[1]["error"]


def test_invalid_actions_are_data_shown_to_the_model_not_crashes():
    steps = [{"action": {"type": "click", "x": -5, "y": 3}}, {"action": {"type": "teleport"}}, WAIT]
    run = run_script(steps, overrides=["agent.max_steps=3"])
    errors = [e["error"] for e in run.payloads("error")]
    assert "invalid click action" in errors[0] and "x" in errors[0]
    assert "unknown action type 'teleport'" in errors[1]
    assert run.outcome.reason.startswith("max-steps")


class ContextSpy(MockPolicy):
    """The scripted mock, remembering every context it was shown (what the model would read)."""

    def __init__(self, steps):
        super().__init__(MockScript.model_validate({"steps": steps}))
        self.contexts = []

    def decide(self, context):
        self.contexts.append({p.name: p.text for p in context.parts})
        return super().decide(context)


def run_policy(policy, overrides):
    from conway.config import load_config
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home, resolve_home
    home = resolve_home(None)
    init_home(home)
    lines = []
    outcome, session = run_agent(home, load_config(home.config, overrides), RunRequest(
        single_session=False, policy=policy, clock=SimulatedClock()), say=lines.append)
    from conway.store.journal import read_journal
    return home, outcome, [e for e in read_journal(home.journal_dir).events if e["session"] == session]


def test_fourth_identical_side_effect_is_suppressed_and_the_model_is_told():
    append = {"action": {"type": "append_file", "path": "log.txt", "text": "x"}}
    spy = ContextSpy([append] * 5)
    home, outcome, events = run_policy(spy, ["agent.max_steps=5"])
    assert (home.scratch / "log.txt").read_text() == "xxx"
    sup = [e["payload"] for e in events if e["kind"] == "suppressed"]
    assert len(sup) == 2 and sup[0]["times"] == 3
    # the model is told: the context after the 4th decision says the action was suppressed and why
    told = spy.contexts[4]["latest result"]
    assert told.startswith("append_file(") and "suppressed" in told and "3 times in a row" in told
    assert "suppressed" not in spy.contexts[3]["latest result"]
    from conway.prompt.parts import PartName
    assert "suppressed" in spy.contexts[4][PartName.RECENT_STEPS].splitlines()[-1]  # the newest step says so too


def test_gui_counters_reset_on_screen_change_but_file_counters_survive():
    click = {"action": {"type": "click", "x": 10, "y": 10}}
    append = {"action": {"type": "append_file", "path": "f.txt", "text": "a"}}
    # GUI: 3 clicks, screen changes, 3 more clicks: none suppressed
    run = run_script([click] * 6, overrides=["agent.max_steps=6"], observer=ChangingObserver({3}))
    assert run.payloads("suppressed") == []
    # files: 3 appends, screen changes, the 4th append is still suppressed
    run2 = run_script([append] * 4, overrides=["agent.max_steps=4"], observer=ChangingObserver({3}))
    assert len(run2.payloads("suppressed")) == 1
    assert (run2.home.scratch / "f.txt").read_text() == "aaa"


def test_gui_actions_without_desktop_tools_report_it_as_a_result():
    run = run_script([{"action": {"type": "click", "x": 1, "y": 2}}], overrides=["agent.max_steps=1"])
    err = run.payloads("error")[0]
    assert "no desktop tools available" in err["error"]


def test_intent_is_journaled_and_state_pending_before_dispatch(conway_home):
    # the shell command itself reads the journal and state while it is being dispatched
    cmd = ("cat ../journal/*.jsonl | grep -c '\"kind\":\"intent\"' > seen_intents.txt; "
           "cat ../state.json > seen_state.json")
    run = run_script([{"action": {"type": "shell", "command": cmd}}], overrides=["agent.max_steps=1"])
    assert (run.home.scratch / "seen_intents.txt").read_text().strip() == "1"
    seen = json.loads((run.home.scratch / "seen_state.json").read_text())
    assert seen["pending"]["action"]["type"] == "shell"
    assert read_json(run.home.state)["pending"] is None
    kinds = run.kinds()
    assert kinds.index("intent") < kinds.index("result")


def test_the_cleared_pending_copy_waits_for_the_next_write_but_status_never_shows_it(conway_home):
    """One state.json write per long side effect: the clearing rides on the next write; the journal speaks for it."""
    from conway.actions import Shell, Wait
    from conway.config import load_config
    from conway.protocols import Decision
    from conway.readiness.checks.home_files import recovery_checks
    from conway.session.app import RunRequest, run_agent, status_report
    from conway.store.home import init_home, resolve_home

    home = resolve_home(None)
    init_home(home)
    seen = {}

    class Spy(Policy):
        model_id = "spy"

        def __init__(self):
            self.n = 0

        def decide(self, ctx):  # a slow model's inference, right after a side effect
            self.n += 1
            if self.n == 1:
                return Decision(raw_text="", actions=[Shell(command="true")], model_id="spy")
            if self.n == 2:
                seen["copy"] = read_json(home.state)["pending"]
                seen["status"] = status_report(home)["pending_intent"]
                seen["preflight"] = next(c for c in recovery_checks(home) if c.check == "recovery: pending intent")
            return Decision(raw_text="", actions=[Wait(seconds=5)], model_id="spy")

    clock = SimulatedClock()
    clock.on_sleep = lambda _now: seen.setdefault("during_wait", read_json(home.state)["pending"])
    run_agent(home, load_config(home.config, ["agent.max_steps=3"]),  # the last decision's wait is not slept
              RunRequest(single_session=False, policy=Spy(), clock=clock), say=lambda s: None)
    assert seen["copy"]["summary"].startswith("shell(")  # not cleared on disk yet ...
    assert seen["status"] is None and seen["preflight"].status == "ok"  # ... and nobody is told it is pending
    assert seen["during_wait"] is None  # written before the loop sleeps
    assert read_json(home.state)["pending"] is None


def test_a_quick_side_effect_leaves_state_json_alone_and_status_reads_its_intent_from_the_journal(conway_home):
    """Only actions that may take a while (a shell command) are copied to state.json; `status` trusts the journal."""
    from conway.config import load_config
    from conway.session.app import RunRequest, run_agent, status_report
    from conway.store.home import init_home, resolve_home
    from conway.tools.files import FileTools
    from conway.tools.registry import Toolbox

    home = resolve_home(None)
    init_home(home)
    seen: list[tuple] = []
    writes: list[str] = []
    real_replace = os.replace

    def counting_replace(src, dst):
        writes.append(os.path.basename(dst))
        return real_replace(src, dst)

    class LookingFiles(FileTools):  # while its append runs: what state.json and `status` say
        def run(self, action, screen=None):
            seen.append((read_json(home.state)["pending"], status_report(home)["pending_intent"], list(writes)))
            return super().run(action, screen)

    append = {"action": {"type": "append_file", "path": "a.txt", "text": "x"}}
    policy = MockPolicy(MockScript.model_validate({"steps": [append, append, append]}))
    cfg = load_config(home.config, ["agent.max_steps=3"])
    outcome, session = run_agent(home, cfg, RunRequest(single_session=False, policy=policy, clock=SimulatedClock(),
                                                       toolbox=Toolbox([LookingFiles(home.scratch)])),
                                 say=lambda s: None)
    assert outcome.reason == "max-steps budget (3) reached" and (home.scratch / "a.txt").read_text() == "xxx"
    assert outcome.end is RunEnd.MAX_STEPS and not (outcome.failed or outcome.uncertain)
    assert [copy for copy, _status, _writes in seen] == [None, None, None]  # no state.json copy ...
    assert all(status["summary"] == "append_file(path='a.txt', text='x')" and status["session"] == session
               for _copy, status, _writes in seen)  # ... yet `status` shows the action in flight
    assert seen[2][2].count("state.json") == seen[0][2].count("state.json")  # no state write per side effect
    assert status_report(home)["pending_intent"] is None


def test_read_only_actions_write_no_intent():
    run = run_script([{"action": {"type": "list_dir", "path": "."}}], overrides=["agent.max_steps=1"])
    assert "intent" not in run.kinds()


def test_stop_during_inference_discards_the_returned_action(conway_home):
    session_holder = {}

    def stop_while_thinking(seconds):  # another terminal says stop while the model is busy
        state = read_json(conway_home / "state.json")
        session_holder["s"] = state["session"]
        write_control(conway_home / "control.json", state["session"], "stop")

    steps = [{"sleep": 1, "action": {"type": "append_file", "path": "never.txt", "text": "x"}}]
    run = run_script(steps, policy_sleep=stop_while_thinking)
    assert not (run.home.scratch / "never.txt").exists()
    decision = run.payloads("decision")[0]
    assert decision["discarded"] is True
    assert "intent" not in run.kinds()
    assert run.outcome.reason == "stop requested"


def test_stale_control_request_for_another_session_is_ignored(conway_home):
    from conway.store.home import init_home, resolve_home
    init_home(resolve_home(None))
    write_control(conway_home / "control.json", "an-old-session", "stop")
    run = run_script([WAIT] * 3, overrides=["agent.max_steps=3"])
    assert run.outcome.reason.startswith("max-steps") and run.outcome.steps == 3


def test_pause_and_resume_inside_a_wait(conway_home):
    clock = SimulatedClock()
    calls = {"n": 0}

    def on_sleep(now):
        calls["n"] += 1
        state = read_json(conway_home / "state.json")
        if calls["n"] == 2:
            write_control(conway_home / "control.json", state["session"], "pause")
        if calls["n"] == 20:
            assert state["status"] == "paused"
            write_control(conway_home / "control.json", state["session"], "resume")

    clock.on_sleep = on_sleep
    run = run_script([WAIT, WAIT], overrides=["agent.max_steps=2"], clock=clock)
    requests = [p["request"] for p in run.payloads("control")]
    assert requests == ["pause", "resume"]
    assert run.outcome.steps == 2


def test_a_stop_while_paused_ends_the_run_without_a_resume(conway_home, monkeypatch):
    """The journal reads pause, stop (no resume between), and the status never goes back to running."""
    from conway.loop.run_state import RunState
    clock = SimulatedClock()
    calls = {"n": 0}
    seen: list[str] = []  # state.json's status at each sleep, then every status the run writes
    save = RunState.save

    def saving(self, durable=True, **changes):
        if "status" in changes:
            seen.append(changes["status"])
        return save(self, durable, **changes)

    monkeypatch.setattr(RunState, "save", saving)

    def on_sleep(now):
        calls["n"] += 1
        state = read_json(conway_home / "state.json")
        seen.append(state["status"])
        if calls["n"] == 2:
            write_control(conway_home / "control.json", state["session"], "pause")
        if calls["n"] == 20:
            assert state["status"] == "paused"
            write_control(conway_home / "control.json", state["session"], "stop")

    clock.on_sleep = on_sleep
    run = run_script([WAIT] * 5, overrides=["agent.max_steps=5"], clock=clock)
    assert [p["request"] for p in run.payloads("control")] == ["pause", "stop"]
    assert run.outcome.end == RunEnd.STOP_REQUESTED and run.outcome.reason == "stop requested"
    after_pause = seen[seen.index("paused"):] + [read_json(conway_home / "state.json")["status"]]
    assert "running" not in after_pause, after_pause
    assert calls["n"] >= 20  # the stop came while paused


def test_finish_is_recorded_and_the_continuous_loop_carries_on():
    steps = [{"action": {"type": "finish", "status": "DONE", "message": "did it"}}, WAIT, WAIT]
    run = run_script(steps, overrides=["agent.max_steps=3"])
    fin = run.payloads("finish")[0]
    assert fin["status"] == "DONE" and fin["declared_by"] == "model"
    assert run.outcome.steps == 3
    assert "success" not in json.dumps(fin).lower() or "not a verified success" in fin["note"]


def test_finish_ends_a_single_session():
    steps = [{"action": {"type": "finish", "status": "FAIL", "message": "cannot"}}, WAIT]
    run = run_script(steps, single=True, overrides=["agent.max_steps=5"])
    assert run.outcome.reason == "finish FAIL" and run.outcome.steps == 1 and run.outcome.end is RunEnd.FINISHED


def test_max_seconds_budget_stops_inside_a_wait():
    run = run_script([WAIT] * 20, overrides=["agent.max_seconds=10"])
    assert run.outcome.reason.startswith("max-seconds") and run.outcome.end is RunEnd.MAX_SECONDS
    assert sum(run.clock.sleeps) <= 10.25


def test_waits_are_sliced_so_control_stays_responsive():
    run = run_script([WAIT], overrides=["agent.max_steps=2", "agent.control_poll_s=0.25"], repeat=True)
    assert max(run.clock.sleeps) <= 0.25 and len(run.clock.sleeps) == 8  # 2 s in 0.25 s slices


def test_latest_result_comes_first_in_the_next_context_and_goals_are_reread(conway_home):
    seen = []

    class Spy(Policy):
        model_id = "spy"

        def __init__(self):
            self.n = 0

        def decide(self, ctx):
            from conway.actions import AppendFile, Wait
            from conway.protocols import Decision
            seen.append(ctx)
            self.n += 1
            if self.n == 1:
                (conway_home / "goals.md").write_text("NEW GOAL: count sheep\n")
                return Decision(raw_text="", actions=[AppendFile(path="a.txt", text="hello")], model_id="spy")
            return Decision(raw_text="", actions=[Wait()], model_id="spy")

    from conway.config import load_config
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home, resolve_home
    home = resolve_home(None)
    init_home(home)
    run_agent(home, load_config(home.config, ["agent.max_steps=2"]),
              RunRequest(single_session=False, policy=Spy(), clock=SimulatedClock()), say=lambda s: None)
    names = [p.name for p in seen[1].parts]
    history = [n for n in names if n in ("latest result", "recent steps (oldest first)")]
    assert history[-1] == "latest result"  # the newest fact sits last, right before the request and the image
    latest = next(p.text for p in seen[1].parts if p.name == "latest result")
    assert latest.startswith("append_file(") and "wrote 5 bytes" in latest
    goals = next(p.text for p in seen[1].parts if p.name == "goals.md")
    assert "count sheep" in goals
    assert names[0] == "constitution.md"


def test_dry_run_plans_without_dispatching():
    steps = [{"action": {"type": "append_file", "path": "x.txt", "text": "x"}}]
    run = run_script(steps, dry_run=True, overrides=["agent.max_steps=1"])
    assert not (run.home.scratch / "x.txt").exists()
    assert "intent" not in run.kinds()
    assert run.payloads("result")[0]["dry_run"] is True
    assert run.payloads("decision")[0]["dry_run"] is True


def test_feedback_hook_receives_every_result():
    run = run_script([{"action": {"type": "list_dir", "path": "."}}], overrides=["agent.max_steps=1"])
    assert run.policy.feedback_records[0]["action"]["type"] == "list_dir"
    assert run.policy.feedback_records[0]["ok"] is True


def test_the_mock_keeps_a_bounded_number_of_tool_results():
    from conway.policies.mock import FEEDBACK_KEEP
    policy = MockPolicy()
    big = "y" * 100_000
    for i in range(FEEDBACK_KEEP * 20):  # what thousands of cycles of large reads feed it
        policy.feedback({"step": i, "output": big})
    assert len(policy.feedback_records) == FEEDBACK_KEEP
    assert policy.feedback_records[-1]["step"] == FEEDBACK_KEEP * 20 - 1  # the latest are the ones kept


def test_rate_limit_waits_the_server_s_retry_after_and_says_so():
    run = run_script([{"rate_limit": 7}, WAIT], overrides=["agent.max_steps=2"])
    err = run.payloads("error")[0]
    assert err["rate_limited"] is True and err["retry_after_s"] == 7
    assert any("rate limited" in line and "7" in line for line in run.lines)
    assert sum(run.clock.sleeps) >= 7


def test_an_uncertain_dispatch_ends_the_run_and_is_not_replayed():
    # a shell command that cannot even start in a missing workdir is certain; an exploding tool is not
    from conway.protocols import DispatchUncertain, Tool, ToolResult
    from conway.tools.registry import Toolbox

    class Exploding(Tool):
        name = "files"
        action_types = frozenset({"append_file"})

        def __init__(self):
            self.calls = 0

        def availability(self):
            return True, "ok"

        def run(self, action, screen=None):
            self.calls += 1
            raise DispatchUncertain("disk vanished halfway through the write")

    tool = Exploding()
    from conway.config import load_config
    from conway.policies.mock import MockPolicy, MockScript
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home, resolve_home
    home = resolve_home(None)
    init_home(home)
    append = {"action": {"type": "append_file", "path": "a", "text": "b"}}
    policy = MockPolicy(MockScript.model_validate({"steps": [append, append]}))
    outcome, session = run_agent(home, load_config(home.config, []), RunRequest(
        single_session=False, policy=policy, toolbox=Toolbox([tool]), clock=SimulatedClock()), say=lambda s: None)
    assert outcome.reason == "uncertain side-effect failure"
    assert outcome.end is RunEnd.UNCERTAIN and outcome.uncertain and not outcome.failed
    assert tool.calls == 1
    state = read_json(home.state)
    assert state["pending"] is None and state["status"] == "stopped"
    from conway.store.journal import read_journal
    events = read_journal(home.journal_dir).events
    kinds = [e["kind"] for e in events]
    assert kinds.count("uncertain") == 1 and kinds.count("intent") == 1
    assert kinds.index("intent") < kinds.index("uncertain")
    unc = next(e["payload"] for e in events if e["kind"] == "uncertain")
    assert unc["action"]["type"] == "append_file" and "disk vanished" in unc["detail"]
    assert not any(e["kind"] == "result" and e["payload"].get("action", {}).get("type") == "append_file"
                   for e in events)  # no made-up outcome
    assert isinstance(ToolResult(ok=True), ToolResult)


class _Raising(Tool):
    """A tool whose every call raises an ordinary exception (not DispatchUncertain)."""

    name = "files"
    action_types = frozenset({"append_file", "read_file"})

    def __init__(self):
        self.calls = []

    def availability(self):
        return True, "ok"

    def run(self, action, screen=None):
        self.calls.append(action.type)
        raise RuntimeError("the tool broke halfway")


def _run_with_tool(tool, steps, max_steps):
    from conway.config import load_config
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home, resolve_home
    from conway.store.journal import read_journal
    from conway.tools.registry import Toolbox
    home = resolve_home(None)
    init_home(home)
    policy = MockPolicy(MockScript.model_validate({"steps": steps}))
    outcome, session = run_agent(home, load_config(home.config, [f"agent.max_steps={max_steps}"]), RunRequest(
        single_session=False, policy=policy, toolbox=Toolbox([tool]), clock=SimulatedClock()), say=lambda s: None)
    return home, outcome, [e for e in read_journal(home.journal_dir).events if e["session"] == session]


def test_an_ordinary_exception_during_a_side_effect_is_uncertain_too():
    tool = _Raising()
    append = {"action": {"type": "append_file", "path": "a", "text": "b"}}
    home, outcome, events = _run_with_tool(tool, [append, append], 5)
    assert outcome.reason == "uncertain side-effect failure"
    assert tool.calls == ["append_file"]  # never retried
    unc = [e["payload"] for e in events if e["kind"] == "uncertain"]
    assert len(unc) == 1 and "RuntimeError: the tool broke halfway" in unc[0]["detail"]
    assert read_json(home.state)["pending"] is None


def test_an_exception_in_a_read_only_action_is_an_ordinary_error():
    tool = _Raising()
    read = {"action": {"type": "read_file", "path": "a"}}
    home, outcome, events = _run_with_tool(tool, [read, read], 2)
    assert outcome.reason.startswith("max-steps") and tool.calls == ["read_file", "read_file"]
    assert not [e for e in events if e["kind"] == "uncertain"]
    errors = [e["payload"] for e in events if e["kind"] == "error"]
    assert len(errors) == 2 and "RuntimeError: the tool broke halfway" in errors[0]["error"]


# --- recovery: the journal is the authority --------------------------------------


def _append_event(home, kind, payload, session="s-old", step=7):
    from conway.store.journal import Journal, make_event
    j = Journal(home.journal_dir, fsync="none")
    j.append(make_event(session, step, kind, payload))
    j.close()


def test_an_intent_found_only_in_the_journal_is_recorded_uncertain(conway_home):
    from conway.store.state import atomic_write_json
    run_script([WAIT], overrides=["agent.max_steps=1"])
    # the intent reached the journal (fsynced) but the state write marking it pending was lost
    action = {"type": "append_file", "path": "x.txt", "text": "once"}
    _append_event(run_home(), "intent", {"action": action, "summary": "append_file(path='x.txt')"})
    state = read_json(conway_home / "state.json")
    state.update(status="running", pending=None)
    atomic_write_json(conway_home / "state.json", state)
    run = run_script([WAIT], overrides=["agent.max_steps=1"])
    unc = run.payloads("uncertain")
    assert len(unc) == 1 and unc[0]["action"] == action and unc[0]["from_session"] == "s-old"
    assert unc[0]["intent_step"] == 7
    said = [line for line in run.lines if "uncertain" in line]  # item 25.32: the console says it too, once
    assert said == ["recovered: the previous run stopped while doing append_file(path='x.txt'); recorded as "
                    "uncertain (it may or may not have happened), not replayed"]


def test_a_pending_intent_whose_outcome_is_journaled_is_not_uncertain(conway_home):
    from conway.store.state import atomic_write_json
    run_script([WAIT], overrides=["agent.max_steps=1"])
    action = {"type": "append_file", "path": "x.txt", "text": "once"}
    _append_event(run_home(), "intent", {"action": action, "summary": "append_file(path='x.txt')"})
    _append_event(run_home(), "result", {"action": action, "ok": True, "output": "wrote 4 bytes"})
    # the process died after journaling the result, before the state write clearing `pending`
    state = read_json(conway_home / "state.json")
    state.update(status="running", pending={"step": 7, "action": action, "summary": "append_file(path='x.txt')"})
    atomic_write_json(conway_home / "state.json", state)
    run = run_script([WAIT], overrides=["agent.max_steps=1"])
    assert run.payloads("uncertain") == []
    rec = [p for p in run.payloads("recovery") if p["what"] == "pending"]
    assert rec and "outcome is in the journal" in rec[0]["detail"]
    assert read_json(conway_home / "state.json")["pending"] is None


def test_an_intent_closed_by_uncertain_stays_closed_after_a_new_session_starts(conway_home):
    from conway.store.journal import intent_verdict
    run_script([WAIT], overrides=["agent.max_steps=1"])
    action = {"type": "append_file", "path": "x.txt", "text": "once"}
    _append_event(run_home(), "intent", {"action": action, "summary": "append_file(path='x.txt')"})
    _append_event(run_home(), "uncertain", {"action": action, "detail": "the disk filled halfway"})
    # a later session started (and was killed before it ended: no session end closes the intent for it)
    _append_event(run_home(), "session", {"event": "start", "model_id": "mock"}, session="s-next", step=0)
    assert intent_verdict(run_home().journal_dir) == ("resolved", None)
    run = run_script([WAIT], overrides=["agent.max_steps=1"])
    assert run.payloads("uncertain") == []


def run_home():
    from conway.store.home import resolve_home
    return resolve_home(None)


# --- long runs -----------------------------------------------------------------------


def test_backoff_delay_is_capped_at_any_count():
    from conway.loop.control import backoff_delay
    assert [backoff_delay(2, 60, n) for n in (1, 2, 3, 5, 6)] == [2, 4, 8, 32, 60]
    assert backoff_delay(2, 60, 2000) == 60  # ~17 hours of an unchanged screen
    assert backoff_delay(5, 300, 10**9) == 300
    assert backoff_delay(1e-300, 60, 5000) == 60


@pytest.mark.slow
def test_the_2000th_consecutive_idle_wait_is_the_cap(conway_home):
    """The loop itself at the 2000th idle wait on an unchanged screen (a fake clock, real loop)."""
    run = run_script([WAIT], repeat=True, overrides=["agent.max_steps=2000", "agent.control_poll_s=5",
                                                     "journal.fsync=none"])
    waits = idle_waits(run)
    assert len(waits) == 2000 and waits[-1] == 60 and run.outcome.reason.startswith("max-steps")


def test_a_pause_before_dispatch_discards_the_decision_and_the_cycle_starts_again(conway_home):
    """Item 25.1: decision → pause → resume must not be followed by that decision's intent."""
    clock = SimulatedClock()
    polls = {"n": 0}

    def in_inference(seconds):  # the pause arrives while the model is answering
        write_control(conway_home / "control.json", read_json(conway_home / "state.json")["session"], "pause")

    def on_sleep(now):
        state = read_json(conway_home / "state.json")
        if state["status"] == "paused":
            polls["n"] += 1
            if polls["n"] == 5:
                write_control(conway_home / "control.json", state["session"], "resume")

    clock.on_sleep = on_sleep
    first = {"action": {"type": "append_file", "path": "first.txt", "text": "1"}, "sleep": 1}
    second = {"action": {"type": "append_file", "path": "second.txt", "text": "2"}}
    run = run_script([first, second], overrides=["agent.max_steps=2"], clock=clock, policy_sleep=in_inference)
    kinds = [e["kind"] for e in run.events if e["kind"] in ("decision", "control", "intent", "observation")]
    assert kinds == ["observation", "decision", "control", "control", "observation", "decision", "intent"]
    decisions = run.payloads("decision")
    assert decisions[0]["discarded"] is True and not decisions[1].get("discarded")
    assert [p["action"]["path"] for p in run.payloads("intent")] == ["second.txt"]
    assert not (conway_home / "scratch" / "first.txt").exists()
    from conway.view.sessions import load_sessions  # the viewer counts no pause as dispatch time
    (session,), _ = load_sessions(conway_home / "journal", conway_home)
    first, second = session.steps
    assert first.outcome == "discarded" and first.timings["dispatch_s"] is None
    assert second.timings["dispatch_s"] is not None and second.timings["dispatch_s"] < 1.0  # the pause took 1.25 s
