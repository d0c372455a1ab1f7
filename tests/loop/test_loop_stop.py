"""A stop takes effect within about a second in every phase of a decision, and a crash is recorded as one.

The slow model is the scripted FAKE HTTP server (it answers only after a delay
and notices when the client hangs up); the stops are real: `control.json` from
another thread, SIGTERM to a real `conway run` process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import REPO
from fixtures.scripted_server import Reply, ScriptedFakeServer

from conway.config import load_config
from conway.loop.control import SimulatedClock
from conway.loop.ending import RunEnd
from conway.protocols import Policy
from conway.session.app import RunRequest, run_agent
from conway.store.home import init_home, resolve_home
from conway.store.journal import read_journal
from conway.store.state import read_json, write_control

WAIT = '{"thought": "nothing to do", "action": {"type": "append_file", "path": "never.txt", "text": "x"}}'
SLOW_S = 60.0  # the fake model answers only after this long: a stop must not wait for it


def _events(home, session=None):
    return [e for e in read_journal(home.journal_dir).events if session is None or e["session"] == session]


def _stop_when_asked(fake, home, result):
    """Another terminal's `conway stop` once the model request is in flight; notes when it was sent."""
    deadline = time.monotonic() + 30
    while not fake.chat_requests and time.monotonic() < deadline:
        time.sleep(0.01)
    session = read_json(home.state)["session"]
    time.sleep(0.2)  # well inside the request
    result["stop_at"] = time.monotonic()
    write_control(home.control, session, "stop")


@pytest.mark.parametrize("structured", ["none", "auto"])
def test_conway_stop_aborts_the_model_request_in_flight(structured):
    """`auto` starts with the structured-output probes: the stop must not wait those out either."""
    home = resolve_home(None)
    init_home(home)
    with ScriptedFakeServer(replies=[Reply.text(WAIT, delay_s=SLOW_S)]) as fake:
        cfg = load_config(home.config, ["policy=generic", f"policy.endpoint={fake.base_url}",
                                        "observe.source=synthetic", f"policy.structured_output={structured}",
                                        "policy.request_timeout_s=120"])
        result: dict = {}
        helper = threading.Thread(target=_stop_when_asked, args=(fake, home, result))
        helper.start()
        outcome, session = run_agent(home, cfg, RunRequest(single_session=False, clock=SimulatedClock()),
                                     say=lambda _s: None)
        ended = time.monotonic()
        helper.join()
        deadline = time.monotonic() + 5
        while not fake.hangups and time.monotonic() < deadline:
            time.sleep(0.01)
        requests, hangups = len(fake.chat_requests), list(fake.hangups)
    latency = ended - result["stop_at"]
    assert latency < 5, latency  # about the control poll (0.25 s); the model would have taken 60 s
    assert outcome.reason == "stop requested" and not outcome.failed
    assert outcome.end is RunEnd.STOP_REQUESTED and not outcome.uncertain
    assert requests == 1  # no further probe or request after the stop
    assert hangups == ["/v1/chat/completions"]  # the request itself was aborted, not left running
    events = _events(home, session)
    (decision,) = [e["payload"] for e in events if e["kind"] == "decision"]
    assert decision["discarded"] is True and decision["aborted"] is True and decision["actions"] == []
    assert "aborted" in decision["detail"]
    assert not [e for e in events if e["kind"] == "intent"] and not (home.scratch / "never.txt").exists()
    assert [e["payload"]["request"] for e in events if e["kind"] == "control"] == ["stop"]
    assert read_json(home.state)["status"] == "stopped"


def test_a_policy_that_cannot_be_aborted_is_abandoned_after_a_short_grace():
    from conway.policies.mock import MockPolicy, MockScript
    home = resolve_home(None)
    init_home(home)
    policy = MockPolicy(MockScript.model_validate({"steps": [{"sleep": SLOW_S, "action": {"type": "wait"}}]}))
    thinking = threading.Event()
    real_sleep = time.sleep

    def slow(seconds):  # the mock "thinks" in real time and ignores every stop
        thinking.set()
        real_sleep(seconds)

    policy._sleep = slow
    result: dict = {}

    def stop_soon():
        thinking.wait(30)
        result["stop_at"] = time.monotonic()
        write_control(home.control, read_json(home.state)["session"], "stop")

    helper = threading.Thread(target=stop_soon)
    helper.start()
    outcome, session = run_agent(home, load_config(home.config, []),
                                 RunRequest(single_session=False, policy=policy, clock=SimulatedClock()),
                                 say=lambda _s: None)
    latency = time.monotonic() - result["stop_at"]
    helper.join()
    assert latency < 5, latency
    assert outcome.reason == "stop requested"
    (decision,) = [e["payload"] for e in _events(home, session) if e["kind"] == "decision"]
    assert decision["discarded"] is True and "abandoned" in decision["detail"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "conway stop"])
