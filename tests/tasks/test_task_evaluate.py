"""OSWorld's evaluator rules: postconfig first, infeasible and FAIL, conj `and`/`or`, missing files, errors as lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO
from helpers.task_env import TestTaskEnv

from conway.tasks.cache import kept_output
from conway.tasks.evaluate import evaluate
from conway.tasks.task import parse_osworld, read_task_file

EXAMPLES = REPO / "tests" / "data" / "osworld" / "examples"


@pytest.fixture
def env(tmp_path) -> TestTaskEnv:
    home = tmp_path / "home"
    home.mkdir()
    return TestTaskEnv(home=home, task_id="t", cache_dir=tmp_path / "cache")


def echo(text: str) -> dict:
    return {"type": "vm_command_line", "command": ["printf", "%s", text]}


def rule(expected) -> dict:
    return {"type": "rule", "rules": {"expected": expected}}


def make(funcs, results, expected=None, conj=None, postconfig=None, options=None):
    ev = {"func": funcs, "result": results}
    for key, value in (("expected", expected), ("conj", conj), ("postconfig", postconfig), ("options", options)):
        if value is not None:
            ev[key] = value
    return parse_osworld({"id": "t", "instruction": "x", "evaluator": ev}, Path("t.json"))


# --- infeasible and FAIL ----------------------------------------------------------------------------------------


def test_an_infeasible_task_scores_1_only_on_fail(env):
    t = read_task_file(EXAMPLES / "os" / "b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa.json")
    yes = evaluate(t, env, declared_fail=True)
    assert yes.score == 1.0 and yes.declared_fail and "declared FAIL" in yes.note
    assert evaluate(t, env, declared_fail=False).score == 0.0


def test_any_other_task_scores_0_on_fail_without_running_a_metric(env):
    t = make("exact_match", echo("hi"), rule("hi"))
    assert evaluate(t, env, declared_fail=False).score == 1.0
    failed = evaluate(t, env, declared_fail=True)
    assert failed.score == 0.0 and failed.metrics == () and "declared FAIL" in failed.note


# --- conj -------------------------------------------------------------------------------------------------------


def test_and_ends_at_the_first_zero(env):
    t = make(["exact_match", "exact_match"], [echo("no"), echo("yes")], [rule("yes"), rule("yes")])
    res = evaluate(t, env, declared_fail=False)
    assert res.score == 0.0 and [m.func for m in res.metrics] == ["exact_match"]
    assert len(env.commands) == 1  # the second metric's getter never ran


def test_and_is_the_mean_when_no_metric_is_zero(env):
    t = make(["exact_match", "fuzzy_match"], [echo("yes"), echo("hello wrld")],
             [rule("yes"), rule("hello world")])
    res = evaluate(t, env, declared_fail=False)
    assert 0.5 < res.score < 1.0 and res.score == pytest.approx((1.0 + res.metrics[1].score) / 2)


def test_or_ends_at_the_first_one(env):
    t = make(["exact_match", "exact_match"], [echo("yes"), echo("no")], [rule("yes"), rule("yes")], conj="or")
    res = evaluate(t, env, declared_fail=False)
    assert res.score == 1.0 and len(res.metrics) == 1 and len(env.commands) == 1


def test_or_is_the_max_when_no_metric_is_one(env):
    t = make(["fuzzy_match", "exact_match"], [echo("hello wrld"), echo("no")], [rule("hello world"), rule("yes")],
             conj="or")
    res = evaluate(t, env, declared_fail=False)
    assert len(res.metrics) == 2 and res.score == res.metrics[0].score and 0.8 < res.score < 1.0


def test_a_real_or_task_scores_0_when_neither_setting_is_on(env):
    t = read_task_file(EXAMPLES / "os" / "3ce045a0-877b-42aa-8d2c-b4a863336ab8.json")
    res = evaluate(t, env, declared_fail=False)  # no GNOME settings here: both commands print their "No …" line
    assert res.score == 0.0 and len(res.metrics) == 2 and all(m.error is None for m in res.metrics)


# --- postconfig -------------------------------------------------------------------------------------------------


def test_postconfig_runs_before_any_getter(env):
    seen = []

    def runner(step, task_env):  # a test runner: the real setup steps are the sandbox's
        seen.append(step["type"])
        (task_env.home / "saved.txt").write_text("saved")

    t = make("exact_match", {"type": "vm_command_line", "command": "cat saved.txt", "shell": True}, rule("saved"),
             postconfig=[{"type": "sleep", "parameters": {"seconds": 0}}])
    res = evaluate(t, env, declared_fail=False, run_step=runner)
    assert seen == ["sleep"] and res.score == 1.0 and res.postconfig_errors == ()


def test_a_failing_postconfig_step_is_recorded_and_the_metrics_still_run(env):
    def runner(step, task_env):
        raise RuntimeError("window 'x' never appeared\nafter 10 s")

    t = make("exact_match", echo("hi"), rule("hi"), postconfig=[{"type": "activate_window", "parameters": {}}])
    res = evaluate(t, env, declared_fail=False, run_step=runner)
    assert res.score == 1.0
    assert res.postconfig_errors == ("postconfig step 1 (activate_window): RuntimeError: window 'x' never appeared "
                                     "after 10 s",)
    no_runner = evaluate(t, env, declared_fail=False)
    assert "no setup-step runner" in no_runner.postconfig_errors[0]


def test_a_real_task_with_postconfig_commands_and_cache_files(env):
    t = read_task_file(EXAMPLES / "multi_apps" / "e1fc0df3-c8b9-4ee7-864c-d0b590d3aa56.json")
    env.task_id = t.id

    def runner(step, task_env):  # a test runner for `command` with `stdout`: kept where the setup step keeps it
        words = [w.replace("/home/user", str(task_env.home)) for w in step["parameters"]["command"]]
        done = task_env.run(words, timeout_s=60)
        out = task_env.host_path(kept_output(step["parameters"]["stdout"]))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(done.stdout)

    res = evaluate(t, env, declared_fail=False, run_step=runner)  # no LanguageTool installed in the home
    assert res.score == 0.0 and [m.func for m in res.metrics] == ["check_list"]  # `and` stopped at the first
    ext = env.home / ".config/libreoffice/4/user/uno_packages/cache/uno_packages/x"
    ext.mkdir(parents=True)
    (ext / "description.xml").write_text("org.openoffice.languagetool.oxt languagetool\n")
    res = evaluate(t, env, declared_fail=False, run_step=runner)
    assert res.metrics[0].score == 1.0 and len(res.metrics) == 2  # the second depends on this machine's Java


# --- real tasks, unmodified -------------------------------------------------------------------------------------


def test_the_rename_task_scores_by_its_own_command(env):
    t = read_task_file(EXAMPLES / "os" / "e0df059f-28a6-4169-924f-b9623e7184cc.json")
    (env.home / "Desktop" / "todo_list_Jan_1").mkdir(parents=True)
    assert evaluate(t, env, declared_fail=False).score == 0.0
    (env.home / "Desktop" / "todo_list_Jan_1").rename(env.home / "Desktop" / "todo_list_Jan_2")
    res = evaluate(t, env, declared_fail=False)
    assert res.score == 1.0 and "Directory exists." in res.metrics[0].detail


def test_the_vs_code_settings_task_reads_the_file_from_the_home(env):
    t = read_task_file(EXAMPLES / "vs_code" / "276cc624-87ea-4f08-ab93-f770e3790175.json")
    settings = env.home / ".config" / "Code" / "User" / "settings.json"
    assert evaluate(t, env, declared_fail=False).score == 0.0  # no settings file: the metric gets None
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"editor.wordWrapColumn": 80}))
    assert evaluate(t, env, declared_fail=False).score == 0.0
    settings.write_text(json.dumps({"editor.wordWrapColumn": 50}))
    assert evaluate(t, env, declared_fail=False).score == 1.0


# --- nothing crashes the suite ----------------------------------------------------------------------------------


def test_a_missing_result_file_scores_0_under_and_and_ends_it(env):
    t = make(["exact_match", "exact_match"], [{"type": "cache_file", "path": "gone.out"}, echo("x")],
             [rule("x"), rule("x")])
    res = evaluate(t, env, declared_fail=False)
    assert res.score == 0.0 and len(res.metrics) == 1 and "result not found" in res.metrics[0].error
    assert res.note == "a result file was not found"


def test_a_missing_result_file_under_or_is_that_metrics_zero(env):
    t = make(["exact_match", "exact_match"], [{"type": "cache_file", "path": "gone.out"}, echo("x")],
             [rule("x"), rule("x")], conj="or")
    res = evaluate(t, env, declared_fail=False)
    assert res.score == 1.0 and res.metrics[0].score == 0.0 and res.metrics[0].error


def test_a_metric_that_raises_is_its_one_line_error(env, tmp_path):
    t = make("compare_text_file", echo(str(tmp_path / "gone.txt")), None)
    res = evaluate(t, env, declared_fail=False)
    [m] = res.metrics
    assert res.score == 0.0 and m.error.startswith("metric compare_text_file: TypeError") and "\n" not in m.error


def test_getter_errors_path_escapes_and_unknown_parts_are_lines(env):
    cases = {
        "vm_file": make("compare_text_file", {"type": "vm_file", "path": "/etc/passwd", "dest": "p"}, None),
        "cache_file": make("compare_text_file", {"type": "cache_file", "path": "/etc/passwd"}, None),
        "cloud_file": make("compare_text_file", {"type": "vm_file", "path": "~/a", "dest": "a"},
                           {"type": "cloud_file", "path": "https://example.org/p", "dest": "../../../etc/passwd"}),
        "unknown getter": make("exact_match", {"type": "googledrive_file"}, rule("x")),
        "unknown metric": make("compare_smells", echo("x"), None),
        "expected getter": make("exact_match", echo("x"), {"type": "rule"}),
        "options": make("exact_match", echo("x"), rule("x"), options={"bogus": 1}),
    }
    errors = {name: evaluate(t, env, declared_fail=False).metrics[0].error for name, t in cases.items()}
    assert "PathEscape" in errors["vm_file"]
    assert errors["cache_file"].startswith("result getter cache_file: PathEscape: /etc/passwd is outside the task")
    assert errors["cloud_file"].startswith("expected getter cloud_file: PathEscape: ../../../etc/passwd is outside")
    assert errors["unknown getter"] == ("result getter googledrive_file: NotImplementedError: "
                                       "getter googledrive_file is not implemented")
    assert errors["unknown metric"] == "metric compare_smells is not implemented"
    assert errors["expected getter"].startswith("expected getter rule: KeyError")
    assert errors["options"].startswith("metric exact_match: TypeError")


def test_a_metric_returning_no_number_is_an_error(env):
    t = make("odd", echo("x"), None)
    res = evaluate(t, env, declared_fail=False, metrics={"odd": lambda result: "yes"})
    assert res.score == 0.0 and "returned 'yes', not a number" in res.metrics[0].error


# --- Conway's own task files ------------------------------------------------------------------------------------


def test_a_conway_task_is_scored_by_its_criteria_through_the_environment(env, tmp_path):
    path = tmp_path / "note.md"
    path.write_text("---\nacceptance:\n  - file_contains: notes/n.md\n    text: done\n"
                    "  - command_exits_zero: test -f notes/n.md\n---\nWrite notes/n.md.\n")
    t = read_task_file(path)
    res = evaluate(t, env, declared_fail=False)
    assert res.score == 0.0 and [m.score for m in res.metrics] == [0.0, 0.0]
    (env.home / "notes").mkdir()
    (env.home / "notes" / "n.md").write_text("all done\n")
    res = evaluate(t, env, declared_fail=True)  # the model's FAIL is reported beside, the criteria decide
    assert res.score == 1.0 and res.declared_fail and [m.func for m in res.metrics] == ["file_contains",
                                                                                        "command_exits_zero"]


def test_a_conway_criterion_path_out_of_the_home_is_an_error(env, tmp_path):
    path = tmp_path / "t.md"
    path.write_text("---\nacceptance:\n  - file_exists: /etc/hostname\n---\nLook.\n")
    res = evaluate(read_task_file(path), env, declared_fail=False)
    assert res.score == 0.0 and "PathEscape" in res.metrics[0].error


# --- partial credit (Conway's extension) --------------------------------------------------------------------------


def _partial(credit, results):
    n = len(results)
    return parse_osworld({"id": "t", "instruction": "x", "evaluator": {
        "func": ["exact_match"] * n, "result": results, "expected": [rule("yes")] * n, "partial_credit": credit}},
        Path("t.json"))


def test_partial_credit_runs_every_checkpoint_and_scores_their_weighted_mean(env):
    res = evaluate(_partial(True, [echo("no"), echo("yes"), echo("yes")]), env, declared_fail=False)
    assert res.score == pytest.approx(2 / 3) and len(res.metrics) == 3 and len(env.commands) == 3
    assert "2 of 3 checkpoint(s)" in res.note
    weighted = evaluate(_partial([1, 3], [echo("yes"), echo("no")]), env, declared_fail=False)
    assert weighted.score == pytest.approx(0.25)
    missing = {"type": "vm_file", "path": "/nonexistent/file", "dest": "f"}
    assert evaluate(_partial(True, [missing, echo("yes")]), env, declared_fail=False).score == pytest.approx(0.5)
    assert evaluate(_partial(True, [echo("yes"), echo("yes")]), env, declared_fail=True).score == 0.0  # FAIL rule


@pytest.mark.parametrize("credit", [[1], [0, 0], ["a", 1], [-1, 2]])
def test_partial_credit_weights_must_be_one_non_negative_number_per_func(credit):
    from conway.tasks.task import TaskFileError

    with pytest.raises(TaskFileError, match="partial_credit"):
        _partial(credit, [echo("a"), echo("b")])


def test_an_error_is_one_line_said_one_way_everywhere():
    # two `one_line` functions said the same error two ways ("(no message)" and a cut at 300 in one only)
    import ast

    from conftest import REPO

    from conway.text.error_line import error_line

    assert error_line(ValueError()) == "ValueError"
    assert error_line(OSError("a\n  b\tc")) == "OSError: a b c"
    assert error_line(RuntimeError("x" * 400)) == "RuntimeError: " + "x" * 300 + "…"
    assert error_line(RuntimeError("x" * 400), 2000) == "RuntimeError: " + "x" * 400
    defined = [f"{p.relative_to(REPO)}" for p in (REPO / "conway").rglob("*.py")
               for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(node, ast.FunctionDef) and node.name == "one_line"]
    assert defined == []
