"""JSON action extraction for the generic policy: corpus, hostile input, schema, fuzzing."""

from __future__ import annotations

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

from conway.actions import ACTION_TYPES, ActionProblem, _Action
from conway.geometry import Convention, captured_to_model
from conway.policies.families.generic.parse import NoJsonFound, extract_json, parse, wrapped_schema
from conway.policies.parsed import ParsedOutput

KIND = "json"
HOSTILE = load_hostile(KIND)


# --- corpus ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((CORPUS / KIND).glob("*.txt")), ids=lambda p: p.stem)
def test_corpus(path: Path) -> None:
    exp = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    out = parse(path.read_text(encoding="utf-8"), **_setup(exp))
    _assert_actions(out.actions, exp["actions"])
    if "thought_contains" in exp:
        assert out.thought and exp["thought_contains"] in out.thought
    if "reasoning_contains" in exp:
        assert out.reasoning and exp["reasoning_contains"] in out.reasoning
    assert out.raw_action_text is not None
    json.loads(out.raw_action_text)  # the recorded fragment is exactly the JSON


def test_hostile_corpus_is_indexed() -> None:
    assert {p.stem for p in (CORPUS / "hostile" / KIND).glob("*.txt")} == set(HOSTILE)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_rejected(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = HOSTILE[name]
    sentinel = tmp_path / "pwned"
    text = hostile_text(KIND, name, sentinel)
    monkeypatch.chdir(tmp_path)
    out = parse(text, **_setup(case))
    assert_hostile_problems(out, case["reason"])
    assert not sentinel.exists()


# --- extraction ----------------------------------------------------------------------------


def test_extraction_order() -> None:
    # the whole text first
    assert extract_json(' {"type": "wait"} ')[0] == {"type": "wait"}
    # the LAST json fence beats earlier ones and prose
    text = ('Example: {"type": "key", "key": "a"}\n```json\n{"type": "key", "key": "b"}\n```\n'
            '```json\n{"type": "key", "key": "c"}\n```')
    assert extract_json(text)[0] == {"type": "key", "key": "c"}
    # prose: the first balanced object that parses; braces inside strings don't confuse it
    text = 'Using {curly} words, then {"type": "type", "text": "a } b { c"} and {"type": "wait"}'
    value, start, end = extract_json(text)
    assert value == {"type": "type", "text": "a } b { c"}
    assert text[start:end] == '{"type": "type", "text": "a } b { c"}'
    # a list of objects in prose is taken whole
    assert extract_json('Do: [{"type": "wait"}, {"type": "wait"}] ok')[0] == [{"type": "wait"}] * 2
    with pytest.raises(NoJsonFound):
        extract_json("no braces at all")


def test_errors_are_specific() -> None:
    assert "trailing comma" in only_problem(parse('```json\n{"type": "wait",}\n```', **ABS))
    assert "invalid JSON in the ```json block" in only_problem(parse('```json\n{"type": wait}\n```', **ABS))
    assert "unbalanced" in only_problem(parse('Here: {"type": "click", "x": 1', **ABS))
    assert "no action in the JSON" in only_problem(parse("[]", **ABS))
    assert "an action must be a JSON object" in only_problem(parse('{"action": ["click"]}', **ABS))
    assert "to_x and to_y go together" in only_problem(
        parse('{"type": "drag", "x": 1, "y": 1, "to_x": 5}', **ABS))
    assert "invalid drag action" in only_problem(parse('{"type": "drag", "x": 1, "y": 1}', **ABS))


def test_wrapper_and_thought() -> None:
    out = parse('{"thought": "open it", "action": {"type": "double_click", "x": 161, "y": 91}}', **ABS)
    assert out.thought == "open it"
    _assert_actions(out.actions, [{"type": "double_click", "x": 160, "y": 90}])
    out = parse('{"thought": "two", "actions": [{"type": "wait"}, {"type": "key", "key": "a"}]}', **ABS)
    assert out.thought == "two" and len(out.actions) == 2 and out.ok
    out = parse('I think so. {"type": "wait"}', **ABS)
    assert out.thought == "I think so."


def test_non_gui_actions_are_not_mapped() -> None:
    out = parse('{"type": "read_file", "path": "a.txt"}', **ABS)
    _assert_actions(out.actions, [{"type": "read_file", "path": "a.txt"}])


def test_misconfigured_setup() -> None:
    out = parse('{"type": "wait"}', convention="nope", sent_size=SENT, captured_size=CAPTURED)
    assert "parser misconfigured" in only_problem(out)


# --- conventions -------------------------------------------------------------------------------


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
    out = parse(json.dumps({"type": "scroll", "dy": 2, "x": point[0], "y": point[1]}), **setup)
    _assert_actions(out.actions, [{"type": "scroll", "x": 960, "y": 540, "dy": 2}])
    out = parse(json.dumps({"type": "drag", "x": point[0], "y": point[1], "to_x": bad[0], "to_y": bad[1]}), **setup)
    assert reason in only_problem(out)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(Convention)), st.floats(0, 1919.99), st.floats(0, 1079.99))
