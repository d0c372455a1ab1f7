"""`conway tasks run` with `tasks.desktop=osworld` (`--desktop-url`) against the stand-in of OSWorld's guest server
on the session's Xvfb: the task's setup through /setup/*, the scripted policy's typing through /execute into a
real LXTerminal, the checker's getter through /execute, OSWorld's runner protocol with its waits shortened and
named as deviations in the report. A passing script scores 1, a failing one 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from helpers.desktop_fixtures import xvfb_session  # noqa: F401  (fixture)
from helpers.standin_guest import StandinGuest
from helpers.task_desktop import REPO, need_desktop

pytestmark = pytest.mark.desktop

TASK = {
    "id": "guest-terminal-writes",
    "instruction": "A terminal is open. Write the word guest-ok into the file done.txt in the home folder.",
    "config": [{"type": "launch", "parameters": {"command": "lxterminal --working-directory=/home/user"}},
               {"type": "sleep", "parameters": {"seconds": 2}},
               {"type": "activate_window", "parameters": {"window_name": "lxterminal", "by_class": True}}],
    "related_apps": ["os"],
    "evaluator": {"func": "check_include_exclude",
                  "result": {"type": "vm_command_line", "command": "cat ~/done.txt", "shell": True},
                  "expected": {"type": "rule", "rules": {"include": ["guest-ok"], "exclude": ["No such file"]}}},
}
PASS = "- action:\n    type: type\n    text: \"echo guest-ok > ~/done.txt\\n\"\n- action:\n    type: finish\n    status: DONE\n"
FAIL = "- action:\n    type: finish\n    status: DONE\n"


def tasks_run(tmp: Path, url: str, script: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    suite, scripts = tmp / "suite", tmp / "scripts"
    suite.mkdir()
    scripts.mkdir()
    (suite / f"{TASK['id']}.json").write_text(json.dumps(TASK))
    (scripts / f"{TASK['id']}.yaml").write_text(script)
    out = tmp / "report.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(tmp / "home"), "tasks", "run",
                           str(suite), "tasks.wait_after_setup_s=1", "tasks.settle_before_eval_s=0.5",
                           "--desktop-url", url, "--mock-scripts", str(scripts), "--output", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.is_file(), done.stdout + done.stderr
    return done, json.loads(out.read_text())


@pytest.mark.parametrize("script,score", [(PASS, 1.0), (FAIL, 0.0)], ids=["pass", "fail"])
def test_a_task_runs_and_scores_through_the_guest_protocol(xvfb_session, tmp_path, script, score) -> None:  # noqa: F811
    need_desktop()
    guest = StandinGuest(xvfb_session.display, tmp_path / "guest-home", size=tuple(xvfb_session.size))
    try:
        done, report = tasks_run(tmp_path, guest.url, script)
        case = report["cases"][0]
        if score:  # `conway rerun` replays the session on the provider its report names: the same guest
            before = len(guest.recording)
            again = subprocess.run([sys.executable, "-m", "conway.cli", "--home",
                                    str(tmp_path / "report.json").replace("report.json", case["home"]), "rerun",
                                    "--session", case["session"], "--output", str(tmp_path / "rerun")], cwd=REPO,
                                   env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                                   timeout=300)
            assert again.returncode == 0 and "reproduced" in again.stdout, again.stdout + again.stderr
            replayed = [r for r in guest.recording[before:] if r["path"] == "/execute"]
            assert any("typewrite" in json.dumps(r["request"]) for r in replayed)
        ran = guest.processes()  # lxterminal on the stand-in's own bus, and what the bus started for it
    finally:
        guest.close()
    # nothing outlives the guest: the terminal, its session bus and the accessibility bus under it are gone, and no
    # bus was autolaunched beside them (dbus-launch detaches: it would be no descendant of anything here)
    assert ran and not [p for p in ran if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    autolaunched = [p for p in psutil.process_iter(["name", "environ"]) if p.info["name"] == "dbus-launch"
                    and (p.info["environ"] or {}).get("HOME") == str(tmp_path / "guest-home")]
    assert not autolaunched
    assert case["outcome"] == ("pass" if score else "fail") and case["score"] == score, done.stdout + done.stderr
    assert case["desktop"]["line"] == f"OSWorld guest server at {guest.url}, Linux, screen 1280x800"
    assert case["protocol"]["after_setup"]["seconds"] >= 1 and case["budget"]["max_steps"] == 15
    assert report["parameters"]["desktop"]["provider"] == "osworld"
    deviations = report["parameters"]["protocol"]["deviations"]
    assert "tasks.wait_after_setup_s=1 (the wait after setup; OSWorld's runner: 60)" in deviations
    assert "tasks.settle_before_eval_s=0.5 (the settle before evaluation; OSWorld's runner: 20)" in deviations
    assert report["environment"]["desktop"] == case["desktop"]["line"]
    paths = [r["path"] for r in guest.recording]
    assert "/setup/launch" in paths and "/setup/activate_window" in paths and "/screenshot" in paths
    typed = [r for r in guest.recording if r["path"] == "/execute" and "typewrite" in json.dumps(r["request"])]
    assert bool(typed) == bool(score)  # the agent acts only through pyautogui on the guest
    assert (tmp_path / "guest-home" / "done.txt").exists() == bool(score)
    assert "OSWorld guest server at" in subprocess.run(
        [sys.executable, "-m", "conway.cli", "report", str(tmp_path / "report.json")], cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60).stdout


def test_osworld_without_an_address_is_one_line_before_any_task(tmp_path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "t.json").write_text(json.dumps(TASK))
    done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "home"), "tasks", "run",
                           str(suite), "tasks.desktop=osworld", "--mock", "--output", str(tmp_path / "r.json")],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "needs the guest server's address: --desktop-url" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
