"""An OSWorld-format task on a real disposable desktop: its setup steps, the agent's work, its own checker."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conway.sandbox.desktop import DisposableDesktop
from conway.sandbox.environment import BubblewrapEnvironment
from conway.sandbox.setup import SetupError, run_setup, run_step
from conway.tasks.cache import cloud_path, download_path
from conway.tasks.evaluate import evaluate
from conway.tasks.task import parse_osworld

pytestmark = pytest.mark.desktop
URL = "https://files.example.invalid/osworld/notes.txt"
TASK = {
    "id": "sandbox-0001", "snapshot": "os", "instruction": "Append the line 'done' to ~/Desktop/notes.txt.",
    "config": [
        {"type": "download", "parameters": {"files": [{"url": URL, "path": "/home/user/Desktop/notes.txt"}]}},
        {"type": "execute", "parameters": {"command": ["sh", "-c", "echo prepared > ~/ready.txt"]}},
    ],
    "related_apps": ["os"],
    "evaluator": {
        "postconfig": [{"type": "execute", "parameters": {"command": "cat ~/Desktop/notes.txt > ~/check.txt",
                                                          "shell": True}}],
        "func": ["compare_text_file", "check_include_exclude"],
        "result": [{"type": "vm_file", "path": "/home/user/check.txt", "dest": "check.txt"},
                   {"type": "vm_command_line", "command": "cat ~/ready.txt", "shell": True}],
        "expected": [{"type": "cloud_file", "path": "https://files.example.invalid/expected.txt",
                      "dest": "expected.txt"},
                     {"type": "rule", "rules": {"include": ["prepared"], "exclude": ["error"]}}],
    },
}


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    if not (shutil.which("Xvfb") and shutil.which("dbus-daemon")) or BubblewrapEnvironment.for_workdir(
            Path("/")).problem():
        if os.environ.get("CONWAY_REQUIRE_DESKTOP"):
            pytest.fail("Xvfb, dbus-daemon or bubblewrap unusable")
        pytest.skip("Xvfb, dbus-daemon or bubblewrap unusable")
    cache = tmp_path / "cache"
    source = download_path(cache, TASK["id"], URL, "/home/user/Desktop/notes.txt")
    source.parent.mkdir(parents=True)
    source.write_text("first line\n")
    cloud_path(cache, TASK["id"], "expected.txt").write_text("first line\ndone\n")
    return cache


@pytest.mark.parametrize("agent_does,score", [("echo done >> ~/Desktop/notes.txt", 1.0), ("true", 0.0)])
def test_a_task_runs_and_is_scored_by_its_own_checker(cache: Path, tmp_path: Path, agent_does: str,
                                                      score: float) -> None:
    task = parse_osworld(json.loads(json.dumps(TASK)), tmp_path / "task.json", domain="os")
    with DisposableDesktop(task.id, cache_dir=cache) as desk:
        run_setup(list(task.config), desk)
        assert desk.run(agent_does, shell=True).returncode == 0  # what the agent would do, in the sandbox
        result = evaluate(task, desk, declared_fail=False, run_step=run_step)
    assert result.score == score, result


def test_a_failing_postconfig_step_is_one_line(cache: Path) -> None:
    with DisposableDesktop("sandbox-0001", cache_dir=cache) as desk:
        with pytest.raises(SetupError) as err:
            run_step({"type": "open", "parameters": {"path": "/etc/passwd"}}, desk)
    assert str(err.value) == "open: /etc/passwd is outside what this sandbox shows"
