"""The JSON dialects unconstrained VLMs write, each mapped onto the one action schema.

Coordinates here are absolute pixels of a 1932x1092 image sent for a
1920x1080 capture (see parser_test_helpers), so model (x, y) maps to about
(x * 1920/1932, y * 1080/1092).
"""

from __future__ import annotations

import json

import pytest
from helpers.parser_test_helpers import ABS, CAPTURED, SENT, _assert_actions, only_problem

from conway.actions import ActionProblem
from conway.policies.families.generic import parse as parse_json

SX, SY = CAPTURED[0] / SENT[0], CAPTURED[1] / SENT[1]


def xy(x: float, y: float) -> dict:
    return {"x": x * SX, "y": y * SY}


ACCEPTED = [
    # (answer, expected actions, expected thought or None)
    ('{"action": "click", "x": 100, "y": 200}', [{"type": "click", **xy(100, 200)}], None),
    ('{"type": "click", "x": 100, "y": 200, "thought": "the OK button"}', [{"type": "click", **xy(100, 200)}],
     "the OK button"),
    ('{"action": {"type": "double_click", "x": 10, "y": 20}}', [{"type": "double_click", **xy(10, 20)}], None),
    ('{"action": {"action": "right_click", "coordinate": [10, 20]}}', [{"type": "right_click", **xy(10, 20)}],
     None),
    ('{"thought": "open it", "action": "left_click", "coordinate": [10, 20]}', [{"type": "click", **xy(10, 20)}],
     "open it"),
    ('{"name": "click", "arguments": {"x": 10, "y": 20}}', [{"type": "click", **xy(10, 20)}], None),
    ('{"name": "click", "arguments": "{\\"x\\": 10, \\"y\\": 20}"}', [{"type": "click", **xy(10, 20)}], None),
    ('{"type": "function", "function": {"name": "type", "arguments": "{\\"text\\": \\"hello\\"}"}}',
     [{"type": "type", "text": "hello"}], None),
    ('{"tool_calls": [{"type": "function", "function": {"name": "computer", "arguments": '
     '{"action": "left_click", "coordinate": [10, 20]}}}]}', [{"type": "click", **xy(10, 20)}], None),
    ('{"name": "computer", "input": {"action": "key", "text": "ctrl+c"}}', [{"type": "hotkey", "keys": ["ctrl", "c"]}],
     None),
    ('{"action": "key", "text": "Return"}', [{"type": "key", "key": "Return"}], None),
    ('{"action": "click", "point": [10, 20]}', [{"type": "click", **xy(10, 20)}], None),
    ('{"action": "click", "point": {"x": 10, "y": 20}}', [{"type": "click", **xy(10, 20)}], None),
    ('{"action": "click", "position": [10, 20]}', [{"type": "click", **xy(10, 20)}], None),
    ('{"action": "click", "bbox": [10, 20, 30, 60]}', [{"type": "click", **xy(20, 40)}], None),
    ('{"action": "tap", "box": [0, 0, 100, 100]}', [{"type": "click", **xy(50, 50)}], None),
    ('{"action": "middle_click", "x": 10, "y": 20}', [{"type": "click", "button": "middle", **xy(10, 20)}], None),
    ('{"action": "left_click_drag", "start_coordinate": [10, 20], "end_coordinate": [30, 40]}',
     [{"type": "drag", **xy(10, 20), "to_x": 30 * SX, "to_y": 40 * SY}], None),
    ('{"action": "mouse_move", "coordinate": [10, 20]}', [{"type": "move", **xy(10, 20)}], None),
    ('{"action": "type", "content": "hi"}', [{"type": "type", "text": "hi"}], None),
    ('{"action": "write", "text": "hi"}', [{"type": "type", "text": "hi"}], None),
    ('{"action": "press", "key": "enter"}', [{"type": "key", "key": "enter"}], None),
    ('{"action": "hotkey", "keys": "ctrl+shift+t"}', [{"type": "hotkey", "keys": ["ctrl", "shift", "t"]}], None),
    ('{"action": "hotkey", "key": "ctrl c"}', [{"type": "hotkey", "keys": ["ctrl", "c"]}], None),
    ('{"action": "scroll", "direction": "down", "coordinate": [10, 20]}',
     [{"type": "scroll", "dy": -5, **xy(10, 20)}], None),
    ('{"action": "scroll", "direction": "left", "amount": 2}', [{"type": "scroll", "dx": -2}], None),
    ('{"action": "wait", "duration": 2}', [{"type": "wait", "seconds": 2}], None),
    ('{"action": "done"}', [{"type": "finish", "status": "DONE"}], None),
    ('{"action": "fail", "message": "no such file"}', [{"type": "finish", "status": "FAIL"}], None),
    ('{"action": "terminate", "status": "success", "answer": "ok"}',
     [{"type": "finish", "status": "DONE", "message": "ok"}], None),
    ('{"action": "Double-Click", "x": 1, "y": 2}', [{"type": "double_click", **xy(1, 2)}], None),
    ('[{"action": "click", "x": 1, "y": 2}, {"name": "type", "arguments": {"text": "a"}}]',
     [{"type": "click", **xy(1, 2)}, {"type": "type", "text": "a"}], None),
    ('Sure! ```json\n{"action": "click", "coordinate": [1, 2]}\n```', [{"type": "click", **xy(1, 2)}], "Sure!"),
]