def test_a_real_run_stops_within_about_a_second_during_inference(initialized_home, how):
    with ScriptedFakeServer(replies=[Reply.text(WAIT, delay_s=SLOW_S)]) as fake:
        env = {**os.environ, "CONWAY_HOME": str(initialized_home)}
        agent = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", "--endpoint", fake.base_url,
                                  "observe.source=synthetic", "tools.enabled=[files]"],
                                 cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, text=True)
        try:
            deadline = time.monotonic() + 60
            while not fake.chat_requests and time.monotonic() < deadline and agent.poll() is None:
                time.sleep(0.02)
            assert fake.chat_requests, agent.communicate(timeout=10)
            time.sleep(0.3)
            sent = time.monotonic()
            if how == "SIGTERM":
                agent.send_signal(signal.SIGTERM)
            else:
                stop = subprocess.run([sys.executable, "-m", "conway.cli.main", "stop"], cwd=REPO, env=env,
                                      capture_output=True, text=True, timeout=60)
                assert stop.returncode == 0 and "stop acknowledged" in stop.stdout, stop.stdout + stop.stderr
            code = agent.wait(timeout=20)  # the model would answer only after 60 s
            latency = time.monotonic() - sent
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
        out, err = agent.communicate()
        assert code == 0 and "Traceback" not in err, err
        print(f"{how}: stopped {latency:.2f} s after the request (model delay {SLOW_S:g} s)")
        assert latency < 10, latency
        hung_up = fake.hangups
    state = read_json(initialized_home / "state.json")
    assert state["status"] == "stopped"
    assert state["stop_reason"] == ("terminated (SIGTERM)" if how == "SIGTERM" else "stop requested")
    decisions = [e["payload"] for e in read_journal(initialized_home / "journal").events if e["kind"] == "decision"]
    assert len(decisions) == 1 and decisions[0]["discarded"] is True and decisions[0]["aborted"] is True
    assert hung_up  # the in-flight request was aborted by the stop, not left to finish


@pytest.mark.slow
def test_sigterm_during_a_long_shell_command_stops_within_about_a_second(initialized_home, tmp_path):
    import yaml
    marker = tmp_path / "started"
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump([{"action": {"type": "shell", "command": f"touch {marker}; sleep 60"}}]))
    env = {**os.environ, "CONWAY_HOME": str(initialized_home)}
    agent = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", "--mock-script", str(script)], cwd=REPO,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        sent = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        code = agent.wait(timeout=20)
        latency = time.monotonic() - sent
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    assert code == 0 and latency < 10, (code, latency, agent.communicate())
    events = read_journal(initialized_home / "journal").events
    kinds = [e["kind"] for e in events]
    assert "intent" in kinds and "uncertain" not in kinds  # the outcome is known: it was killed
    err = next(e["payload"] for e in events if e["kind"] == "error" and e["payload"].get("action"))
    assert err["data"]["stopped"] is True and "because the agent was stopped" in err["error"]
    assert read_json(initialized_home / "state.json")["stop_reason"] == "terminated (SIGTERM)"


# --- a crash inside the loop ---------------------------------------------------------


class _BuggyPolicy(Policy):
    model_id = "buggy"

    def decide(self, context):
        return {}["missing"]  # a bug, not a model failure


