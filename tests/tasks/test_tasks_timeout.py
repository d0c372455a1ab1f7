"""`conway tasks run --task-timeout-s`: a task whose loop outlasts its wall-clock limit is stopped as `conway stop`
stops a run and still scored (OSWorld scores the state the agent left); one whose loop ignores the stop has its
desktop torn down and is an error; either way the suite goes on.

Real desktops (bubblewrap, Xvfb, a session bus), the real loop with scripted policies that block (a shell
command that hangs, a model that stalls in its decision), real checkers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers.task_desktop import REPO, need_desktop
from helpers.task_suites import mock_suite, ok_task

from conway.config import load_config
from conway.errors import ExitCode, UserError
from conway.evals.tasks_run import budget, task_timeout, tasks_run
from conway.session.task_watchdog import TIMEOUT_MARGIN_S
from conway.store.home import Home
from conway.tools.shell import ShellTool

pytestmark = pytest.mark.desktop

FINISH = [{"action": {"type": "finish", "status": "DONE", "message": "done"}}]
WRITE_OK = [{"action": {"type": "shell", "command": "echo ok > ~/out.txt"}}]
HANG = [{"action": {"type": "shell", "command": "sleep 600"}}]
STALL = [{"sleep": 600}]  # the model never answers (a server that trickles)




def conway(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(home), *args], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=timeout)


def _runs(p: psutil.Process, word: str) -> bool:
    try:
        return word in p.cmdline() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_the_default_limit_is_the_time_budget_plus_the_margin() -> None:
    assert task_timeout(None, 600.0) == 600.0 + TIMEOUT_MARGIN_S
    assert task_timeout(30, 600.0) == 30.0
    _, seconds = budget(None, None, None)
    assert task_timeout(None, seconds) == seconds + TIMEOUT_MARGIN_S


def test_a_limit_that_is_not_positive_is_refused(tmp_path) -> None:
    home = Home(tmp_path / "home")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "t.json").write_text(json.dumps(ok_task("t")))
    with pytest.raises(UserError, match="--task-timeout-s must be positive"):
        tasks_run(home, load_config(home.config, ["policy=mock"]), str(tmp_path / "suite"),
                  output=str(tmp_path / "r.json"), task_timeout_s=0)


@pytest.fixture(scope="module")
def timed_out(tmp_path_factory):
    """Through the command line: a hung shell command after the work is done (stopped, then scored 1), a model
    that stalls before any work (stopped, then scored 0), then a task that finishes in time."""
    need_desktop()
    root = tmp_path_factory.mktemp("timeout")
    suite, mock = mock_suite(root, {"a-hangs-after-work": WRITE_OK + HANG + FINISH, "b-model-stalls": STALL + FINISH,
                                "c-in-time": WRITE_OK + FINISH})
    out = root / "r.json"
    started = time.monotonic()
    done = conway(root / "home", "tasks", "run", str(suite), "--mock-scripts", str(mock), "--output", str(out),
                  "--task-timeout-s", "4", "--max-seconds", "120")
    took = time.monotonic() - started
    assert out.is_file(), done.stdout + done.stderr
    data = json.loads(out.read_text())
    return done, data, {c["task"]: c for c in data["cases"]}, out, took


def test_a_timed_out_task_is_stopped_then_scored_as_it_was_left(timed_out) -> None:
    done, data, cases, _, took = timed_out
    a, b, c = cases["a-hangs-after-work"], cases["b-model-stalls"], cases["c-in-time"]
    assert a["timed_out"] is True and 4 <= a["elapsed_s"] < 4 + 10, a  # the stop was honoured within seconds
    assert a["outcome"] == "pass" and a["score"] == 1.0  # OSWorld's rule: the state the agent left is scored
    assert not (a["declared"] or {}).get("status")  # stopped before its finish: nothing declared
    assert a["stop_reason"].startswith("task timeout (4 s): ") and "stop" in a["stop_reason"]
    assert a["budget"]["task_timeout_s"] == 4.0 and "torn_down" not in a and "lost" not in a
    assert b["timed_out"] is True and 4 <= b["elapsed_s"] < 4 + 10, b  # a stalled decision is abandoned
    assert b["outcome"] == "fail" and b["score"] == 0.0
    assert "timed_out" not in c and "elapsed_s" not in c and c["outcome"] == "pass"  # the next task still ran
    s = data["summary"]
    assert (s["timed_out"], s["passed"], s["failed"], s["errors"]) == (2, 2, 1, 0)
    assert done.returncode == ExitCode.NOT_PASSED and data["status"] == "fail"  # b failed: nothing else
    assert data["parameters"]["task_timeout_s"] == 4.0
    assert "[1/3] a-hangs-after-work: pass (timed out after" in done.stdout
    assert "timed out 2" in done.stdout
    assert took < 120


def test_conway_report_and_view_show_the_timed_out_count(timed_out, tmp_path) -> None:
    _, _, _, out, _ = timed_out
    text = conway(tmp_path / "home", "report", str(out), timeout=60)
    assert text.returncode == 0, text.stderr
    assert "timed out: 2 task(s)" in text.stdout
    assert "timed out after 4" in text.stdout  # the table's row of a timed-out task
    site = tmp_path / "site"
    view = conway(tmp_path / "home", "view", str(out), "--output", str(site), timeout=120)
    assert view.returncode == 0, view.stderr
    page = (site / "index.html").read_text()
    assert "timed out" in page and "2 task(s): stopped at --task-timeout-s" in page
    assert "stopped after 4." in page  # a timed-out task's card


def test_a_loop_that_ignores_the_stop_has_its_desktop_torn_down_and_is_an_error(tmp_path, monkeypatch) -> None:
    need_desktop()
    monkeypatch.setattr(ShellTool, "cancellable", False)  # a tool that ignores stops: its command runs on
    suite, mock = mock_suite(tmp_path, {"a-ignores-stop": WRITE_OK + HANG + FINISH, "b-next": WRITE_OK + FINISH})
    home, out = Home(tmp_path / "home"), tmp_path / "r.json"
    lines: list[str] = []
    started = time.monotonic()
    code = tasks_run(home, load_config(home.config, ["policy=mock", "tools.shell_timeout_s=600"]), str(suite),
                     output=str(out), mock_scripts=str(mock), say=lines.append, task_timeout_s=3, stop_grace_s=2,
                     max_seconds=120)
    took = time.monotonic() - started
    data = json.loads(out.read_text())
    a, b = data["cases"]
    assert a["outcome"] == "error" and a["timed_out"] is True and a["torn_down"] is True, a
    assert a["error"].startswith("run: RuntimeError: timed out after 3 s and did not stop within 2 s")
    assert "the desktop was torn down" in a["error"] and "score" not in a  # no checker on a killed desktop
    assert 5 <= a["elapsed_s"] < 5 + 10 and "lost" not in a and "retried" not in a
    assert b["task"] == "b-next" and b["outcome"] == "pass" and "timed_out" not in b  # the suite went on
    s = data["summary"]
    assert (s["timed_out"], s["errors"], s["passed"]) == (1, 1, 1)
    assert code == ExitCode.NOT_PASSED and data["status"] == "fail"
    assert took < 90  # the 600 s command did not hold the suite
    assert not [p for p in psutil.Process().children(recursive=True) if _runs(p, "sleep")]  # the hang was killed
    assert any(line.startswith("[1/2] a-ignores-stop: error (timed out after") for line in lines)
