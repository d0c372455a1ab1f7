"""What a new user hit in `conway tasks` (issue 32 §3): each task's fresh mock, resuming a report, what a
missing extra or cache need makes not runnable. No desktop needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.tiny_vlm import wait_context

from conway.config import ConwayConfig
from conway.evals.tasks_run import TasksSuite
from conway.policies.mock import MockPolicy, MockScript, MockStep

# what a listing says besides the extras: every extra counts as installed (those reasons are tested by
# saying what is missing), so these pass with only `dev` installed
pytestmark = pytest.mark.usefixtures("every_extra")

FINISH = {"type": "finish", "status": "DONE", "message": "done"}


def _suite(tmp_path: Path) -> TasksSuite:
    return TasksSuite(ConwayConfig(), tmp_path / "r.tasks", tmp_path, total=2)


def test_tasks_run_mock_starts_each_task_with_a_fresh_script(tmp_path) -> None:
    """`tasks run --mock` without --mock-scripts: the second task gets the script from its first step, not
    "script finished; idling" until its time budget runs out."""
    shared = MockPolicy(MockScript(steps=[MockStep(action={"type": "wait"}), MockStep(action=FINISH)]))
    suite, ctx = _suite(tmp_path), wait_context((64, 48))
    first = suite._policy_for("one", shared)
    kinds = [first.decide(ctx).actions[0].type for _ in range(2)]
    second = suite._policy_for("two", shared)
    again = [second.decide(ctx).actions[0].type for _ in range(2)]
    assert kinds == again == ["wait", "finish"]


def _not_runnable_suite(root: Path) -> Path:
    import json

    folder = root / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    for name in ("a", "b", "c"):  # an application not installed here: never started, no desktop needed
        (folder / f"{name}.json").write_text(json.dumps({
            "id": name, "instruction": "x", "related_apps": ["conway-no-such-app"], "config": [],
            "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "true"},
                          "expected": {"type": "rule", "rules": {"expected": ""}}}}))
    return root / "suite"


def test_tasks_run_resumes_a_partial_report_into_a_new_output(tmp_path) -> None:
    """`tasks run --resume OLD --output NEW` (as vision-check --resume): the finished cases are kept, not
    refused as "made with another parameters" because the new report's tasks folder has a new name."""
    import json

    from conway.evals.tasks_run import tasks_run
    from conway.store.home import Home

    suite, home, cfg = _not_runnable_suite(tmp_path), Home(tmp_path / "home"), ConwayConfig()
    old = tmp_path / "runs" / "old.json"
    old.parent.mkdir()
    kw = {"quiet": True, "policy": MockPolicy(), "say": lambda line: None}
    tasks_run(home, cfg, str(suite), output=str(old), **kw)
    data = json.loads(old.read_text())  # as Ctrl+C after the first case leaves it
    data.update(status="partial", case_positions=[0], cases=data["cases"][:1])
    data["cases"][0]["home"] = "old.tasks/01-a/home"
    old.write_text(json.dumps(data))
    new = tmp_path / "elsewhere" / "new.json"
    new.parent.mkdir()
    tasks_run(home, cfg, str(suite), output=str(new), resume=str(old), **kw)
    report = json.loads(new.read_text())
    assert report["summary"]["resumed"] == "1 case(s) kept from the resumed report"
    assert [c["task"] for c in report["cases"]] == ["a", "b", "c"]
    assert report["cases"][0]["home"] == str((old.parent / "old.tasks/01-a/home").resolve())


def _suite_of(root: Path, tasks: dict[str, dict]) -> Path:
    import json

    folder = root / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    for name, body in tasks.items():
        (folder / f"{name}.json").write_text(json.dumps({"id": name, "instruction": "x", "related_apps": ["os"],
                                                         **body}))
    return root / "suite"


EXACT = {"func": "exact_match", "result": {"type": "vm_command_line", "command": "true"},
         "expected": {"type": "rule", "rules": {"expected": ""}}}
DOCX = {"func": "compare_docx_files", "result": {"type": "vm_file", "path": "/home/user/a.docx", "dest": "a.docx"},
        "expected": {"type": "vm_file", "path": "/home/user/b.docx", "dest": "b.docx"}}


def _listing(suite: Path, capsys) -> dict:
    import json

    from conway.cli.main import main

    main(["tasks", "list", str(suite), "--json"])
    return {r["id"]: r for r in json.loads(capsys.readouterr().out)["tasks"]}