def test_round_trip_through_geometry(convention: Convention, cx: float, cy: float) -> None:
    mx, my = captured_to_model(cx, cy, convention, SENT, CAPTURED)
    out = parse(json.dumps({"type": "move", "x": mx, "y": my}), convention=convention,
                sent_size=SENT, captured_size=CAPTURED)
    if out.ok:
        a = out.actions[0]
        assert a.x == pytest.approx(cx, abs=0.01) and a.y == pytest.approx(cy, abs=0.01)  # type: ignore[union-attr]
    else:
        assert "outside" in only_problem(out)


# --- schema -------------------------------------------------------------------------------------


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return out + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_wrapped_schema_is_self_contained() -> None:
    schema = wrapped_schema()
    json.dumps(schema)
    assert schema["required"] == ["thought", "action"]
    for ref in _refs(schema):
        assert ref.startswith("#/$defs/") and ref.rsplit("/", 1)[1] in schema["$defs"], ref
    for d in schema["$defs"].values():
        if "type" in d.get("properties", {}):
            assert "type" in d["required"]
    mapping = schema["properties"]["action"]["discriminator"]["mapping"]
    assert set(mapping) == set(ACTION_TYPES)


def test_wrapped_schema_limited_types() -> None:
    schema = wrapped_schema(["click", "wait"])
    action = schema["properties"]["action"]
    assert set(action["discriminator"]["mapping"]) == {"click", "wait"}
    assert len(action["oneOf"]) == 2
    assert set(schema["$defs"]) == {"Click", "Wait"}
    with pytest.raises(ValueError, match="unknown action types"):
        wrapped_schema(["click", "teleport"])


# --- fuzzing --------------------------------------------------------------------------------------

FRAGMENTS = ["{", "}", "[", "]", '"type"', '"click"', '"x"', '"y"', ":", ",", "1", "-1", "1e400", "NaN",
             "true", "null", '"thought"', '"action"', "```json\n", "```", "\n", " ", '"', "\\", "<think>",
             "</think>", '"wait"', '"drag"', '"to_x"', '"scroll"', '"dy"', "'", "é", "\x00", "99999"]
near_miss = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**7, 10**7) | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=15,
)
structured = st.builds(
    lambda kind, fields, wrap, prose: prose + json.dumps(
        {"thought": "t", "action": {"type": kind, **fields}} if wrap else {"type": kind, **fields}),
    st.sampled_from(sorted(ACTION_TYPES) + ["nope"]),
    st.dictionaries(st.sampled_from(["x", "y", "to_x", "to_y", "dy", "dx", "text", "key", "keys", "status",
                                     "seconds", "button", "path", "zz"]), json_values, max_size=5),
    st.booleans(),
    st.sampled_from(["", "Sure: ", "```json\n"]),
)


def _check_invariants(out: ParsedOutput) -> None:
    assert isinstance(out, ParsedOutput)
    assert out.actions
    for a in out.actions:
        assert isinstance(a, (_Action, ActionProblem))
        if isinstance(a, ActionProblem):
            assert a.message and "internal" not in a.message, a.message
        elif a.group == "gui":
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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structured, st.sampled_from(list(Convention)))
def test_fuzz_structured_json(text: str, convention: Convention) -> None:
    _check_invariants(parse(text, convention=convention, sent_size=SENT, captured_size=CAPTURED))


def test_pathological_inputs() -> None:
    for text in ["[" * 10000, "{" * 10000, '{"a":' * 3000 + "1" + "}" * 3000, "x" * 300_000,
                 "{" + '"a": 1, ' * 20000 + "}", "{} " * 5000, '{"x": ' + "9" * 5000 + "}"]:
        out = parse(text, **ABS)
        assert all(isinstance(a, ActionProblem) for a in out.actions)
        assert not any("internal" in a.message for a in out.actions)  # type: ignore[union-attr]


# --- bounded bracket matching (found by scripts/reliability/prove_reliability.py fuzz: 0.1-1 s per input) ----


def _reference_balanced(text: str, start: int) -> int | None:
    """The character-by-character matcher the parser used before (the specification)."""
    pairs = {"{": "}", "[": "]"}
    stack: list[str] = []
    in_str = esc = False
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c == '"':
            in_str = True
        elif c in pairs:
            stack.append(pairs[c])
            if len(stack) > 64:
                return None
        elif c in "}]":
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return i + 1
    return None


def test_balanced_jumps_over_strings_but_matches_like_the_reference() -> None:
    import random

    from conway.policies.families.generic.parse import _balanced

    rng = random.Random(11)
    alphabet = ["{", "}", "[", "]", '"', "\\", "a", ":", ","]
    for _ in range(30_000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        start = rng.randint(0, len(s))
        assert _balanced(s, start, [10**9]) == _reference_balanced(s, start), (s, start)


def test_prose_search_stops_after_its_budget_with_an_ordinary_rejection() -> None:
    for text in ['I think {"a": "' + "x {" * 66_000, "x [" + "{}" * 99_000, "x " + '{"a":[], ' * 20_000]:
        out = parse(text, **ABS)
        assert out.actions and all(isinstance(a, ActionProblem) for a in out.actions)
        assert not any("internal" in a.message for a in out.actions)  # type: ignore[union-attr]
    ok = parse("[" * 3 + " " + '{"type": "wait"}', **ABS)  # a real action after noise is still found
    assert ok.ok, ok.actions
