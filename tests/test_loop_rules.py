"""Every rule of the cycle (DESIGN.md §2), driven by a scripted mock and a fake clock."""

from __future__ import annotations

import json

from conway.state import read_json, write_control

from loop_harness import ChangingObserver, FakeClock, run_script

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
    # the first error retries at once; then 5, 10, 20 … capped at 300; after the last step nothing is slept
    assert [e["backoff_s"] for e in errors] == [0, 5, 10, 20, 40, 80, 160, 300, 0]
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


def test_fourth_identical_side_effect_is_suppressed_and_the_model_is_told():
    append = {"action": {"type": "append_file", "path": "log.txt", "text": "x"}}
    run = run_script([append] * 5, overrides=["agent.max_steps=5"])
    assert (run.home.scratch / "log.txt").read_text() == "xxx"
    sup = run.payloads("suppressed")
    assert len(sup) == 2 and sup[0]["times"] == 3
    assert any("suppressed" in line for line in run.lines)
    # and the next context shows the suppression as the latest result
    decisions = run.payloads("decision")
    assert len(decisions) == 5


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
    from conway.home import init_home, resolve_home
    init_home(resolve_home(None))
    write_control(conway_home / "control.json", "an-old-session", "stop")
    run = run_script([WAIT] * 3, overrides=["agent.max_steps=3"])
    assert run.outcome.reason.startswith("max-steps") and run.outcome.steps == 3


def test_pause_and_resume_inside_a_wait(conway_home):
    clock = FakeClock()
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
    assert run.outcome.reason == "finish FAIL" and run.outcome.steps == 1


def test_max_seconds_budget_stops_inside_a_wait():
    run = run_script([WAIT] * 20, overrides=["agent.max_seconds=10"])
    assert run.outcome.reason.startswith("max-seconds")
    assert sum(run.clock.sleeps) <= 10.25


def test_waits_are_sliced_so_control_stays_responsive():
    run = run_script([WAIT], overrides=["agent.max_steps=2", "agent.control_poll_s=0.25"], repeat=True)
    assert max(run.clock.sleeps) <= 0.25 and len(run.clock.sleeps) == 8  # 2 s in 0.25 s slices


def test_latest_result_comes_first_in_the_next_context_and_goals_are_reread(conway_home):
    seen = []

    class Spy:
        model_id = "spy"

        def __init__(self):
            self.n = 0

        def decide(self, ctx):
            from conway.protocols import Decision
            from conway.actions import AppendFile, Wait
            seen.append(ctx)
            self.n += 1
            if self.n == 1:
                (conway_home / "goals.md").write_text("NEW GOAL: count sheep\n")
                return Decision(raw_text="", actions=[AppendFile(path="a.txt", text="hello")], model_id="spy")
            return Decision(raw_text="", actions=[Wait()], model_id="spy")

    from conway.app import RunRequest, run_agent
    from conway.config import load_config
    from conway.home import init_home, resolve_home
    home = resolve_home(None)
    init_home(home)
    run_agent(home, load_config(home.config, ["agent.max_steps=2"]),
              RunRequest(single_session=False, policy=Spy(), clock=FakeClock()), say=lambda s: None)
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


def test_rate_limit_waits_the_server_s_retry_after_and_says_so():
    run = run_script([{"rate_limit": 7}, WAIT], overrides=["agent.max_steps=2"])
    err = run.payloads("error")[0]
    assert err["rate_limited"] is True and err["retry_after_s"] == 7
    assert any("rate limited" in line and "7" in line for line in run.lines)
    assert sum(run.clock.sleeps) >= 7


def test_an_uncertain_dispatch_ends_the_run_and_is_not_replayed():
    # a shell command that cannot even start in a missing workdir is certain; an exploding tool is not
    from conway.protocols import DispatchUncertain, ToolResult
    from conway.tools.registry import Toolbox

    class Exploding:
        name = "files"
        action_types = frozenset({"append_file"})

        def __init__(self):
            self.calls = 0

        def availability(self):
            return True, "ok"

        def run(self, action):
            self.calls += 1
            raise DispatchUncertain("disk vanished halfway through the write")

    tool = Exploding()
    from conway.app import RunRequest, run_agent
    from conway.config import load_config
    from conway.home import init_home, resolve_home
    from conway.policies.mock import MockPolicy, MockScript
    home = resolve_home(None)
    init_home(home)
    append = {"action": {"type": "append_file", "path": "a", "text": "b"}}
    policy = MockPolicy(MockScript.model_validate({"steps": [append, append]}))
    outcome, session = run_agent(home, load_config(home.config, []), RunRequest(
        single_session=False, policy=policy, toolbox=Toolbox([tool]), clock=FakeClock()), say=lambda s: None)
    assert outcome.reason == "uncertain side-effect failure"
    assert tool.calls == 1
    state = read_json(home.state)
    assert state["pending"] is None and state["status"] == "stopped"
    from conway.journal import read_journal
    kinds = [e["kind"] for e in read_journal(home.journal_dir).events]
    assert "uncertain" in kinds
    assert ToolResult  # noqa: the protocol type exists
