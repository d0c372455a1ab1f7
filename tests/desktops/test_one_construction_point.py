"""Every command that runs a task builds its desktop at the seam's one construction point
(`conway.desktops.open_desktop`): `start --task-file --desktop`, `tasks run`, its worker pool and Ray workers,
`rollouts`, and `rerun`, each as a real command on a real disposable desktop. The provider they are given is
`helpers.recording_desktop` (a fake for this purpose: the local desktop unchanged, recording each desktop
built), registered from outside Conway in one line, so a command that built its desktop any other way would
leave no record; it is also the real try of adding a provider (one module, one registration)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.recording_desktop import LOG, built, registration_dir
from helpers.task_desktop import REPO, need_desktop

TESTS = REPO / "tests"

TASK_MD = """---
acceptance:
  - file_contains: made.txt
    text: marker
---
Write the word marker into made.txt.
"""

SCRIPT = ('- action: {type: shell, command: "echo marker > made.txt"}\n'
          "- action: {type: finish, status: DONE}\n")


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    need_desktop()
    reg = registration_dir(tmp_path / "registration")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(reg), str(TESTS), str(REPO)]),
            LOG: str(tmp_path / "built.jsonl")}


def conway(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conway.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def suite(tmp_path: Path, n: int = 1) -> tuple[Path, Path]:
    tasks, scripts = tmp_path / "suite", tmp_path / "scripts"
    tasks.mkdir()
    scripts.mkdir()
    for i in range(n):
        (tasks / f"write-{i}.md").write_text(TASK_MD, encoding="utf-8")
        (scripts / f"write-{i}.yaml").write_text(SCRIPT, encoding="utf-8")
    return tasks, scripts


def records(env: dict[str, str]) -> list[dict]:
    return built(Path(env[LOG]))


def test_start_task_file_runs_on_the_chosen_desktop_and_checks_its_criteria_there(env, tmp_path) -> None:
    home = tmp_path / "home"
    assert conway(env, "--home", str(home), "init").returncode == 0
    (tmp_path / "task.md").write_text(TASK_MD, encoding="utf-8")
    (tmp_path / "script.yaml").write_text(SCRIPT, encoding="utf-8")
    done = conway(env, "--home", str(home), "start", "--task-file", str(tmp_path / "task.md"), "--execute",
                  "--mock-script", str(tmp_path / "script.yaml"), "--desktop", "recording",
                  "--output", str(tmp_path / "report.json"))
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    [rec] = records(env)
    assert rec["task"] == "task" and "start" in rec["argv"] and rec["in"] == "command"
    report = json.loads((tmp_path / "report.json").read_text())
    # the file was written in the desktop's home by the agent's shell there, and read back through its TaskEnv
    assert "made.txt contains 'marker'" in json.dumps(report), said
    assert report["parameters"]["desktop"]["provider"] == "recording" and report["environment"]["desktop"]
    assert not (home / "scratch" / "made.txt").exists()  # not this machine's own working directory


def test_start_refuses_an_unknown_desktop_in_one_line(env, tmp_path) -> None:
    home = tmp_path / "home"
    conway(env, "--home", str(home), "init")
    done = conway(env, "--home", str(home), "start", "--task", "x", "--mock", "--desktop", "vmware")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "'vmware' is not a desktop provider" in done.stderr and records(env) == []


def test_tasks_run_alone_in_a_pool_and_on_ray_build_each_desktop_there(env, tmp_path) -> None:
    tasks, scripts = suite(tmp_path, 2)
    home = tmp_path / "home"
    conway(env, "--home", str(home), "init")
    runs = {"alone": [], "pool": ["--workers", "2"], "ray": ["--ray", "local", "--desktops-per-node", "1"]}
    for name, more in runs.items():
        before = len(records(env))
        done = conway(env, "--home", str(home), "tasks", "run", str(tasks), "--mock-scripts", str(scripts),
                      "--output", str(tmp_path / f"{name}.json"), "tasks.desktop=recording", *more)
        said = done.stdout + done.stderr
        report = json.loads((tmp_path / f"{name}.json").read_text())
        assert [c["score"] for c in report["cases"]] == [1.0, 1.0], said
        new = records(env)[before:]
        assert sorted(r["task"] for r in new) == ["write-0", "write-1"], (name, said)
        where = {"alone": "command", "pool": "pool worker", "ray": "ray worker"}[name]
        assert {r["in"] for r in new} == {where}, (new, said)
    case = json.loads((tmp_path / "alone.json").read_text())["cases"][0]
    rerun_home, session = tmp_path / case["home"], case["session"]
    before = len(records(env))
    done = conway(env, "--home", str(rerun_home), "rerun", "--session", session, "--desktop", "recording",
                  "--output", str(tmp_path / "rerun"))
    assert len(records(env)) == before + 1, done.stdout + done.stderr


def test_rollouts_build_each_desktop_there(env, tmp_path) -> None:
    tasks, scripts = suite(tmp_path, 1)
    home = tmp_path / "home"
    conway(env, "--home", str(home), "init")
    done = conway(env, "--home", str(home), "rollouts", str(tasks), "--samples", "2", "--mock-scripts", str(scripts),
                  "--output", str(tmp_path / "set"), "tasks.desktop=recording")
    assert [r["task"] for r in records(env)] == ["write-0", "write-0"], done.stdout + done.stderr
