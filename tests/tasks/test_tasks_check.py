"""`conway tasks check SUITE --oracles DIR`: each runnable task's oracle pair run on its real desktop, the task
marked "passable here" only when its solve script scores 1 and its idle script 0; `tasks list --verified` says
so. Two cheap real OSWorld tasks (os e0df059f and the infeasible b3d4a89c), one task without a pair, one not
runnable, and one whose "idle" script solves it (not proved)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.task_desktop import REPO, need_desktop

pytestmark = pytest.mark.desktop
REAL = REPO / "tests" / "data" / "osworld_real"
SOLVED, INFEASIBLE = "e0df059f-28a6-4169-924f-b9623e7184cc", "b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"


def _suite(root: Path) -> tuple[Path, Path]:
    suite, oracles = root / "suite" / "examples" / "os", root / "oracles"
    suite.mkdir(parents=True)
    for role in ("solve", "idle"):
        (oracles / role).mkdir(parents=True)
    for task in (SOLVED, INFEASIBLE):
        shutil.copy(REAL / "examples" / "os" / f"{task}.json", suite)
        shutil.copy(REAL / "mock" / "pass" / f"{task}.yaml", oracles / "solve")
        shutil.copy(REAL / "mock" / "fail" / f"{task}.yaml", oracles / "idle")
    # the same task under another id, whose "idle" script solves it: not proved
    body = json.loads((suite / f"{SOLVED}.json").read_text())
    (suite / "lazy-idle.json").write_text(json.dumps({**body, "id": "lazy-idle"}))
    for role in ("solve", "idle"):
        shutil.copy(REAL / "mock" / "pass" / f"{SOLVED}.yaml", oracles / role / "lazy-idle.yaml")
    (suite / "no-oracle.json").write_text(json.dumps({**body, "id": "no-oracle"}))
    (suite / "not-here.json").write_text(json.dumps({**body, "id": "not-here", "related_apps": ["conway-no-app"]}))
    return root / "suite", oracles


def test_tasks_check_marks_passable_tasks_and_says_why_the_rest_are_not(tmp_path: Path) -> None:
    need_desktop()
    suite, oracles = _suite(tmp_path)
    out = tmp_path / "runs" / "check.json"
    out.parent.mkdir()
    done = run_cli("--home", str(tmp_path / "home"), "tasks", "check", str(suite), "--oracles", str(oracles),
                   "--output", str(out), "--quiet", timeout=600)
    record = json.loads(out.read_text())
    verdicts = {t["id"]: t["verdict"] for t in record["tasks"]}
    assert verdicts[SOLVED] == verdicts[INFEASIBLE] == "passable here", done.stdout + done.stderr
    assert verdicts["lazy-idle"].startswith("not proved: solve pass (score 1); idle pass (score 1)")
    assert verdicts["no-oracle"] == "no oracle" and verdicts["not-here"] == "not runnable"
    assert record["passable"] == sorted([SOLVED, INFEASIBLE])
    assert record["counts"]["by_domain"]["os"] == {"runnable": 4, "with_oracle": 3, "passable": 2}
    assert done.returncode == 2  # lazy-idle is not proved (NOT_PASSED)
    assert "2 of 3 runnable task(s) with an oracle pair passable here" in done.stdout
    assert (tmp_path / "runs" / "check.solve.json").is_file() and (tmp_path / "runs" / "check.idle.json").is_file()

    listed = run_cli("tasks", "list", str(suite), "--verified", str(out), "--json")
    rows = {r["id"]: r for r in json.loads(listed.stdout)["tasks"]}
    assert sorted(i for i, r in rows.items() if r["verified_passable"]) == sorted([SOLVED, INFEASIBLE])
    text = run_cli("tasks", "list", str(suite), "--verified", str(out)).stdout
    assert f"{SOLVED}  (" in text and "(verified passable)" in text and "2 verified passable" in text


def test_tasks_check_refuses_an_oracle_folder_without_its_scripts(tmp_path: Path) -> None:
    (tmp_path / "oracles" / "solve").mkdir(parents=True)
    done = run_cli("tasks", "check", str(REAL / "examples" / "os"), "--oracles", str(tmp_path / "oracles"),
                   "--output", str(tmp_path / "c.json"))
    assert done.returncode == 1 and "has no idle or fail/ folder of idle scripts" in done.stderr
    assert "Traceback" not in done.stderr
