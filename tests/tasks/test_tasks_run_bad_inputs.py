"""Bad tasks in one suite: each is one line in the report, counted apart, and the suite goes on.

Real desktops (bubblewrap, Xvfb, a session bus), the real loop with scripted policies, real checkers. The
setup bounds are short here (a 2 s command limit, a 2 s wait for a window) so the hangs end quickly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.task_desktop import REPO, need_desktop

from conway.config import load_config
from conway.errors import ExitCode, UserError
from conway.evals.tasks_run import tasks_run
from conway.store.home import Home

pytestmark = pytest.mark.desktop


def task(task_id: str, *, config=(), evaluator=None, apps=("os",), instruction="Do the thing.") -> dict:
    return {"id": task_id, "instruction": instruction, "config": list(config), "related_apps": list(apps),
            "evaluator": evaluator or {"func": "exact_match",
                                       "result": {"type": "vm_command_line", "command": "cat ~/out.txt",
                                                  "shell": True},
                                       "expected": {"type": "rule", "rules": {"expected": "ok\n"}}}}


def write_suite(root: Path, tasks: dict[str, dict | str], scripts: dict[str, list]) -> tuple[Path, Path]:
    suite, mock = root / "suite" / "examples" / "os", root / "mock"
    suite.mkdir(parents=True)
    mock.mkdir()
    for name, body in tasks.items():
        (suite / f"{name}.json").write_text(body if isinstance(body, str) else json.dumps(body))
    for name, steps in scripts.items():
        (mock / f"{name}.yaml").write_text(json.dumps(steps))
    return root / "suite", mock


FINISH = [{"action": {"type": "finish", "status": "DONE", "message": "done"}}]
WRITE_OK = [{"action": {"type": "shell", "command": "echo ok > ~/out.txt"}}] + FINISH


@pytest.fixture(scope="module")
def bad_suite(tmp_path_factory):
    need_desktop()
    root = tmp_path_factory.mktemp("bad")
    (root / "cache").mkdir()
    tasks = {
        "good": task("good"),
        "broken": '{"id": "broken", "instruction": "unfinished", ',
        "escape": task("escape", evaluator={"func": "compare_text_file",
                                            "result": {"type": "vm_file", "path": "/home/user/../../etc/passwd",
                                                       "dest": "passwd"},
                                            "expected": {"type": "rule", "rules": "x"}}),
        "hangs": task("hangs", config=[{"type": "execute", "parameters": {"command": "sleep 600", "shell": True}}]),
        "no-window": task("no-window", config=[{"type": "launch", "parameters": {"command": ["sleep", "30"]}}]),
        "metric-raises": task("metric-raises", evaluator={
            "func": "literal_match", "result": {"type": "vm_command_line", "command": "echo hi", "shell": True},
            "expected": {"type": "rule", "rules": "hi"}, "options": {"type": "no-such-type"}}),
        "missing-app": task("missing-app", apps=["conway-no-such-app"]),
        "missing-cache": task("missing-cache", config=[{"type": "download", "parameters": {"files": [
            {"url": "https://files.conway.example/x/data.txt", "path": "/home/user/data.txt"}]}}]),
        "unknown-metric": task("unknown-metric", evaluator={"func": "no_such_metric", "result": {"type": "rule",
                                                                                                 "rules": 1}}),
        "no-script": task("no-script"),
    }
    scripts = {name: WRITE_OK for name in tasks if name != "no-script"}
    suite, mock = write_suite(root, tasks, scripts)
    home = Home(root / "home")
    out = root / "report.json"
    lines: list[str] = []
    started = time.monotonic()
    code = tasks_run(home, load_config(home.config, ["policy=mock"]), str(suite), output=str(out),
                     cache=str(root / "cache"), mock_scripts=str(mock), say=lines.append, window_wait_s=2.0,
                     command_timeout_s=2.0, max_seconds=60)
    took = time.monotonic() - started
    data = json.loads(out.read_text())
    return code, data, {c["task"]: c for c in data["cases"]}, lines, took


def test_the_suite_goes_on_and_counts_each_kind_apart(bad_suite) -> None:
    code, data, cases, lines, took = bad_suite
    assert code == ExitCode.NOT_PASSED and data["status"] == "fail"
    assert cases["good"]["outcome"] == "pass" and cases["good"]["score"] == 1.0
    s = data["summary"]
    assert (s["passed"], s["failed"], s["errors"], s["not_runnable"], s["malformed"]) == (1, 0, 5, 3, 1)
    assert s["scored"] == 1 and s["success"]["hit_rate"] == 1.0  # errors and the rest are not in the rate
    assert took < 120  # every hang was bounded
    assert len(lines) == len(cases) + 3  # a line per task; the start, the result and the report


def test_each_bad_task_is_one_line_saying_why(bad_suite) -> None:
    _, _, cases, lines, _ = bad_suite
    expect = {
        "broken": ("malformed", "malformed JSON"),
        "escape": ("error", "PathEscape"),
        "hangs": ("error", "did not finish within 2 s"),
        "no-window": ("error", "never opened its window"),
        "metric-raises": ("error", "literal_match"),
        "no-script": ("error", "no mock script"),
    }
    for name, (outcome, words) in expect.items():
        c = cases[name]
        assert c["outcome"] == outcome, (name, c)
        assert words in c["error"] and "\n" not in c["error"], (name, c["error"])
        assert any(line.startswith(f"[{c['index'] + 1}/") and words in line for line in lines), name
    assert cases["hangs"]["error"].startswith("setup: ") and cases["metric-raises"]["error"].startswith("evaluate: ")


def test_what_cannot_run_here_is_not_runnable_with_its_reason(bad_suite) -> None:
    _, _, cases, _, _ = bad_suite
    reasons = {name: " ".join(cases[name].get("reasons") or []) for name in
               ("missing-app", "missing-cache", "unknown-metric")}
    assert "conway-no-such-app is not installed" in reasons["missing-app"]
    assert "https://files.conway.example/x/data.txt is missing from the cache" in reasons["missing-cache"]
    assert "metric no_such_metric is not implemented" in reasons["unknown-metric"]
    for name in reasons:
        assert cases[name]["outcome"] == "not-runnable" and "session" not in cases[name] and "score" not in cases[name]


def test_bad_arguments_are_one_line_errors(tmp_path) -> None:
    home = Home(tmp_path / "home")
    cfg = load_config(home.config, ["policy=mock"])
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "t.json").write_text(json.dumps(task("t")))
    (tmp_path / "taken.json").write_text("{}")
    cases = [
        (dict(suite_source=str(tmp_path / "nowhere")), "does not exist"),
        (dict(suite_source=str(tmp_path / "suite"), cache=str(tmp_path / "taken.json")), "--cache"),
        (dict(suite_source=str(tmp_path / "suite"), mock_scripts=str(tmp_path / "none")), "--mock-scripts"),
        (dict(suite_source=str(tmp_path / "suite"), max_steps=0), "--max-steps"),
        (dict(suite_source=str(tmp_path / "suite"), output=str(tmp_path / "taken.json")), "already exists"),
    ]
    for kwargs, words in cases:
        kwargs.setdefault("output", str(tmp_path / "r.json"))
        with pytest.raises(UserError) as err:
            tasks_run(home, cfg, kwargs.pop("suite_source"), **kwargs)
        assert words in str(err.value) and "\n" not in str(err.value)


def test_a_resume_that_cannot_be_resumed_makes_nothing(tmp_path) -> None:
    # a bad or complete report left an empty x.tasks folder (and the run's first line) before the refusal
    from conway.evals.report import Report

    home = Home(tmp_path / "home")
    cfg = load_config(home.config, ["policy=mock"])
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "t.json").write_text(json.dumps(task("t")))
    (tmp_path / "bad.json").write_text("garbage")
    done = Report("tasks", tmp_path / "done.json", argv=[], config=cfg)
    done.finish(status="complete", exit_code=0, summary={})
    said: list[str] = []
    for resume, words in ((tmp_path / "bad.json", "not a Conway report"), (tmp_path / "done.json", "is complete")):
        with pytest.raises(UserError, match=words):
            tasks_run(home, cfg, str(tmp_path / "suite"), output=str(tmp_path / "x.json"), resume=str(resume),
                      say=said.append)
        assert not (tmp_path / "x.tasks").exists() and not (tmp_path / "x.json").exists() and said == []


def test_ctrl_c_writes_the_report_of_the_tasks_that_finished_marked_partial(tmp_path) -> None:
    need_desktop()
    suite, mock = write_suite(tmp_path, {"a-first": task("a-first"), "b-slow": task("b-slow")},
                              {"a-first": WRITE_OK,
                               "b-slow": [{"action": {"type": "shell", "command": "sleep 60"}}] + FINISH})
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "home"), "tasks", "run",
                             str(suite), "--mock-scripts", str(mock), "--output", str(out)], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in proc.stdout:  # the first task done: the second is in its long shell command
        seen.append(line)
        if line.startswith("[1/2]"):
            break
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.INTERRUPTED, "".join(seen) + rest
    data = json.loads(out.read_text())
    assert data["status"] == "partial" and [c["task"] for c in data["cases"]] == ["a-first"]
    assert "1 of 2" in data["summary"]["interrupted"]


def test_a_report_inside_the_suite_is_refused(tmp_path) -> None:
    home = Home(tmp_path / "home")
    suite, _ = write_suite(tmp_path, {"t": task("t")}, {})
    with pytest.raises(UserError, match="inside the suite"):
        tasks_run(home, load_config(home.config, ["policy=mock"]), str(suite), output=str(suite / "r.json"))


def test_keep_keeps_the_desktop_folder_and_says_where(tmp_path) -> None:
    need_desktop()
    suite, mock = write_suite(tmp_path, {"t": task("t")}, {"t": WRITE_OK})
    home, out = Home(tmp_path / "home"), tmp_path / "r.json"
    code = tasks_run(home, load_config(home.config, ["policy=mock"]), str(suite), output=str(out),
                     mock_scripts=str(mock), keep=True, say=lambda _line: None)
    kept = Path(json.loads(out.read_text())["cases"][0]["kept"])
    try:
        assert code == 0 and (kept / "home" / "out.txt").read_text() == "ok\n"  # the task's own home, kept
    finally:
        shutil.rmtree(kept, ignore_errors=True)
