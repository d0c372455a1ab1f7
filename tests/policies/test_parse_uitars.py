"""UI-TARS output parser: real-format corpus, hostile actions, conventions, fuzzing."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest
from helpers.parser_test_helpers import (
    ABS,
    CAPTURED,
    CORPUS,
    SENT,
    _assert_actions,
    _setup,
    assert_hostile_problems,
    hostile_text,
    load_hostile,
    only_problem,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conway.actions import ActionProblem, _Action
from conway.geometry import Convention, captured_to_model
from conway.policies.families.uitars.parse import CALL_USER_MESSAGE, SCROLL_CLICKS, parse
from conway.policies.parsed import ParsedOutput

KIND = "uitars"
HOSTILE = load_hostile(KIND)
K1000 = dict(convention="relative1000", sent_size=SENT, captured_size=CAPTURED)


def act(action: str) -> str:
    return f"Thought: doing it\nAction: {action}"


# --- corpus --------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((CORPUS / KIND).glob("*.txt")), ids=lambda p: p.stem)
def test_corpus(path: Path) -> None:
    exp = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    out = parse(path.read_text(encoding="utf-8"), **_setup(exp))
    _assert_actions(out.actions, exp["actions"])
    if "thought_contains" in exp:
        assert out.thought and exp["thought_contains"] in out.thought
    if "reasoning_contains" in exp:
        assert out.reasoning and exp["reasoning_contains"] in out.reasoning
    assert out.thought is None or not out.thought.startswith("Thought:")
    assert out.raw_action_text and "Action:" not in out.raw_action_text


def test_hostile_corpus_is_indexed() -> None:
    assert {p.stem for p in (CORPUS / "hostile" / KIND).glob("*.txt")} == set(HOSTILE)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_rejected_and_nothing_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = HOSTILE[name]
    sentinel = tmp_path / "pwned"
    text = hostile_text(KIND, name, sentinel)
    monkeypatch.chdir(tmp_path)

    def forbidden(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the parser evaluated something")

    with monkeypatch.context() as m:
        m.setattr(builtins, "eval", forbidden)
        m.setattr(builtins, "exec", forbidden)
        m.setattr(builtins, "compile", forbidden)  # the UI-TARS lexer needs no Python parser at all
        out = parse(text, **_setup(case))
    assert_hostile_problems(out, case["reason"])
    assert not sentinel.exists()
    assert list(tmp_path.iterdir()) == []


# --- decisions ---------------------------------------------------------------------


def test_type_trailing_newline_means_enter() -> None:
    # the model writes \n as an escape (two characters) or as a real newline
    for content in ("'abc\\n'", "'abc\n'"):
        out = parse(act(f"type(content={content})"), **ABS)
        _assert_actions(out.actions, [{"type": "type", "text": "abc"}, {"type": "key", "key": "enter"}])
    out = parse(act("type(content='\\n')"), **ABS)
    _assert_actions(out.actions, [{"type": "key", "key": "enter"}])
    # only one trailing newline is the submit
    out = parse(act("type(content='a\\n\\n')"), **ABS)
    _assert_actions(out.actions, [{"type": "type", "text": "a\n"}, {"type": "key", "key": "enter"}])
    assert "needs content" in only_problem(parse(act("type(content='')"), **ABS))


def test_call_user_ends_the_run_as_fail() -> None:
    out = parse(act("call_user(content='Please enter the 2FA code.')"), **ABS)
    _assert_actions(out.actions, [{"type": "finish", "status": "FAIL",
                                   "message": f"{CALL_USER_MESSAGE}: Please enter the 2FA code."}])


def test_finished_without_content() -> None:
    _assert_actions(parse(act("finished()"), **ABS).actions, [{"type": "finish", "status": "DONE", "message": ""}])
    _assert_actions(parse(act("finished(content='')"), **ABS).actions,
                    [{"type": "finish", "status": "DONE", "message": ""}])


def test_scroll_directions() -> None:
    for direction, field, sign in (("up", "dy", 1), ("down", "dy", -1), ("left", "dx", -1), ("right", "dx", 1)):
        out = parse(act(f"scroll(direction='{direction}')"), **ABS)
        _assert_actions(out.actions, [{"type": "scroll", field: sign * SCROLL_CLICKS, "x": None}])


def test_box_forms() -> None:
    for box in ("(966,546)", "[966, 546]", "<|box_start|>(966,546)<|box_end|>", "<point>966 546</point>",
                "(956,536,976,556)", "[956, 536, 976, 556]", "<bbox>956 536 976 556</bbox>",
                "<|box_start|>(956,536,976,556)<|box_end|>", "( 966 , 546 )", "(966.0,546.0)"):
        out = parse(act(f"click(start_box='{box}')"), **ABS)
        _assert_actions(out.actions, [{"type": "click", "x": 960, "y": 540}])
    # unquoted boxes, as models sometimes write them
    out = parse(act("click(start_box=(966,546))"), **ABS)
    _assert_actions(out.actions, [{"type": "click", "x": 960, "y": 540}])
    out = parse(act('click(start_box="(966,546)")'), **ABS)
    _assert_actions(out.actions, [{"type": "click", "x": 960, "y": 540}])


def test_multi_action_partial_rejection() -> None:
    out = parse(act("click(start_box='(10,10)')\n\nclick(start_box='(9999,10)')"), **ABS)
    assert isinstance(out.actions[0], _Action) and isinstance(out.actions[1], ActionProblem)
    assert "limit 10" in only_problem(parse(act("\n\n".join(["wait()"] * 11)), **ABS))


def test_hotkey_forms() -> None:
    for spelled in ("ctrl c", "ctrl+c", "Ctrl C", "control c"):
        out = parse(act(f"hotkey(key='{spelled}')"), **ABS)
        _assert_actions(out.actions, [{"type": "hotkey", "keys": ["ctrl", "c"]}])
    out = parse(act("hotkey(hotkey='alt f4')"), **ABS)
    _assert_actions(out.actions, [{"type": "hotkey", "keys": ["alt", "f4"]}])
    assert "one key" in only_problem(parse(act("press(key='ctrl c')"), **ABS))
    assert "needs key" in only_problem(parse(act("hotkey()"), **ABS))


def test_bare_action_without_thought() -> None:
    out = parse("click(start_box='(966,546)')", **ABS)
    assert out.thought is None
    _assert_actions(out.actions, [{"type": "click", "x": 960, "y": 540}])
    assert "no 'Action:' line" in only_problem(parse("I would click it", **ABS))


def test_action_text_inside_content_is_not_a_marker() -> None:
    out = parse("Thought: type it\nAction: type(content='Action: go')", **ABS)
    _assert_actions(out.actions, [{"type": "type", "text": "Action: go"}])


def test_misconfigured_setup() -> None:
    out = parse(act("wait()"), convention="bogus", sent_size=SENT, captured_size=CAPTURED)
    assert "parser misconfigured" in only_problem(out)


# --- conventions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "convention,point,bad,reason",
    [
        ("absolute", (966, 546), (1932, 10), "outside the 1932x1092 image sent to the model"),
        ("relative", (0.5, 0.5), (1.5, 0.5), "outside 0..1"),
        ("relative1000", (500, 500), (1001, 10), "outside 0..1000"),
        ("screen", (960, 540), (1920, 10), "outside the 1920x1080 captured screenshot"),
    ],
)
def test_each_convention(convention: str, point: tuple, bad: tuple, reason: str) -> None:
    setup = dict(convention=convention, sent_size=SENT, captured_size=CAPTURED)
    out = parse(act(f"click(start_box='({point[0]},{point[1]})')"), **setup)
    _assert_actions(out.actions, [{"type": "click", "x": 960, "y": 540}])
    assert reason in only_problem(parse(act(f"click(start_box='({bad[0]},{bad[1]})')"), **setup))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(Convention)), st.floats(0, 1919.99), st.floats(0, 1079.99))
def test_round_trip_through_geometry(convention: Convention, cx: float, cy: float) -> None:
    mx, my = captured_to_model(cx, cy, convention, SENT, CAPTURED)
    out = parse(act(f"click(start_box='({mx:.6f},{my:.6f})')"), convention=convention,
                sent_size=SENT, captured_size=CAPTURED)
    if out.ok:
        a = out.actions[0]
        assert a.x == pytest.approx(cx, abs=0.01) and a.y == pytest.approx(cy, abs=0.01)  # type: ignore[union-attr]
    else:
        assert "outside" in only_problem(out)


# --- fuzzing ---------------------------------------------------------------------------

FRAGMENTS = [
    "Thought: ", "Action: ", "Reflection: ", "Action_Summary: ", "\n", "\n\n", "click", "left_double",
    "right_single", "drag", "hotkey", "type", "scroll", "wait", "finished", "call_user", "press",
    "long_press", "(", ")", "start_box=", "end_box=", "point=", "key=", "content=", "direction=", "'",
    '"', "\\", "\\n", "(1,2)", "(1,2,3,4)", "[1, 2]", "<point>1 2</point>", "<|box_start|>", "<|box_end|>",
    "down", "up", ",", "=", " ", "ctrl c", "__import__", "<think>", "</think>", "9999999", "-5", "1e9",
    "с", "<|im_end|>", "é", "\x00",
]
near_miss = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
structured = st.builds(
    lambda name, kwargs: "Thought: t\nAction: " + name + "(" + ", ".join(f"{k}={v}" for k, v in kwargs) + ")",
    st.sampled_from(["click", "left_double", "right_single", "drag", "hotkey", "type", "scroll", "wait",
                     "finished", "call_user", "press", "hover", "select", "keydown", "open_app", "x"]),
    st.lists(st.tuples(
        st.sampled_from(["start_box", "end_box", "point", "start_point", "end_point", "key", "content",
                         "direction", "hotkey", "zz"]),
        st.one_of(st.text(max_size=15).map(repr), st.integers(-5, 3000).map(str),
                  st.tuples(st.floats(-10, 3000), st.floats(-10, 3000)).map(lambda p: f"'({p[0]},{p[1]})'"),
                  st.sampled_from(["'down'", "'up'", "'ctrl c'", "'<point>5 5</point>'", "''"])),
    ), max_size=3),
)


def _check_invariants(out: ParsedOutput) -> None:
    assert isinstance(out, ParsedOutput)
    assert out.actions
    for a in out.actions:
        assert isinstance(a, (_Action, ActionProblem))
        if isinstance(a, ActionProblem):
            assert a.message and "internal" not in a.message, a.message
        else:
            for f in ("x", "to_x"):
                v = getattr(a, f, None)
                assert v is None or 0 <= v < CAPTURED[0]
            for f in ("y", "to_y"):
                v = getattr(a, f, None)
                assert v is None or 0 <= v < CAPTURED[1]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=400), near_miss), st.sampled_from(list(Convention)))
def test_fuzz_random_and_near_miss_text(text: str, convention: Convention) -> None:
    _check_invariants(parse(text, convention=convention, sent_size=SENT, captured_size=CAPTURED))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structured, st.sampled_from(list(Convention)))
def test_fuzz_structured_calls(text: str, convention: Convention) -> None:
    _check_invariants(parse(text, convention=convention, sent_size=SENT, captured_size=CAPTURED))


def test_pathological_inputs() -> None:
    for text in ["Action: " + "click(" * 5000, "Action: " + "(" * 10000, "Action: type(content='" + "a" * 150_000,
                 "Action: " + "wait() " * 5000, "x" * 300_000, "Action: type(content='" + "a" * 20_000 + "')"]:
        out = parse(text, **ABS)
        assert all(isinstance(a, ActionProblem) for a in out.actions)
        assert not any("internal" in a.message for a in out.actions)  # type: ignore[union-attr]


# --- bounded lexing (found by scripts/reliability/prove_reliability.py fuzz: 0.3-0.8 s per 200k-char input) ----


def test_a_long_unquoted_value_is_refused_without_reading_on() -> None:
    out = parse("Action: " + "click(start_box=(" * 11_700, **ABS)
    assert "an unquoted value longer than 1000 characters" in only_problem(out)
    ok = parse(act("click(start_box=" + "(" * 400 + "10,20" + ")" * 400 + ")"), **ABS)  # nesting itself is fine
    assert ok.ok, ok.actions


def test_a_long_quoted_value_is_refused_and_a_long_text_still_reaches_the_schema() -> None:
    out = parse("Action: type(content='" + "a" * 199_000, **ABS)
    assert "a quoted value longer than 20000 characters" in only_problem(out)
    out = parse("Action: type(content='" + "a" * 19_000, **ABS)
    assert "unterminated string" in only_problem(out)
    out = parse(act("type(content='" + "\\t" * 60_000 + "')"), **ABS)  # closed: the loose reading takes it
    assert "at most 10000 characters" in only_problem(out)


def test_more_than_eight_parameters_are_refused() -> None:
    out = parse(act("click(" + ", ".join(f"p{i}='x'" for i in range(9)) + ")"), **ABS)
    assert "more than 8 parameters" in only_problem(out)


def test_unescape_reads_escapes_left_to_right_like_the_reference_regex() -> None:
    import random
    import re

    from conway.policies.families.uitars.parse import _ESCAPES, _unescape

    def reference(s: str) -> str:
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), s, flags=re.S)

    rng = random.Random(7)
    alphabet = ["\\", "n", "t", "r", "'", '"', "x", "\n", " "]
    for _ in range(20_000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        assert _unescape(s) == reference(s), repr(s)
    assert _unescape("it\\'s\\\\n") == "it's\\n"
