"""A `tasks` report's numbers, its text and its pages, from case records (no desktop needed); the shipped
suite's coverage and its builder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.extras import need_extra

from conway.evals.report import Report
from conway.evals.report_render import render_report
from conway.evals.stats import wilson
from conway.evals.tasks_summary import DIFFERENCES_FROM_OSWORLD, summarize, verdict
from conway.sandbox.setup import STEP_TYPES
from conway.store.home import Home
from conway.tasks.cache import cloud_path, download_path
from conway.tasks.task import load_suite
from conway.view.command import build_site

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "evals" / "osworld_local"


def case(i: int, task: str, outcome: str, **fields) -> dict:
    base = {"index": i, "task": task, "domain": fields.pop("domain", "os"), "related_apps": fields.pop("apps", ["os"]),
            "instruction": f"do {task}", "outcome": outcome}
    if outcome in ("pass", "fail"):
        score = 1.0 if outcome == "pass" else fields.pop("score", 0.0)
        base.update(score=score, verified=score == 1.0, steps=3, wall_s=2.0, session=f"s-{task}",
                    view=f"conway --home /h/{task} view --session s-{task}", stop_reason="finish DONE",
                    declared={"status": fields.pop("said", "DONE"), "message": "", "by": "model"},
                    metrics=[{"func": "exact_match", "score": score}],
                    cost={"decisions": 3, "prompt_tokens": 1000, "cached_tokens": 600, "generated_tokens": 30,
                          "model_s": 1.5, "wall_s": 2.0})
    return {**base, **fields}


CASES = [
    case(0, "a", "pass"), case(1, "b", "pass", domain="chrome", apps=["chrome", "os"]),
    case(2, "c", "fail", score=0.5), case(3, "d", "fail", said="FAIL"),
    case(4, "e", "error", error="setup: SetupError: setup step 1 (launch): the application never opened its window"),
    case(5, "f", "not-runnable", reasons=["application gimp is not installed (gimp is not on PATH)"]),
    case(6, "g", "malformed", error="malformed JSON: Expecting value (line 1, column 1)"),
]


def test_the_rate_is_over_scored_tasks_only_with_its_wilson_interval() -> None:
    s = summarize(CASES, 10.0)
    assert (s["tasks"], s["scored"], s["passed"], s["failed"]) == (7, 4, 2, 2)
    assert (s["errors"], s["not_runnable"], s["malformed"]) == (1, 1, 1)
    lo, hi = wilson(2, 4)
    assert s["success"]["hit_rate"] == 0.5 and s["success"]["hit_rate_ci95"] == [round(lo, 4), round(hi, 4)]
    assert s["success"]["mean_score"] == round((1 + 1 + 0.5 + 0) / 4, 4)  # a partial score stays a failure
    assert s["by_domain"]["os"]["n"] == 3 and s["by_domain"]["chrome"]["hits"] == 1
    assert s["by_app"]["os"]["n"] == 4 and s["by_app"]["chrome"]["n"] == 1  # a task counts for each of its apps
    assert s["declared"] == {"DONE": 3, "FAIL": 1, "nothing": 0} and s["declared_done_but_failed"] == 1
    assert s["cost"] == {"decisions": 12, "summaries": 0, "prompt_tokens": 4000, "cached_tokens": 2400,
                         "generated_tokens": 120, "model_s": 6.0, "wall_s": 8.0}
    assert verdict(CASES, s) == (2, "fail")


def test_the_verdict() -> None:
    passed = [case(0, "a", "pass"), case(1, "f", "not-runnable", reasons=["x"])]
    assert verdict(passed, summarize(passed, 1.0)) == (0, "pass")  # not runnable is counted apart, not a failure
    broken = [case(0, "a", "pass"), case(1, "e", "error", error="x")]
    assert verdict(broken, summarize(broken, 1.0))[0] == 2
    none = [case(0, "f", "not-runnable", reasons=["x"])]
    s = summarize(none, 1.0)
    assert verdict(none, s) == (2, "nothing ran") and "no task ran" in s["outcome"]


def test_timed_out_tasks_are_counted_whatever_their_outcome_and_shown() -> None:
    from conway.evals.tasks_summary import render_tasks
    from conway.view.report_tasks import card_body, summary_rows

    cases = [case(0, "a", "pass", timed_out=True, elapsed_s=7.5, budget={"task_timeout_s": 7.0}),
             case(1, "b", "error", error="run: RuntimeError: timed out after 7 s and did not stop", timed_out=True,
                  elapsed_s=9.0), case(2, "c", "fail")]
    s = summarize(cases, 1.0)
    assert (s["timed_out"], s["passed"], s["failed"], s["errors"], s["scored"]) == (2, 1, 1, 1, 2)
    assert verdict(cases, s) == (2, "fail")  # a timed-out pass is a pass; the error and the fail decide
    text = "\n".join(render_tasks(s, cases, {}))
    assert "timed out: 2 task(s)" in text and "timed out after 7.5 s; exact_match 1" in text
    older = {k: v for k, v in summarize(CASES, 1.0).items() if k != "timed_out"}  # a report from before
    assert "timed out" not in "\n".join(render_tasks(older, CASES, {}))
    assert dict(summary_rows(s))["timed out"].startswith("2 task(s)") and "timed out" not in dict(summary_rows(older))
    _, body = card_body(cases[0], (1280, 800), None, "", "")
    assert "stopped after 7.5 s (limit 7 s)" in body
    assert "timed out" not in card_body(cases[2], (1280, 800), None, "", "")[1]


@pytest.fixture
def report(tmp_path) -> Path:
    out = tmp_path / "tasks.json"
    r = Report("tasks", out, argv=["tasks", "run", "suite", "--output", str(out)], config=None,
               parameters={"suite": ["suite"]})
    for c in CASES:
        r.add_case(c)
    r.finish(status="fail", exit_code=2, summary=summarize(CASES, 10.0),
             environment={"apps": [{"name": "lxterminal", "path": "/usr/bin/lxterminal", "version": "0.4.0-2"}],
                          "display_size": "1280x800"},
             differences_from_osworld=list(DIFFERENCES_FROM_OSWORLD))
    return out


def test_conway_report_prints_the_numbers_each_task_and_the_differences(report) -> None:
    text = render_report(report)
    assert "passed 2/4 scored task(s) = 50.0%" in text and "errors 1, not runnable 1, malformed 1" in text
    assert "DONE but not verified: 1" in text and "4,000 prompt tokens (2,400 cached)" in text
    assert "by domain: chrome 1/1; os 1/3" in text and "lxterminal 0.4.0-2" in text
    assert "tokens in/out" in text and "1,000/30" in text  # each task's own cost, beside its outcome
    for line in DIFFERENCES_FROM_OSWORLD:
        assert line in text
    assert "application gimp is not installed" in text and "never opened its window" in text


def test_conway_view_draws_a_card_per_task(report, tmp_path) -> None:
    site = build_site(Home(tmp_path / "home"), report=str(report))
    page = site.get("index.html").decode()
    for c in CASES:
        assert f'data-outcome="{c["outcome"]}"' in page
    assert "conway --home /h/a view --session s-a" in page  # the link to the task's session
    assert "score 1 by the task&#x27;s checker" in page and "the model&#x27;s own word" in page
    assert "application gimp is not installed" in page and "malformed JSON" in page
    assert "differs from OSWorld" in page and "1280x800" in page
    data = site.get("data.js").decode()
    assert '"outcomes":["error","fail","pass","not-runnable","malformed"]' in data


# --- the shipped suite --------------------------------------------------------------------------

ISSUE_GETTERS = {"vm_file", "cloud_file", "cache_file", "rule", "vm_command_line", "vm_command_error",
                 "list_directory", "vm_terminal_output"}
ISSUE_METRICS = {"exact_match", "check_include_exclude", "match_in_list", "check_list", "check_direct_json_object",
                 "compare_text_file", "compare_csv", "compare_table", "compare_docx_files", "compare_pptx_files",
                 "check_json_settings", "fuzzy_match", "literal_match", "infeasible"}


def test_the_shipped_suite_covers_every_setup_step_getter_and_metric() -> None:
    suite = load_suite(SUITE)
    assert not suite.problems and len(suite.tasks) >= 20
    steps = {s["type"] for t in suite.tasks for s in (*t.config, *t.evaluator.postconfig)}
    getters = {g["type"] for t in suite.tasks for g in (*t.evaluator.results, *(t.evaluator.expected or ())) if g}
    metrics = {f for t in suite.tasks for f in t.evaluator.funcs}
    # the browser's and the window manager's steps are tested on real Chromium and windows in their own tests
    # (tests/tasks/test_devtools_chromium.py, tests/sandbox/test_setup_steps_more.py), not yet by a shipped task
    assert steps == set(STEP_TYPES) - {"close_window", "chrome_close_tabs", "update_browse_history"}
    assert ISSUE_GETTERS <= getters and ISSUE_METRICS <= metrics
    assert any(g.get("multi") for t in suite.tasks for g in t.evaluator.results if g)
    assert any(len(t.evaluator.funcs) > 1 for t in suite.tasks)  # conj
    indexed = load_suite(SUITE / "test_all.json")  # OSWorld's index form names the same tasks
    assert sorted(t.id for t in indexed.tasks) == sorted(t.id for t in suite.tasks)
    for t in suite.tasks:
        for way in ("pass", "fail"):
            assert (SUITE / "mock" / way / f"{t.id}.yaml").is_file(), (way, t.id)


def test_its_cache_is_in_osworlds_layout() -> None:
    cache = SUITE / "cache"
    for t in load_suite(SUITE).tasks:
        for s in t.config:
            for f in s["parameters"].get("files", []) if s["type"] == "download" else []:
                assert download_path(cache, t.id, f["url"], f["path"]).is_file(), (t.id, f["url"])
        for g in t.evaluator.expected or ():
            if g and g["type"] == "cloud_file":
                assert cloud_path(cache, t.id, g["dest"]).is_file(), (t.id, g["dest"])
    assert sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) < 300_000  # small files: documents of a few paragraphs


def test_the_builder_writes_what_is_shipped(tmp_path, monkeypatch) -> None:
    for module in ("openpyxl", "docx", "pptx"):  # the builder writes the suite's office files with them
        need_extra("tasks", module)
    monkeypatch.syspath_prepend(str(REPO))
    sys.modules.pop("scripts.build.build_osworld_local", None)
    from scripts.build import build_osworld_local as builder

    suite = builder.Suite()
    builder.build(suite)
    builder.write(suite, tmp_path)
    for path in sorted((tmp_path).rglob("*")):
        shipped = SUITE / path.relative_to(tmp_path)
        assert shipped.exists(), shipped
        if path.suffix in (".json", ".yaml", ".txt", ".csv"):  # office files carry the time they were saved
            assert path.read_bytes() == shipped.read_bytes(), shipped
    made = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    shipped_files = {p.relative_to(SUITE) for p in SUITE.rglob("*") if p.is_file() and p.name != "README.md"}
    assert made == shipped_files
    assert json.loads((tmp_path / "test_all.json").read_text()) == json.loads((SUITE / "test_all.json").read_text())


def test_tasks_run_help_and_overrides_after_the_suite(tmp_path, capsys) -> None:
    import argparse

    from conway.cli.main import main
    from conway.cli.tasks import split_overrides

    with pytest.raises(SystemExit):
        main(["tasks", "run", "--help"])
    help_text = capsys.readouterr().out
    for words in ("--mock-scripts DIR", "--cache DIR", "disposable desktop", "marked partial", ".tasks/"):
        assert words in help_text
    (tmp_path / "a=b").mkdir()  # a suite folder whose name looks like an override is still a suite
    args = argparse.Namespace(suite=[str(SUITE), "policy=mock", "agent.max_steps=3", str(tmp_path / "a=b")])
    split_overrides(args)
    assert args.suite == [str(SUITE), str(tmp_path / "a=b")] and args.overrides == ["policy=mock", "agent.max_steps=3"]
    with pytest.raises(Exception, match="name the suite"):
        split_overrides(argparse.Namespace(suite=["policy=mock"]))


def test_a_task_card_says_why_it_has_no_screenshot_and_keeps_its_keys_apart(report, tmp_path) -> None:
    import re
    site = build_site(Home(tmp_path / "home"), report=str(report))
    page = site.get("index.html").decode()
    text = re.sub(r"<[^>]+>", "", page)
    assert "datasets folder" not in text  # a task's card has no datasets folder behind it
    assert "no screenshot was kept for this case" in text  # the ran tasks of CASES keep no final screen
    assert "not runnable application gimp is not installed" in text, "key and reason glued"
    assert "verified score 1" in text


def test_a_run_with_network_says_the_sandbox_shared_it():
    from conway.evals.tasks_summary import NETWORK_SHARED, differences
    assert differences() == list(DIFFERENCES_FROM_OSWORLD)
    shared = differences(network=True)
    assert NETWORK_SHARED in shared and not any(line.startswith("the network is off") for line in shared)
    assert len(shared) == len(DIFFERENCES_FROM_OSWORLD)


def test_a_run_of_tasks_naming_no_application_says_so_beside_the_differences() -> None:
    # the viewer showed "apps —" beside a difference saying the applications are "listed above"
    from conway.evals.tasks_summary import NO_APPS, differences
    from conway.view.report_tasks import environment_rows

    rows = dict(environment_rows({"environment": {"apps": [], "display_size": "1280x800"},
                                  "differences_from_osworld": differences()}))
    assert rows["apps"] == NO_APPS and "listed above" in rows["differs from OSWorld's VM"]
