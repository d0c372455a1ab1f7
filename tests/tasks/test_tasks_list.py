"""`conway tasks list`: each task runnable or not with every reason, load problems apart, counts, --json, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from conway.cli.main import main

# what a listing says besides the extras: every extra counts as installed (those reasons are tested by
# saying what is missing), so these pass with only `dev` installed
pytestmark = pytest.mark.usefixtures("every_extra")

INDEX = REPO / "tests" / "data" / "osworld" / "test_fixtures.json"
GOLD = "https://files.example.org/cache/os/gold.txt"


def task(task_id: str, **kw) -> dict:
    ev = {"func": "exact_match", "result": {"type": "vm_command_line", "command": "true"},
          "expected": {"type": "rule", "rules": {"expected": ""}}}
    return {"id": task_id, "instruction": "x", "related_apps": ["os"], "evaluator": ev, **kw}


@pytest.fixture
def suite(tmp_path) -> Path:
    root = tmp_path / "suite" / "examples" / "os"
    root.mkdir(parents=True)
    (root / "fine.json").write_text(json.dumps(task("fine")))
    (root / "drive.json").write_text(json.dumps(task("drive", config=[{"type": "googledrive", "parameters": {}}])))
    gold = task("gold")
    gold["evaluator"] = {"func": "compare_text_file", "result": {"type": "vm_file", "path": "~/a", "dest": "a"},
                         "expected": {"type": "cloud_file", "path": GOLD, "dest": "gold.txt"}}
    (root / "gold.json").write_text(json.dumps(gold))
    (root / "broken.json").write_text("{")
    return tmp_path / "suite"


def test_the_listing_names_every_reason_and_the_problems(suite, capsys):
    code = main(["tasks", "list", str(suite)])
    out = capsys.readouterr().out
    assert code == 2
    assert "runnable      os/fine" in out
    assert "not runnable  os/drive" in out
    assert ("    - setup step type googledrive needs a Google Drive account (a third party's, which Conway never "
            "holds)") in out
    assert f"    - cloud file {GOLD} needs the local cache: give --cache DIR" in out
    assert "not loaded (1):" in out and "broken.json: malformed JSON" in out
    assert out.rstrip().endswith("3 task(s): 1 runnable, 2 not runnable; 1 file(s) not loaded (no --cache given)")


def test_the_cache_is_looked_up_in_osworlds_layout(suite, tmp_path, capsys):
    cache = tmp_path / "cache"
    (cache / "gold").mkdir(parents=True)
    (cache / "gold" / "gold.txt").write_text("gold")
    main(["tasks", "list", str(suite), "--cache", str(cache), "--json"])
    record = json.loads(capsys.readouterr().out)
    rows = {r["id"]: r for r in record["tasks"]}
    assert rows["gold"]["runnable"] and rows["gold"]["reasons"] == []
    assert record["cache"] == str(cache)


def test_json_for_scripts(suite, capsys):
    code = main(["tasks", "list", str(suite), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 2 and record["schema"] == "conway-task-list/1"
    assert record["counts"] == {"tasks": 3, "runnable": 1, "not_runnable": 2, "verified_passable": 0, "problems": 1}
    rows = {r["id"]: r for r in record["tasks"]}
    assert rows["fine"] == {"id": "fine", "source": str(suite / "examples/os/fine.json"), "format": "osworld",
                            "domain": "os", "related_apps": ["os"], "runnable": True, "reasons": [],
                            "verified_passable": False}
    assert rows["drive"]["reasons"] == [
        "setup step type googledrive needs a Google Drive account (a third party's, which Conway never holds)"]
    assert record["problems"][0].endswith("broken.json: malformed JSON: Expecting property name enclosed in double "
                                          "quotes (line 1, column 2)")


def test_all_runnable_exits_0(tmp_path, capsys):
    (tmp_path / "fine.json").write_text(json.dumps(task("fine")))
    assert main(["tasks", "list", str(tmp_path / "fine.json")]) == 0
    assert "1 task(s): 1 runnable, 0 not runnable" in capsys.readouterr().out


def test_real_osworld_files_through_their_index(capsys):
    main(["tasks", "list", str(INDEX), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert record["counts"]["tasks"] == 6 and record["counts"]["problems"] == 0
    domains = {r["id"]: r["domain"] for r in record["tasks"]}
    assert domains["e1fc0df3-c8b9-4ee7-864c-d0b590d3aa56"] == "multi_apps"
    rows = {r["id"]: r for r in record["tasks"]}
    assert rows["b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"]["runnable"]  # infeasible, no setup: always runnable


@pytest.mark.parametrize("make,message", [
    (lambda d: [str(d / "nowhere")], "does not exist"),
    (lambda d: [str(d / "bad.json")], "bad.json: malformed JSON"),
    (lambda d: [str(d / "ok.json"), "--cache", str(d / "ok.json")], "is a file; give the cache folder"),
    (lambda d: [str(d / "ok.json"), "--cache", str(d / "none")], "cache folder"),
    (lambda d: [str(d / "empty")], "holds no task files"),
])
def test_bad_input_is_one_line_and_exit_1(tmp_path, make, message):
    (tmp_path / "bad.json").write_text('{"id": ')
    (tmp_path / "ok.json").write_text(json.dumps(task("ok")))
    (tmp_path / "empty").mkdir()
    r = run_cli("tasks", "list", *make(tmp_path))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("conway: error: ") and message in r.stderr


def test_help_teaches_the_forms_the_reasons_and_the_exit_codes():
    r = run_cli("tasks", "list", "--help")
    assert r.returncode == 0
    for text in ("test_*.json index", "--cache DIR", "live URL", "Exit 0 every task can run here", "conway tasks list"):
        assert text in r.stdout
    r = run_cli("tasks")
    assert r.returncode == 1 and "SUBCOMMAND" in r.stderr
