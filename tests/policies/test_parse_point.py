"""The grounding models' answers (GTA1's `(x,y)`, Holo1.5's click object) become one click, or a clear refusal."""

from __future__ import annotations

import pytest

from conway.geometry import Convention
from conway.policies.families.gta1.parse import parse_pair
from conway.policies.families.holo.parse import parse_click_json

SETUP = dict(convention=Convention.ABSOLUTE, sent_size=(1932, 1092), captured_size=(1920, 1080))


def _click(out):
    assert out.ok, out.problems
    (action,) = out.actions
    assert action.type == "click" and action.button == "left"
    return round(action.x, 2), round(action.y, 2)


def test_gta1_takes_the_first_pair_as_its_agent_does():
    assert _click(parse_pair("(966,546)", **SETUP)) == (960.0, 540.0)
    out = parse_pair("The button is at (966, 546); not (10,10).", **SETUP)
    assert _click(out) == (960.0, 540.0) and out.thought == "The button is at"
    assert _click(parse_pair("<think>maybe (1,1)</think>(966,546)", **SETUP)) == (960.0, 540.0)  # reasoning is not read


@pytest.mark.parametrize("answer,reason", [
    ("the search bar", "no (x,y) point in the answer: 'the search bar'"),
    ("", "no (x,y) point in the answer"),
    ("(12 34)", "no (x,y) point"),
    ("(1932,10)", "x=1932 outside the 1932x1092 image sent to the model"),
    ("(-5,10)", "x=-5 outside"),
])
def test_gta1_refuses_an_answer_without_a_usable_point(answer, reason):
    out = parse_pair(answer, **SETUP)
    assert not out.ok and reason in out.problems[0].message


def test_holo_reads_its_click_object():
    assert _click(parse_click_json('{"action": "click_absolute", "x": 966, "y": 546}', **SETUP)) == (960.0, 540.0)
    assert _click(parse_click_json('```json\n{"x": 966, "y": 546}\n```', **SETUP)) == (960.0, 540.0)


@pytest.mark.parametrize("answer,reason", [
    ("Click the date", "the answer is not one JSON object"),
    ("[966, 546]", "the answer is a JSON list, not an object"),
    ('{"action": "type_text", "x": 1, "y": 2}', "action 'type_text' is not click_absolute"),
    ('{"action": "click_absolute", "x": 1, "y": 2, "button": "right"}', "unknown key(s) 'button'"),
    ('{"action": "click_absolute", "x": 12.5, "y": 2}', "x=12.5 is not an integer pixel"),
    ('{"action": "click_absolute", "x": true, "y": 2}', "x=True is not an integer pixel"),
    ('{"action": "click_absolute", "y": 2}', "x=None is not an integer pixel"),
    ('{"action": "click_absolute", "x": 5000, "y": 2}', "x=5000 outside the 1932x1092 image"),
    ("[" * 5000, "the answer is not one JSON object"),
])
def test_holo_refuses_anything_but_one_click_in_the_image_by_name(answer, reason):
    out = parse_click_json(answer, **SETUP)
    assert not out.ok and reason in out.problems[0].message, out.problems


@pytest.mark.parametrize("parse", [parse_pair, parse_click_json])
def test_bad_inputs_are_problems_never_exceptions(parse):
    assert "must be text" in parse(None, **SETUP).problems[0].message
    assert "limit" in parse("(1,1)" * 50_000, **SETUP).problems[0].message
    bad = parse("(1,1)", convention="pixels", sent_size=(1, 1), captured_size=(1, 1))
    assert "unknown coordinate convention 'pixels'" in bad.problems[0].message