@pytest.mark.parametrize("answer,expected,thought", ACCEPTED, ids=[a[0][:50] for a in ACCEPTED])
def test_dialect_is_mapped_to_the_schema(answer: str, expected: list, thought: str | None) -> None:
    out = parse_json.parse(answer, **ABS)
    assert out.ok, out.actions
    _assert_actions(out.actions, expected)
    if thought is not None:
        assert out.thought is not None and out.thought.startswith(thought)


REFUSED = [
    ('{"action": "click the button"}', "must be an action object or a known action name"),
    ('{"action": 5}', "must be an action object"),
    ('{"action": "click", "coordinate": [1, 2, 3]}', '"coordinate" must be [x, y]'),
    ('{"action": "click", "bbox": [1, 2]}', '"bbox" must be [x1, y1, x2, y2]'),
    ('{"action": "click", "x": 1, "y": 2, "coordinate": [1, 2]}', "give either x/y or"),
    ('{"action": "click", "coordinate": [1, 2], "point": [3, 4]}', "not several"),
    ('{"action": "click", "coordinate": [5000, 2]}', "outside the 1932x1092 image"),
    ('{"name": "click", "arguments": "{not json"}', 'tool-call "arguments" is not a JSON object'),
    ('{"name": "click", "arguments": [1, 2]}', 'tool-call "arguments" must be an object'),
    ('{"name": "eval", "arguments": {"code": "1"}}', "unknown action type 'eval'"),
    ('{"action": "scroll", "direction": "sideways"}', "direction must be up, down, left or right"),
    ('{"action": "scroll", "direction": "up", "dy": 3}', "either direction or dy/dx"),
    ('{"action": "click", "x": 1, "y": 2, "on_click": "rm -rf"}', "Extra inputs are not permitted"),
    ('{"tool_calls": {"name": "click"}}', '"tool_calls" must be a list'),
    ('{"action": "terminate", "status": "maybe"}', "status"),
]


@pytest.mark.parametrize("answer,reason", REFUSED, ids=[r[0][:50] for r in REFUSED])
def test_what_fits_no_dialect_is_refused_with_the_reason(answer: str, reason: str) -> None:
    out = parse_json.parse(answer, **ABS)
    assert not out.ok
    messages = [p.message for p in out.problems]
    assert any(reason in m for m in messages), messages
    assert not any("internal" in m for m in messages)


def test_the_docs_table_lists_every_dialect_shape() -> None:
    from conftest import REPO
    page = (REPO / "docs" / "running-models.md").read_text(encoding="utf-8")
    for shape in ('{"action": "click"', '"arguments"', '"coordinate": [x, y]', '"bbox"', '"tool_calls"'):
        assert shape in page, shape


def test_dialects_never_execute_or_reach_the_shell(tmp_path) -> None:
    sentinel = tmp_path / "pwned"
    for answer in [json.dumps({"name": "shell", "arguments": json.dumps({"command": f"touch {sentinel}"})}),
                   json.dumps({"action": "shell", "command": f"touch {sentinel}"})]:
        out = parse_json.parse(answer, **ABS)
        assert out.ok and out.actions[0].type == "shell"  # type: ignore[union-attr]
    assert not sentinel.exists()  # parsed into an action for the loop's rules; nothing ran


def test_a_lone_problem_is_kept() -> None:
    assert isinstance(parse_json.parse('{"action": []}', **ABS).actions[0], ActionProblem)
    assert "no action in the JSON" in only_problem(parse_json.parse('{"action": []}', **ABS))
