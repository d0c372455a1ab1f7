"""The action schema's front door: every malformed shape is an ActionProblem, never an exception.

Reached three ways a user meets it: `parse_action` itself, a raw model answer
inside `conway run`, and `conway review --action`.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from helpers.parser_test_helpers import ABS

from conway.actions import ActionProblem, _Action, parse_action
from conway.policies.families.generic import parse as parse_json
from conway.store.journal import read_journal

MALFORMED = [
    {"type": {}},
    {"type": []},
    {"type": ["click"]},
    {"type": None},
    {"type": 5},
    {"type": True},
    {"type": 1.5},
    {},
    {"type": "click", "x": {}, "y": []},
    {"type": "click", "x": 10**400, "y": 1},
    {"type": "click", "x": -10**400, "y": 1},
    {"type": "wait", "seconds": 10**400},
    {"type": "scroll", "dy": 10**400},
    {"type": "hotkey", "keys": [10**400]},
    {"type": "type", "text": {"nested": ["x"]}},
    {"type": "click", "x": float("inf"), "y": float("nan")},
    {"type": "c" * 10_000},
    {1: 2},
    [],
    None,
    "click",
]


@pytest.mark.parametrize("raw", MALFORMED, ids=lambda r: repr(r)[:40])
def test_malformed_shapes_are_problems_never_exceptions(raw) -> None:
    result = parse_action(raw)
    assert isinstance(result, ActionProblem), result
    assert result.message and len(result.message) < 600  # a 10,000-char type or a 400-digit number is not echoed


def test_the_problem_names_what_was_wrong() -> None:
    assert "dict, not a type name" in parse_action({"type": {}}).message  # type: ignore[union-attr]
    assert "list, not a type name" in parse_action({"type": []}).message  # type: ignore[union-attr]
    assert '"type" field is missing' in parse_action({}).message  # type: ignore[union-attr]
    msg = parse_action({"type": "click", "x": 10**400, "y": 1}).message  # type: ignore[union-attr]
    assert "x: a 401-digit number is not a plausible value" in msg  # 10**400 has 401 digits


@pytest.mark.parametrize("answer", ['{"type": {}}', '{"type": []}', '[{"type": {}}]',
                                    '{"action": {"type": []}}', '{"thought": "t", "action": {"type": {}}}',
                                    '{"type": "click", "x": 1, "y": ' + "9" * 400 + "}",
                                    '{"type": "click", "x": 1, "y": -' + "9" * 400 + "}",
                                    '{"type": "wait", "seconds": ' + "9" * 400 + "}",
                                    '{"type": "click", "x": 1, "y": 1' + "0" * 400 + ".5}",
                                    '{"action": "click", "bbox": [1, 2, 3, ' + "9" * 400 + "]}"])
def test_raw_model_answers_with_malformed_shapes_are_ordinary_rejections(answer: str) -> None:
    out = parse_json.parse(answer, **ABS)
    assert out.actions and all(isinstance(a, ActionProblem) for a in out.actions), out.actions
    for p in out.problems:
        assert "internal" not in p.message, p.message
        assert len(p.message) < 600


def test_a_giant_coordinate_says_why() -> None:
    out = parse_json.parse('{"type": "click", "x": 1, "y": ' + "9" * 400 + "}", **ABS)
    assert "y=<a 400-digit number> is not a plausible coordinate" in out.problems[0].message


def _mock_run(tmp_path, raw_answers: list[str]):
    import yaml

    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump([{"raw": a} for a in raw_answers] + [{"action": {"type": "finish",
                                                                                      "status": "DONE"}}]))
    assert run_cli("init").returncode == 0
    return run_cli("run", "--mock-script", str(script), "--max-steps", str(len(raw_answers) + 1), "--quiet")


def test_conway_run_survives_malformed_raw_answers(tmp_path, conway_home) -> None:
    answers = ['{"type": {}}', '{"type": []}', '{"type": "click", "x": 1, "y": ' + "9" * 400 + "}"]
    r = _mock_run(tmp_path, answers)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    errors = [e["payload"]["error"] for e in read_journal(conway_home / "journal").events if e["kind"] == "error"]
    assert len(errors) == 3
    assert "dict, not a type name" in errors[0] and "list, not a type name" in errors[1]
    assert "400-digit number" in errors[2] or "401-digit number" in errors[2]


def test_review_action_refuses_malformed_shapes_in_one_line(tmp_path, conway_home, capsys) -> None:
    from conway.cli.main import main

    r = _mock_run(tmp_path, ['{"type": "wait"}'])
    assert r.returncode == 0, r.stderr
    for action in ['{"type": {}}', '{"type": []}', '[1, 2]', '"click"',
                   '{"type": "click", "x": 1, "y": ' + "9" * 400 + "}", "[" * 5000 + "]" * 5000]:
        capsys.readouterr()
        assert main(["review", "--step", "1", "--verdict", "wrong", "--action", action]) == 1, action
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("conway: error: the corrected action is not"), err
    assert not (conway_home / "labels.jsonl").exists()
    assert main(["review", "--step", "1", "--verdict", "wrong", "--action", '{"type": "click", "x": 3, "y": 4}']) == 0
    label = json.loads((conway_home / "labels.jsonl").read_text().splitlines()[0])
    assert label["corrected_action"]["x"] == 3


def test_valid_actions_still_validate() -> None:
    assert isinstance(parse_action({"type": "click", "x": 1, "y": 2}), _Action)
    assert isinstance(parse_action({"type": "wait", "seconds": 10**3}), _Action)
