"""`conway rerun` of a shipped-suite task recorded by `conway tasks run --video` (the scripted mock policy drives the
recorded run, as the suite's own tests do): the replay reproduces the score; a planted change in the task's setup
shows the first divergent step side by side and changes the score; screenshots rotated away are said, the steps
still replayed. The recorded run's video is playable and linked from its case."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.desktop_fixtures import need
from helpers.task_desktop import REPO, need_desktop

pytestmark = pytest.mark.desktop
SUITE = REPO / "evals" / "osworld_local"
TASK = "terminal-show-file"
"""One typed command in LXTerminal, the checker reading the terminal (Mousepad tasks open with whatever
xdg-open picks on the machine)."""


def conway(home: Path, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(home), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_rerun_reproduces_the_score_and_finds_a_planted_setup_change(tmp_path: Path) -> None:
    need_desktop()
    need("ffmpeg", "ffmpeg")
    task_file = tmp_path / "suite" / f"{TASK}.json"
    task_file.parent.mkdir()
    shutil.copy(SUITE / "examples" / "os" / f"{TASK}.json", task_file)
    report = tmp_path / "r.json"
    done = conway(tmp_path / "home", "tasks", "run", str(task_file), "--cache", str(SUITE / "cache"),
                  "--mock-scripts", str(SUITE / "mock" / "pass"), "--output", str(report), "--video")
    assert report.is_file(), done.stdout + done.stderr
    case = json.loads(report.read_text())["cases"][0]
    assert case.get("score") == 1.0, json.dumps(case)[:2000]
    # --video: a playable video linked from the case, and from `conway report`
    video = report.parent / case["video"]
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", str(video)],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and float(json.loads(probe.stdout)["format"]["duration"]) > 0.5, probe.stderr
    assert case["video"] in conway(tmp_path / "home", "report", str(report)).stdout
    home = report.parent / case["home"]

    same = conway(home, "rerun", "--session", case["session"], "--output", str(tmp_path / "same"))
    assert same.returncode == 0, same.stdout + same.stderr
    assert "score: 1 now, 1.0 recorded: reproduced" in same.stdout
    data = json.loads((tmp_path / "same" / "rerun.json").read_text())
    assert [s["action"]["type"] for s in data["steps"]] == ["type", "end"]
    assert data["first_divergence"] is None, data

    original = task_file.read_text()
    planted = original.replace("the code is TOKEN-81273", "the code is TOKEN-00000, planted in the setup")
    task_file.write_text(planted)
    moved = conway(home, "rerun", "--session", case["session"], "--output", str(tmp_path / "planted"))
    assert moved.returncode == 2, moved.stdout + moved.stderr
    data = json.loads((tmp_path / "planted" / "rerun.json").read_text())
    assert data["steps"][0]["change"] <= 0.0005  # the same screen before the command ...
    assert data["first_divergence"]["n"] == 2 and data["score"] == 0.0, data  # ... a different one after it
    assert Path(data["first_divergence"]["side_by_side"]).is_file()
    assert "first divergence: action 2" in moved.stdout and "NOT reproduced" in moved.stdout

    task_file.write_text(original)
    for shot in (home / "screenshots").iterdir():
        shot.unlink()
    gone = conway(home, "rerun", "--session", case["session"], "--output", str(tmp_path / "gone"))
    assert gone.returncode == 0, gone.stdout + gone.stderr
    # the screen before the command is gone; the end is compared with the task's final.png, kept beside its home
    assert "1 recorded screenshot(s) were rotated away: those steps were replayed, not compared" in gone.stdout
    data = json.loads((tmp_path / "gone" / "rerun.json").read_text())
    assert len(data["steps"]) == 2 and data["score"] == 1.0
    assert data["steps"][0]["compared"] == "the recorded screenshot was rotated away" and data["steps"][0]["ok"]


def test_rerun_of_an_unknown_session_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert conway(home, "init").returncode == 0
    (home / "journal").mkdir(exist_ok=True)
    out = conway(home, "rerun", "--session", "nope")
    assert out.returncode == 1 and out.stderr.strip().count("\n") == 0 and "no session 'nope'" in out.stderr


def test_rerun_of_a_mock_session_says_it_cannot_be_compared(tmp_path: Path) -> None:
    # it replayed on a desktop and said "99.92% differs", exit 2
    home = tmp_path / "h"
    assert conway(home, "init").returncode == 0
    assert conway(home, "run", "--mock", "--max-steps", "3").returncode == 0
    session = json.loads((home / "state.json").read_text())["session"]
    out = conway(home, "rerun", "--session", session, "--output", str(tmp_path / "r"))
    assert out.returncode == 1 and out.stderr.strip().count("\n") == 0, out.stderr
    assert f"session {session} saw a synthetic screen" in out.stderr and "nothing to compare" in out.stderr
    assert not (tmp_path / "r").exists()
