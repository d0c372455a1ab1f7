"""Tasks from OSWorld's JSON (read as is) and Conway's task files; suites as a folder, a list of files, an index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from conway.errors import UserError
from conway.tasks.task import TaskFileError, load_suite, parse_evaluator, read_task_file

OSWORLD = REPO / "tests" / "data" / "osworld"
EXAMPLES = OSWORLD / "examples"
RENAME = EXAMPLES / "os" / "e0df059f-28a6-4169-924f-b9623e7184cc.json"


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def task(task_id: str = "t1", **kw) -> dict:
    return {"id": task_id, "instruction": "do it", "config": [],
            "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "echo hi"},
                          "expected": {"type": "rule", "rules": {"expected": "hi\n"}}}, **kw}


# --- one OSWorld task, unmodified -------------------------------------------------------------------------------


def test_a_real_osworld_task_reads_into_typed_fields_and_keeps_the_rest_raw():
    t = read_task_file(RENAME, domain="os")
    assert t.id == "e0df059f-28a6-4169-924f-b9623e7184cc" and t.format == "osworld" and t.domain == "os"
    assert t.instruction.startswith("I have a directory named")
    assert [s["type"] for s in t.config] == ["execute", "execute"]
    assert t.evaluator.funcs == ("exact_match",) and t.evaluator.conj == "and"
    assert t.evaluator.results[0]["type"] == "vm_command_line"
    assert t.evaluator.expected[0]["rules"] == {"expected": "Directory exists.\n"}
    assert t.evaluator.options == ({},) and t.evaluator.postconfig == ()
    assert t.related_apps == ("os",)
    assert t.raw["snapshot"] == "os" and t.raw["source"].startswith("https://help.ubuntu.com")
    assert "instruction" not in t.raw and "evaluator" not in t.raw


def test_several_metrics_keep_one_entry_each_and_their_conj():
    t = read_task_file(EXAMPLES / "os" / "3ce045a0-877b-42aa-8d2c-b4a863336ab8.json")
    assert t.evaluator.funcs == ("check_include_exclude", "check_include_exclude")
    assert t.evaluator.conj == "or" and len(t.evaluator.results) == len(t.evaluator.expected) == 2
    assert t.evaluator.options == ({}, {})


def test_infeasible_tasks_need_no_result_and_no_config_key():
    t = read_task_file(EXAMPLES / "os" / "c288e301-e626-4b98-a1ab-159dcb162af5.json")
    assert t.evaluator.infeasible and t.config == () and t.evaluator.expected is None


def test_postconfig_steps_are_read_in_order():
    t = read_task_file(EXAMPLES / "multi_apps" / "e1fc0df3-c8b9-4ee7-864c-d0b590d3aa56.json")
    assert [s["parameters"]["stdout"] for s in t.evaluator.postconfig] == ["grep.out", "apt.out"]
    assert t.evaluator.getter_types() == ["cache_file", "cache_file", "rule", "rule"]


def test_per_task_budgets_are_read_when_given(tmp_path):
    t = read_task_file(write(tmp_path / "b.json", task(max_steps=15, max_seconds=90.5)))
    assert (t.max_steps, t.max_seconds) == (15, 90.5)
    assert read_task_file(write(tmp_path / "c.json", task())).max_steps is None
    with pytest.raises(TaskFileError, match="max_steps"):
        read_task_file(write(tmp_path / "d.json", task(max_steps=0)))


@pytest.mark.parametrize("evaluator,reason", [
    ({"result": {"type": "vm_file"}}, "evaluator.func"),
    ({"func": ["a", "b"], "result": {"type": "vm_file"}}, "evaluator.result must be a list of 2"),
    ({"func": "a", "result": {"type": "x"}, "conj": "xor"}, "conj must be `and` or `or`"),
    ({"func": "exact_match"}, "no `result` getter"),
    ({"func": "a", "result": {"path": "x"}}, "getter mapping with a `type`"),
    ({"func": ["a", "b"], "result": [{"type": "x"}, {"type": "y"}], "options": {"k": 1}}, "options must be a list of 2"),
    ({"func": "a", "result": {"type": "x"}, "postconfig": [{"parameters": {}}]}, "postconfig step 1"),
])
def test_a_malformed_evaluator_is_one_reason(evaluator, reason):
    with pytest.raises(TaskFileError, match=reason):
        parse_evaluator(evaluator)


@pytest.mark.parametrize("content,reason", [
    ("{not json", "malformed JSON"),
    ("[1, 2]", "not an object"),
    (json.dumps({"name": "settings"}), "not a task: no `id`, `instruction` or `evaluator`"),
    (json.dumps({"instruction": "x", "evaluator": {"func": "infeasible"}}), "`id` must be a non-empty string"),
    (json.dumps({"id": "x", "instruction": "y"}), "no `evaluator`"),
    (json.dumps({**task(), "config": {"type": "execute"}}), "config must be a list"),
    (json.dumps({**task(), "related_apps": "os"}), "related_apps"),
    # the id names the task's folder of the cache: `../escape` read its expected file from beside the cache
    (json.dumps({**task(), "id": "../escape"}), r"task id '../escape' cannot name a folder"),
    (json.dumps({**task(), "id": ".hidden"}), r"task id '.hidden' cannot name a folder"),
])
def test_a_malformed_task_file_is_one_reason(tmp_path, content, reason):
    with pytest.raises(TaskFileError, match=reason):
        read_task_file(write(tmp_path / "bad.json", content))


def test_a_directory_and_non_utf8_are_reasons_too(tmp_path):
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(TaskFileError, match="is a directory"):
        read_task_file(tmp_path / "dir.json")
    (tmp_path / "latin.json").write_bytes(b'{"id": "\xe9"}')
    with pytest.raises(TaskFileError, match="not UTF-8"):
        read_task_file(tmp_path / "latin.json")


# --- Conway's own task files ------------------------------------------------------------------------------------


def test_a_conway_task_file_is_parsed_by_task_files_and_its_criteria_are_its_checker():
    t = read_task_file(REPO / "evals" / "tasks" / "disposable-note.md")
    assert t.format == "conway" and t.id == "disposable-note" and t.spec is not None
    assert t.evaluator.criteria == tuple(t.spec.criteria) and t.evaluator.criteria
    assert t.instruction == t.spec.prompt() and "Acceptance criteria" in t.instruction


def test_a_malformed_conway_task_file_gives_task_files_reason(tmp_path):
    path = write(tmp_path / "bad.md", "---\nacceptance:\n  - file_smells: x\n---\nDo it.\n")
    with pytest.raises(TaskFileError, match="unknown check kind 'file_smells'"):
        read_task_file(path)


# --- suites -----------------------------------------------------------------------------------------------------


def test_a_folder_in_osworlds_layout_gives_each_task_its_domain():
    suite = load_suite(EXAMPLES)
    assert not suite.problems
    assert {t.domain for t in suite.tasks} == {"os", "vs_code", "multi_apps"}
    assert len(suite.tasks) == 6


def test_a_folder_leaves_out_readmes_and_indexes_and_reads_markdown_tasks(tmp_path):
    shutil.copytree(OSWORLD, tmp_path / "ev")
    write(tmp_path / "ev" / "mine" / "note.md", "---\nacceptance:\n  - file_exists: out.txt\n---\nWrite out.txt.\n")
    suite = load_suite(tmp_path / "ev")
    assert not suite.problems  # README.md and test_fixtures.json are no tasks
    assert len(suite.tasks) == 7
    assert next(t for t in suite.tasks if t.format == "conway").domain == "mine"


def test_an_index_resolves_ids_to_examples_domain_id_json():
    suite = load_suite(OSWORLD / "test_fixtures.json")
    assert not suite.problems and len(suite.tasks) == 6
    by_id = {t.id: t for t in suite.tasks}
    assert by_id["276cc624-87ea-4f08-ab93-f770e3790175"].domain == "vs_code"


def test_a_list_of_files_loads_each_in_order():
    files = sorted((EXAMPLES / "os").glob("*.json"))[:2]
    suite = load_suite(files)
    assert [t.source for t in suite.tasks] == files and [t.domain for t in suite.tasks] == ["os", "os"]


def test_problems_are_one_line_each_and_the_suite_goes_on(tmp_path):
    root = tmp_path / "ev"
    write(root / "examples" / "os" / "good.json", task("good"))
    write(root / "examples" / "os" / "broken.json", "{nope")
    write(root / "examples" / "os" / "again.json", task("good"))
    write(root / "test_x.json", {"os": ["good", "gone", "../escape"]})
    suite = load_suite([root / "test_x.json", root / "examples"])
    assert [t.id for t in suite.tasks] == ["good"]
    lines = [p.line() for p in suite.problems]
    assert any("gone.json" in s and "listed in the index under os but its file is missing" in s for s in lines)
    assert any("'../escape' is not a task id" in s for s in lines)
    assert any("broken.json: malformed JSON" in s for s in lines)
    assert sum("duplicate task id good" in s for s in lines) == 2  # again.json, and good.json read a second time
    assert all("\n" not in s for s in lines)


@pytest.mark.parametrize("content,reason", [("{bad", "malformed JSON"), ('["a"]', "not an index")])
def test_a_malformed_index_is_a_problem(tmp_path, content, reason):
    suite = load_suite(write(tmp_path / "test_bad.json", content))
    assert not suite.tasks and reason in suite.problems[0].reason


def test_a_missing_suite_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_suite(tmp_path / "nowhere")
    with pytest.raises(UserError, match="no suite given"):
        load_suite([])
