"""OSWorld-format tasks scored by the document and table checkers through the real evaluator and getters.

The task files are shaped as OSWorld's own (a workbook and its CSV export pulled
with `vm_file` `multi`, the gold pair from the cache by `cloud_file`); the files
are written here with openpyxl and python-docx, as an office suite would save them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.extras import need_extra
from helpers.task_env import TestTaskEnv

openpyxl = need_extra("tasks", "openpyxl")
docx = need_extra("tasks", "docx")

from conway.tasks.cache import cloud_path  # noqa: E402
from conway.tasks.evaluate import evaluate  # noqa: E402
from conway.tasks.runnable import why_not_runnable  # noqa: E402
from conway.tasks.task import parse_osworld  # noqa: E402

URL = "https://files.example.org/cache/libreoffice_calc/t/"


@pytest.fixture
def env(tmp_path) -> TestTaskEnv:
    home = tmp_path / "home"
    home.mkdir()
    return TestTaskEnv(home=home, task_id="t", cache_dir=tmp_path / "cache")


def workbook(path: Path, ids: list[str]) -> None:
    wb = openpyxl.Workbook()
    wb.active.title = "Sheet1"
    wb.active.append(["Id"])
    for i in ids:
        wb.active.append([i])
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    path.with_name(f"{path.stem}-Sheet1.csv").write_text("Id\n" + "".join(f"{i}\n" for i in ids))


def table_task(rules: list[dict]):
    return parse_osworld({"id": "t", "instruction": "Pad the ids to 7 digits.", "related_apps": ["libreoffice_calc"],
                          "evaluator": {
                              "func": "compare_table",
                              "result": {"type": "vm_file", "multi": True,
                                         "path": ["/home/user/ids.xlsx", "/home/user/ids-Sheet1.csv"],
                                         "dest": ["ids.xlsx", "ids-Sheet1.csv"]},
                              "expected": {"type": "cloud_file", "multi": True,
                                           "path": [URL + "ids_gold.xlsx", URL + "ids_gold.csv"],
                                           "dest": ["ids_gold.xlsx", "ids_gold-Sheet1.csv"]},
                              "options": {"rules": rules}}}, Path("t.json"))


PRINT = [{"type": "sheet_print", "sheet_idx0": 0, "sheet_idx1": "EI0"}]


def test_a_table_task_scores_1_when_the_agent_did_it_and_0_when_not(env):
    workbook(cloud_path(env.cache_dir, "t", "ids_gold.xlsx"), ["0000012", "0000345"])
    task = table_task(PRINT)
    workbook(env.home / "ids.xlsx", ["0000012", "0000345"])
    done = evaluate(task, env, declared_fail=False)
    assert done.score == 1.0, done
    workbook(env.home / "ids.xlsx", ["12", "345"])
    assert evaluate(task, env, declared_fail=False).score == 0.0


def test_a_missing_export_is_the_metrics_one_line_error(env):
    workbook(cloud_path(env.cache_dir, "t", "ids_gold.xlsx"), ["1"])
    workbook(env.home / "ids.xlsx", ["1"])
    (env.home / "ids-Sheet1.csv").unlink()
    done = evaluate(table_task(PRINT), env, declared_fail=False)
    assert done.score == 0.0
    (metric,) = done.metrics
    assert "ids-Sheet1.csv" in metric.error and "\n" not in metric.error


def test_a_rule_not_implemented_makes_the_task_not_runnable_instead_of_scored(env):
    task = table_task([{"type": "sparkline", "sheet_idx0": 0, "sheet_idx1": "EI0"}])
    reasons = why_not_runnable(task, cache_dir=env.cache_dir, step_types=set(), installed=lambda _: True)
    assert "metric compare_table: not supported here: rules[0].type=sparkline" in reasons


def test_a_writer_task_scored_by_compare_docx_files(env):
    def save(path: Path, *paragraphs: str) -> None:
        d = docx.Document()
        for p in paragraphs:
            d.add_paragraph(p)
        path.parent.mkdir(parents=True, exist_ok=True)
        d.save(path)
    task = parse_osworld({"id": "t", "instruction": "Capitalise the title.", "evaluator": {
        "func": "compare_docx_files",
        "result": {"type": "vm_file", "path": "/home/user/notes.docx", "dest": "notes.docx"},
        "expected": {"type": "cloud_file", "path": URL + "notes_gold.docx", "dest": "notes_gold.docx"},
        "options": {"ignore_blanks": False}}}, Path("t.json"))
    save(cloud_path(env.cache_dir, "t", "notes_gold.docx"), "My Title", "Body text.")
    save(env.home / "notes.docx", "My Title", "Body text.")
    assert evaluate(task, env, declared_fail=False).score == 1.0
    save(env.home / "notes.docx", "my title", "Body text.")
    assert evaluate(task, env, declared_fail=False).score == 0.0