def test_a_crash_inside_the_loop_is_journaled_and_ends_the_session_as_crashed():
    home = resolve_home(None)
    init_home(home)
    lines: list[str] = []
    outcome, session = run_agent(home, load_config(home.config, []),
                                 RunRequest(single_session=False, policy=_BuggyPolicy(), clock=SimulatedClock()),
                                 say=lines.append)
    assert outcome.failed and outcome.reason == "crashed: KeyError: 'missing'" and outcome.end is RunEnd.CRASHED
    events = _events(home, session)
    err = [e["payload"] for e in events if e["kind"] == "error"][-1]
    assert err["stage"] == "loop" and err["exception"] == "KeyError" and "decide" in err["traceback"]
    end = [e["payload"] for e in events if e["kind"] == "session"][-1]
    assert end["event"] == "end" and end["reason"] == "crashed: KeyError: 'missing'"
    state = read_json(home.state)
    assert state["status"] == "stopped" and state["stop_reason"].startswith("crashed: KeyError")
    assert outcome.journal and os.path.exists(outcome.journal)
    assert lines[-1] == "stopped after 1 step(s): crashed: KeyError: 'missing'"


def test_the_cli_reports_a_crash_in_one_line_with_the_journal_path(initialized_home, tmp_path):
    import yaml
    from conftest import run_cli
    # the agent's own action turns memory.md into a folder: the next memory write fails unexpectedly
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump([{"action": {"type": "shell", "command": "rm -f ../memory.md; mkdir ../memory.md"}},
                                      {"action": {"type": "wait"}}]))
    r = run_cli("run", "--mock-script", str(script), "--max-steps", "3")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    # memory.md is opened as a regular file only (a FIFO or a folder in its place must never block or pass)
    assert "crashed: NotRegularFile" in r.stderr and "memory.md" in r.stderr
    assert str(initialized_home / "journal") in r.stderr
    status = run_cli("status", "--json")
    import json
    st = json.loads(status.stdout)
    assert st["status"] == "stopped" and st["stop_reason"].startswith("crashed: NotRegularFile")


def test_the_start_banner_prints_the_model_description_as_lines_not_a_list():
    home = resolve_home(None)
    init_home(home)
    with ScriptedFakeServer(models=["fake-vlm"]) as fake:
        cfg = load_config(home.config, ["policy=generic", f"policy.endpoint={fake.base_url}", "agent.max_steps=1",
                                        "observe.source=synthetic", "policy.structured_output=none"])
        lines: list[str] = []
        run_agent(home, cfg, RunRequest(single_session=False, clock=SimulatedClock()), say=lines.append)
    assert lines[1] == f"model fake-vlm at {fake.base_url} (unknown server)", lines[:3]
    assert not any(line.startswith("[") for line in lines)


class _JournalBreaker(Policy):
    """Answers a wait, and on its second decision makes the journal unwritable under the running agent: the
    open handle now refuses writes (a read-only descriptor in its place) and its path cannot be reopened."""

    model_id = "journal-breaker"

    def __init__(self, home):
        self.home, self.calls = home, 0

    def decide(self, context):
        from conway.actions import Wait
        from conway.protocols import Decision
        self.calls += 1
        if self.calls == 2:
            path = sorted((self.home.root / "journal").glob("*.jsonl"))[-1]
            fd = next(int(n) for n in os.listdir("/proc/self/fd")
                      if os.path.realpath(f"/proc/self/fd/{n}") == str(path.resolve()))
            read_only = os.open(path, os.O_RDONLY)
            os.dup2(read_only, fd)
            os.close(read_only)
            path.rename(path.with_suffix(".moved"))
            path.mkdir()  # nothing can reopen it for appending
        return Decision(raw_text="wait", actions=[Wait(seconds=1)], model_id=self.model_id)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_journal_made_unwritable_mid_run_ends_the_run_in_one_line_with_state_stopped():
    """Item 25.14: a four-level traceback, no end, state.json left `running`."""
    home = resolve_home(None)
    init_home(home)
    lines: list[str] = []
    outcome, _ = run_agent(home, load_config(home.config, ["agent.max_steps=5"]),
                           RunRequest(single_session=False, policy=_JournalBreaker(home), clock=SimulatedClock()),
                           say=lines.append)
    assert outcome.end is RunEnd.CRASHED and outcome.reason.startswith("journal not writable: "), outcome.reason
    assert "\n" not in outcome.reason and "Traceback" not in outcome.reason
    state = read_json(home.state)
    assert state["status"] == "stopped" and state["stop_reason"] == outcome.reason
    assert lines[-1] == f"stopped after 2 step(s): {outcome.reason}"