def test_tasks_list_a_missing_extra_makes_a_task_not_runnable_naming_it(tmp_path, monkeypatch, capsys) -> None:
    """Without the gui extra no task can act on its desktop; without the tasks extra a document metric cannot
    read its files: each such task is not runnable, naming the extra (never run blind, scored 0)."""
    import conway.tasks.runnable as runnable

    suite = _suite_of(tmp_path, {"plain": {"evaluator": EXACT}, "doc": {"evaluator": DOCX}})
    assert all(r["runnable"] for r in _listing(suite, capsys).values())  # this install has both extras
    monkeypatch.setattr(runnable, "_importable", lambda module: module not in {"pyautogui", "docx"})
    rows = _listing(suite, capsys)
    gui = "the gui extra is not installed (pyautogui missing: pip install 'conway[gui]')"
    assert rows["plain"]["reasons"] == [gui]
    assert rows["doc"]["reasons"] == [gui, "metric compare_docx_files: the tasks extra is not installed (docx "
                                           "missing: pip install 'conway[tasks]')"]
    monkeypatch.setattr(runnable, "_importable", lambda module: module != "docx")
    rows = _listing(suite, capsys)
    assert rows["plain"]["runnable"] and not rows["doc"]["runnable"]


def test_tasks_list_names_the_cache_a_cache_file_getter_and_a_kept_output_need(tmp_path, capsys) -> None:
    """A `cache_file` getter reads <cache>/<task>/<path>: without the cache its task is not runnable (never
    "error — expected getter cache_file"); a command step that keeps its stdout keeps it in the task's home, so
    the getter reading that needs no cache."""
    gold = {**EXACT, "func": "compare_text_file", "expected": {"type": "cache_file", "path": "gold.txt"}}
    keeps = {**EXACT, "postconfig": [{"type": "execute", "parameters": {"command": "echo keys",
                                                                          "shell": True, "stdout": "gsettings.out"}}],
             "func": "compare_text_file", "expected": {"type": "cache_file", "path": "gsettings.out"}}
    suite = _suite_of(tmp_path, {"gold": {"evaluator": gold}, "keeps": {"evaluator": keeps}})
    rows = _listing(suite, capsys)
    assert "cache file 'gold.txt' needs the local cache: give --cache DIR (OSWorld's cache layout)" \
        in rows["gold"]["reasons"]
    assert rows["keeps"]["runnable"]
    cache = tmp_path / "cache"
    cache.mkdir()
    import json

    from conway.cli.main import main

    main(["tasks", "list", str(suite), "--json", "--cache", str(cache)])
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["tasks"]}
    assert rows["keeps"]["runnable"]  # its postconfig writes the file the getter reads
    assert rows["gold"]["reasons"] == [f"cache file 'gold.txt' is missing from the cache (looked for "
                                       f"{cache / 'gold' / 'gold.txt'})"]
    (cache / "gold").mkdir()
    (cache / "gold" / "gold.txt").write_text("x")
    main(["tasks", "list", str(suite), "--json", "--cache", str(cache)])
    assert all(r["runnable"] for r in json.loads(capsys.readouterr().out)["tasks"])


def test_tasks_run_resumes_into_its_own_report_name_as_a_sweep_does(tmp_path) -> None:
    """A sweep resumes a cut cell under the cell's report name (the partial report moved aside): the tasks
    folder beside it is the resumed report's own, not "already exists; choose a new report name"."""
    import json

    from conway.evals.tasks_run import tasks_run
    from conway.store.home import Home

    suite, home, cfg = _not_runnable_suite(tmp_path), Home(tmp_path / "home"), ConwayConfig()
    out = tmp_path / "cell.json"
    kw = {"quiet": True, "policy": MockPolicy(), "say": lambda line: None}
    tasks_run(home, cfg, str(suite), output=str(out), **kw)
    (tmp_path / "cell.tasks" / "01-a" / "home").mkdir(parents=True)  # the first task's home, kept
    data = json.loads(out.read_text())
    data.update(status="partial", case_positions=[0], cases=data["cases"][:1])
    aside = tmp_path / "cell.partial-1.json"
    aside.write_text(json.dumps(data))
    out.unlink()
    tasks_run(home, cfg, str(suite), output=str(out), resume=str(aside), **kw)
    report = json.loads(out.read_text())
    assert report["summary"]["resumed"] == "1 case(s) kept from the resumed report"
    assert (tmp_path / "cell.tasks" / "01-a" / "home").is_dir()
