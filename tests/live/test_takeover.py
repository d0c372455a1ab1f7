"""Take over, act as a person (xdotool on a real Xvfb display), hand back: the journal's `human` steps are what the
person did (positions within 1 px, text exact), the next decision is told, export writes them as labelled rows.

The agent is the scripted mock policy (named as such: the model is not the point here)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers.desktop_fixtures import need, wait_until, xdotool
from helpers.live_sessions import conway, human_actions, start_session

from conway.machine.xvfb import start_xvfb


@pytest.fixture
def display():
    need("Xvfb", "xvfb")
    need("xdotool", "xdotool")
    server = start_xvfb(1024, 768)
    try:
        yield server.display
    finally:
        server.stop()


def test_takeover_records_the_persons_input_and_handback_tells_the_agent(display: str, tmp_path: Path) -> None:
    home = tmp_path / "agent"
    s = start_session(home, display, [{"action": {"type": "wait", "seconds": 0.5}}])
    try:
        out = conway(home, "takeover")
        assert out.returncode == 0, out.stderr
        assert "takeover acknowledged" in out.stdout
        assert s.status() == "taken over"
        again = conway(home, "takeover")
        assert again.returncode != 0 and "already taken over" in again.stderr
        time.sleep(0.5)  # the recorder is listening
        xdotool(display, "mousemove", "101", "202", "click", "1")
        time.sleep(0.6)
        xdotool(display, "mousemove", "640", "300", "click", "3")
        time.sleep(0.6)
        xdotool(display, "mousemove", "300", "300", "mousedown", "1", "mousemove", "420", "350", "mouseup", "1")
        time.sleep(0.6)
        xdotool(display, "type", "--delay", "40", "Hello, World 42")
        time.sleep(1.3)
        xdotool(display, "key", "Return")
        xdotool(display, "key", "ctrl+a")
        xdotool(display, "mousemove", "500", "400", "click", "5", "click", "5")
        wait_until(lambda: len(human_actions(s)) >= 6, timeout=15, what="the person's actions journaled")
        out = conway(home, "handback")
        assert out.returncode == 0, out.stderr
        twice = conway(home, "handback")
        assert twice.returncode != 0
        assert "not taken over" in twice.stderr and len(twice.stderr.strip().splitlines()) == 1
        assert "Traceback" not in twice.stderr
        wait_until(lambda: [e for e in s.events("observation") if e["ts"] > _handback_ts(s)], timeout=15,
                   what="a fresh observation after hand back")
    finally:
        s.stop()
    got = human_actions(s)
    want = [{"type": "click", "x": 101, "y": 202, "button": "left"},
            {"type": "right_click", "x": 640, "y": 300},
            {"type": "drag", "x": 300, "y": 300, "to_x": 420, "to_y": 350},
            {"type": "type", "text": "Hello, World 42"},
            {"type": "key", "key": "enter"},
            {"type": "hotkey", "keys": ["ctrl", "a"]},
            {"type": "scroll", "dy": -2, "dx": 0, "x": 500, "y": 400}]
    assert len(got) == len(want), got
    for g, w in zip(got, want):
        assert g["type"] == w["type"], (g, w)
        for k in ("x", "y", "to_x", "to_y"):
            if k in w:
                assert abs(g[k] - w[k]) <= 1, (k, g, w)
        for k in ("text", "key", "keys", "dy", "dx", "button"):
            if k in w:
                assert g[k] == w[k], (k, g, w)
    humans = s.events("human")
    assert all(e["payload"]["observation"]["screenshot"] for e in humans)  # each with the screen it was done on
    assert all((s.home.root / e["payload"]["observation"]["screenshot"]).is_file() for e in humans)
    # the next decision was told what the person did
    later = [e for e in s.events("decision") if e["ts"] > _handback_ts(s)]
    assert later, "no decision after hand back"
    # export: one labelled row per human action, the action as the label
    export = tmp_path / "out.jsonl"
    done = conway(home, "export", "--output", str(export))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    human_rows = [r for r in rows if r.get("actor") == "human"]
    assert [r["labels"]["corrected_action"] for r in human_rows] == got
    assert all(r["labels"]["source"] == "human" and r["observation"]["screenshot"] for r in human_rows)
    assert len({r["step"] for r in human_rows}) == len(human_rows)  # each a step of its own
    # the viewer draws them as cards of their own, marked as the person's
    from conway.store.home import Home
    from conway.view.command import build_site

    site = build_site(Home(home))
    sv = site.sessions[-1]
    assert [st.outcome for st in sv.steps if st.record.get("actor") == "human"] == ["human"] * len(got)
    page = site.get(f"s/{sv.folder}/page-0001.html").decode()
    assert page.count("o-human") >= len(got) and "Hello, World 42" in page


def _handback_ts(s) -> str:
    backs = [e for e in s.events("control") if e["payload"].get("request") == "handback"]
    return backs[-1]["ts"] if backs else "9999"  # ISO times compare as text


def test_the_next_decision_says_what_the_person_did(display: str, tmp_path: Path) -> None:
    """In-process, so the mock policy's context (what a model would be shown) can be read."""
    import threading

    from conway.config import ConwayConfig
    from conway.observe.screen import ScreenObserver
    from conway.policies.mock import MockPolicy, MockScript, MockStep
    from conway.session.app import RunRequest, run_agent, send_control
    from conway.store.home import Home
    from conway.tools.registry import build_toolbox

    home = Home(tmp_path / "agent")
    home.ensure_dirs()
    cfg = ConwayConfig.model_validate({"policy": {"kind": "mock"}, "observe": {"source": "screen"},
                                       "agent": {"idle_backoff_start_s": 0.2, "idle_backoff_max_s": 0.5}})
    class Remembering(MockPolicy):
        """The mock policy, keeping the text of every prompt it was given (what a model would have read)."""

        prompts: list[str] = []

        def decide(self, context):
            self.prompts.append(_prompt(context))
            return super().decide(context)

    policy = Remembering(MockScript(steps=[MockStep(action={"type": "wait", "seconds": 0.2})], repeat=True))
    observer = ScreenObserver.from_config(cfg, home, display=display)
    box = build_toolbox(cfg.tools, home.scratch, gui=False)
    said: list[str] = []
    runner = threading.Thread(target=run_agent, args=(home, cfg, RunRequest(
        single_session=False, policy=policy, observer=observer, toolbox=box)), kwargs={"say": said.append})
    runner.start()
    try:
        wait_until(lambda: policy.last_context is not None, timeout=20, what="a first decision")
        assert "acknowledged" in send_control(home, "takeover")
        time.sleep(0.5)
        xdotool(display, "mousemove", "33", "44", "click", "1")
        time.sleep(0.7)
        xdotool(display, "type", "abc")
        time.sleep(1.3)
        assert "acknowledged" in send_control(home, "handback")
        wait_until(lambda: any("A person took over" in p for p in policy.prompts), timeout=30,
                   what="a decision told what the person did")
    finally:
        send_control(home, "stop")
        runner.join(30)
    told = next(p for p in policy.prompts if "A person took over" in p)
    assert "did 2 action(s)" in told and "click(x=33.0, y=44.0" in told and "type(text='abc')" in told, told[-3000:]
    assert "done by a person" in policy.prompts[-1]  # and the recent steps keep them, marked as the person's
    assert any("taken over" in line for line in said) and any("handed back" in line for line in said)


