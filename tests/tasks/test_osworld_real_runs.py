"""Real OSWorld tasks through `conway tasks run`, each with the real application on its disposable desktop.

`tests/data/osworld_real/` holds OSWorld-Verified task files copied byte for byte (its README names the source)
that need neither the web nor a cached file, for every domain that has such tasks (os, chrome, vlc, gimp,
multi_apps, libreoffice_impress), and three tasks of the project's own in OSWorld's format for Calc, Writer and
Thunderbird (whose OSWorld tasks all need cached files), using the metrics the real ones use. Each task runs
its own setup steps (Chromium started as google-chrome with socat forwarding its DevTools port, VLC with its
HTTP interface, GIMP, LibreOffice, Thunderbird, the terminal for Ctrl+Alt+T), the loop driven by a scripted
policy, then its own checker: every task scores 1 with `mock/pass/<id>.yaml` and 0 with `mock/fail/<id>.yaml`.
Nothing is faked but the policy (a script stands in for the model) and PyAutoGUI inside the sandbox, which
the desktop provides as a named stand-in (`conway/sandbox/_guest_pyautogui.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers.task_desktop import OSWORLD_APPS, REPO, need_desktop

pytestmark = pytest.mark.desktop
SUITE = REPO / "tests" / "data" / "osworld_real"


def start_suite(tmp: Path, way: str) -> tuple[subprocess.Popen[str], Path]:
    out = tmp / f"{way}.json"
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli", "--home", str(tmp / f"home-{way}"), "tasks", "run",
                             str(SUITE / "examples"), "--mock-scripts", str(SUITE / "mock" / way), "--output", str(out)],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc, out


def finish_suite(proc: subprocess.Popen[str], out: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    try:
        stdout, stderr = proc.communicate(timeout=2400)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert out.is_file(), done.stdout + done.stderr
    return done, json.loads(out.read_text())


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The passing and the failing scripts' runs side by side, each on its own desktops (two `conway tasks run`
    at once: the window waits, the measured readiness and the scripts' waits follow the machine's load, and
    each desktop's readiness watches only its own processes), about halving the module's time."""
    need_desktop(OSWORLD_APPS)
    tmp = tmp_path_factory.mktemp("suites")
    started = {way: start_suite(tmp, way) for way in ("pass", "fail")}
    return {way: finish_suite(*run) for way, run in started.items()}


@pytest.fixture(scope="module")
def passing(both):
    return both["pass"]


@pytest.fixture(scope="module")
def failing(both):
    return both["fail"]


def _tasks() -> dict[str, str]:
    return {p.stem: p.parent.name for p in (SUITE / "examples").rglob("*.json")}


def test_the_suite_covers_every_domain_with_runnable_tasks() -> None:
    by_domain = Counter(_tasks().values())
    for domain in ("os", "chrome", "vlc", "gimp", "multi_apps"):
        assert by_domain[domain] >= 3, by_domain
    assert by_domain["libreoffice_impress"] >= 1  # OSWorld has two such tasks; the other needs an unbuilt getter
    for domain in ("libreoffice_calc", "libreoffice_writer", "thunderbird"):
        assert by_domain[domain] >= 1
    own = {t for t in _tasks() if t.startswith("conway-")}
    assert own == {"conway-calc-totals", "conway-writer-append", "conway-thunderbird-spellcheck"}
    for task in _tasks():
        assert (SUITE / "mock" / "pass" / f"{task}.yaml").is_file() and (SUITE / "mock" / "fail" / f"{task}.yaml").is_file()


def test_every_task_scores_1_with_its_passing_script(passing) -> None:
    done, data = passing
    wrong = {c["task"]: (c["outcome"], c.get("score"), c.get("error"), c.get("metrics")) for c in data["cases"]
             if c["outcome"] != "pass"}
    assert not wrong, done.stdout + done.stderr
    assert sorted(c["task"] for c in data["cases"]) == sorted(_tasks())
    assert done.returncode == 0 and data["summary"]["not_runnable"] == 0


def test_every_task_scores_0_with_its_failing_script(failing) -> None:
    done, data = failing
    wrong = {c["task"]: (c["outcome"], c.get("score"), c.get("error")) for c in data["cases"] if c["outcome"] != "fail"}
    assert not wrong, done.stdout + done.stderr
    assert all(c["score"] == 0.0 for c in data["cases"])


def test_the_report_names_the_applications_and_osworlds_versions(passing) -> None:
    _, data = passing
    env = data["environment"]
    apps = {a["name"]: a for a in env["apps"]}
    for program in ("chromium", "soffice", "gimp", "vlc", "thunderbird", "socat"):
        assert apps[program]["version"], apps[program]
    assert apps["soffice"]["osworld_vm"] == "LibreOffice 7.3.7.2" and apps["vlc"]["osworld_vm"] == "VLC 3.0.16"
    assert "Ubuntu 22.04" in env["osworld_vm"]
    assert any("leaderboard" in line for line in data["differences_from_osworld"])
