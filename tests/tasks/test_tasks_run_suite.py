"""The shipped suite evals/osworld_local through `conway tasks run`, both ways, for real.

Each task runs on its own disposable desktop (bubblewrap, Xvfb, a session bus, LXTerminal, Mousepad,
Chromium), through the real loop driven by its scripted policy, and is scored by its own checker: every
task scores 1 with `mock/pass/<id>.yaml` and 0 with `mock/fail/<id>.yaml`. Nothing is faked but the
policy, which is the point: a script stands in for the model. The reports then go through `conway report`,
`conway view` and `conway export --from-report`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.task_desktop import REPO, need_desktop

pytestmark = pytest.mark.desktop
SUITE = REPO / "evals" / "osworld_local"


def conway(home: Path, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(home), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def run_suite(tmp: Path, way: str) -> tuple[subprocess.CompletedProcess[str], dict, list[dict], Path]:
    need_desktop()
    out = tmp / f"{way}.json"
    done = conway(tmp / "home", "tasks", "run", str(SUITE), "--cache", str(SUITE / "cache"),
                  "--mock-scripts", str(SUITE / "mock" / way), "--output", str(out))
    assert out.is_file(), done.stdout + done.stderr
    data = json.loads(out.read_text())
    return done, data, data["cases"], out


@pytest.fixture(scope="module")
def passing(tmp_path_factory):
    return run_suite(tmp_path_factory.mktemp("pass"), "pass")


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    return run_suite(tmp_path_factory.mktemp("fail"), "fail")


def _ids() -> list[str]:
    return sorted(p.stem for p in (SUITE / "examples").rglob("*.json"))


def test_every_task_scores_1_with_its_passing_script(passing) -> None:
    done, data, cases, _ = passing
    wrong = {c["task"]: (c["outcome"], c.get("score"), c.get("error")) for c in cases if c["outcome"] != "pass"}
    assert not wrong, done.stdout + done.stderr
    assert done.returncode == 0 and data["status"] == "pass"
    assert sorted(c["task"] for c in cases) == _ids() and len(cases) >= 20
    assert all(c["score"] == 1.0 and c["verified"] for c in cases)
    s = data["summary"]
    assert (s["scored"], s["passed"], s["failed"], s["errors"], s["not_runnable"]) == (len(cases), len(cases), 0, 0, 0)
    assert s["success"]["hit_rate"] == 1.0 and s["success"]["hit_rate_ci95"][1] == 1.0
    assert s["success"]["hit_rate_ci95"][0] > 0.8  # the Wilson interval of 21/21
    assert set(s["by_domain"]) == {"os", "mousepad", "chrome", "office"}
    assert s["by_app"]["mousepad"]["n"] == 2 and s["by_app"]["chrome"]["n"] == 1
    # the model's word beside the checker's: the infeasible task is passed by declaring FAIL
    impossible = next(c for c in cases if c["task"] == "impossible-refresh-rate")
    assert impossible["declared"]["status"] == "FAIL" and impossible["score"] == 1.0
    assert s["declared"] == {"DONE": len(cases) - 1, "FAIL": 1, "nothing": 0}
    assert "[21/21] write-motd: pass" in done.stdout or done.stdout.count(": pass") == len(cases)


def test_every_task_scores_0_with_its_failing_script(failing) -> None:
    done, data, cases, _ = failing
    wrong = {c["task"]: (c["outcome"], c.get("score"), c.get("error")) for c in cases if c["outcome"] != "fail"}
    assert not wrong, done.stdout + done.stderr
    assert done.returncode == 2 and data["status"] == "fail"
    assert all(c["score"] == 0.0 and not c["verified"] for c in cases)
    s = data["summary"]
    assert (s["passed"], s["failed"], s["success"]["hit_rate"]) == (0, len(cases), 0.0)
    assert s["declared_done_but_failed"] == len(cases)  # every failing script says DONE: the checker disagrees


def test_each_case_records_its_session_cost_and_environment(passing) -> None:
    _, data, cases, _ = passing
    report_dir = Path(data["parameters"]["tasks_folder"])
    for c in cases:
        assert c["session"] and c["steps"] >= 1 and c["wall_s"] > 0
        assert c["view"].startswith("conway --home ") and c["view"].endswith(f"view --session {c['session']}")
        assert c["cost"]["decisions"] == c["steps"] and c["cost"]["models"] == ["conway-mock"]
        assert c["metrics"] or c["task"] == "impossible-refresh-rate"
        assert Path(c["home"]).parts[0] == str(report_dir)
    env = data["environment"]
    assert env["display_size"] == "1280x800"
    names = {a["name"]: a for a in env["apps"]}
    assert {"lxterminal", "mousepad", "chromium"} <= set(names)
    assert all(a["version"] for a in names.values())
    assert any("OSWorld" in line for line in data["differences_from_osworld"])


def test_conway_report_view_and_export_read_the_report(passing, tmp_path) -> None:
    _, data, cases, out = passing
    home = tmp_path / "home"
    text = conway(home, "report", str(out), timeout=60)
    assert text.returncode == 0 and "passed 21/21 scored task(s)" in text.stdout
    assert "how this environment differs from OSWorld's VM" in text.stdout
    site = tmp_path / "site"
    view = conway(home, "view", str(out), "--output", str(site), timeout=120)
    assert view.returncode == 0, view.stderr
    page = (site / "index.html").read_text()
    assert "tasks report" in page and "terminal-arith" in page and "view --session" in page
    assert len(list((site / "img").glob("case-*.jpg"))) == len(cases)  # each task's last screen
    exported = tmp_path / "data.jsonl"
    ex = conway(home, "export", "--from-report", str(out), "--output", str(exported), timeout=120)
    assert ex.returncode == 0, ex.stderr
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(records) == sum(c["steps"] for c in cases)
    assert {r["labels"]["success"] for r in records} == {"success"}
    assert {r["labels"]["source"] for r in records} == {"task-check"}
    assert {r["task"]["id"] for r in records} == {c["task"] for c in cases}
    assert all(Path(r["observation"]["screenshot"]).is_file() for r in records if r["observation"])


def test_export_labels_the_failed_runs_failures(failing, tmp_path) -> None:
    _, data, cases, out = failing
    exported = tmp_path / "data.jsonl"
    ex = conway(tmp_path / "home", "export", "--from-report", str(out), "--output", str(exported), timeout=120)
    assert ex.returncode == 0, ex.stderr
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    assert {r["labels"]["success"] for r in records} == {"failure"}
    finishes = [r["finish"] for r in records if r["finish"]]
    assert finishes and all(f["declared_by"] == "model" for f in finishes)  # the model's word, kept as its own