def _prompt(ctx) -> str:
    return "\n".join(p.text for p in ctx.parts) if ctx is not None else ""


def test_takeover_with_nothing_running_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "idle"
    assert conway(home, "init").returncode == 0
    for command in ("takeover", "handback"):
        out = conway(home, command)
        assert out.returncode != 0
        assert out.stderr.strip().count("\n") == 0 and "no Conway agent is running" in out.stderr


def test_record_is_a_session_with_no_model_a_person_acting(display: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    from helpers.live_sessions import REPO, Session, conway_env

    from conway.store.home import Home

    home = tmp_path / "demo"
    assert conway(home, "init").returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli", "--home", str(home), "record", "--task",
                             "click the corner, then type"], cwd=REPO, env=conway_env(display),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    s = Session(Home(home), proc)
    try:
        wait_until(lambda: s.status() == "taken over", timeout=30, what="the recording to start")
        time.sleep(0.5)
        xdotool(display, "mousemove", "12", "34", "click", "1")
        time.sleep(0.6)
        xdotool(display, "type", "demo")
        wait_until(lambda: len(human_actions(s)) >= 1, timeout=10, what="the click journaled")
        assert conway(home, "handback").returncode == 0
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "recorded session" in out
    # the person handed back: it ended "recorded (the model's own report)", with no model there
    assert "recorded (the person handed back)" in out and "model's own report" not in out
    (finish,) = s.events("finish")
    assert finish["payload"]["declared_by"] == "person"
    assert human_actions(s) == [{"type": "click", "x": 12.0, "y": 34.0, "button": "left"},
                                {"type": "type", "text": "demo"}]
    assert not [e for e in s.events("decision") if e["payload"].get("model_id") != "person (conway record: no model)"]
    export = tmp_path / "demo.jsonl"
    assert conway(home, "export", "--output", str(export)).returncode == 0
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    human_rows = [r for r in rows if r.get("actor") == "human"]
    assert [r["labels"]["corrected_action"]["type"] for r in human_rows] == ["click", "type"]
    assert all(r["instruction"].endswith("click the corner, then type") or "click the corner" in r["instruction"]
               for r in human_rows)


def test_record_ends_at_max_seconds_with_nobody_at_the_screen(display: str, tmp_path: Path) -> None:
    # it held "taken over", step 0, until `conway stop`: no cycle came round to check the budget
    import subprocess
    import sys

    from helpers.live_sessions import REPO, Session, conway_env

    from conway.store.home import Home

    home = tmp_path / "idle-demo"
    assert conway(home, "init").returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli", "--home", str(home), "record", "--max-seconds", "3"],
                            cwd=REPO, env=conway_env(display), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "recorded session" in out
    state = Session(Home(home), proc).state()
    assert state["status"] == "stopped" and "max-seconds" in (state.get("stop_reason") or ""), state


def test_takeover_of_a_session_with_no_screen_says_the_input_is_not_recorded(tmp_path: Path) -> None:
    # it said only "acknowledged"; why nothing would be recorded went to the agent's terminal
    s = start_session(tmp_path / "screenless", None, [{"action": {"type": "wait", "seconds": 0.3}}])
    try:
        out = conway(tmp_path / "screenless", "takeover")
        assert out.returncode == 0, out.stderr
        assert "takeover acknowledged" in out.stdout
        assert "your input is not recorded: no X display to record (the session has no screen)" in out.stdout
    finally:
        s.stop()
