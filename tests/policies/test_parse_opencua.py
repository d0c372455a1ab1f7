"""OpenCUA output parser: real-format corpus, hostile code, conventions, fuzzing."""

from __future__ import annotations

import ast
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
from conway.policies.families.opencua.parse import ALLOWED_CALLS, parse
from conway.policies.parsed import ParsedOutput

KIND = "opencua"
HOSTILE = load_hostile(KIND)
REL = dict(convention="relative", sent_size=SENT, captured_size=CAPTURED)


def code(c: str) -> str:
    return f"## Action:\nDo it.\n\n## Code:\n```python\n{c}\n```\n"


# --- corpus --------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((CORPUS / KIND).glob("*.txt")), ids=lambda p: p.stem)
def test_corpus(path: Path) -> None:
    exp = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    out = parse(path.read_text(encoding="utf-8"), **_setup(exp))
    _assert_actions(out.actions, exp["actions"])
    if "thought_contains" in exp:
        assert out.thought and exp["thought_contains"] in out.thought
    if "reasoning_contains" in exp:
        assert out.reasoning and exp["reasoning_contains"] in out.reasoning
        assert "<think>" not in (out.thought or "")
    assert out.raw_action_text and out.raw_action_text.startswith(("pyautogui.", "computer."))


def test_hostile_corpus_is_indexed() -> None:
    files = {p.stem for p in (CORPUS / "hostile" / KIND).glob("*.txt")}
    assert files == set(HOSTILE)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_rejected_and_nothing_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = HOSTILE[name]
    sentinel = tmp_path / "pwned"
    text = hostile_text(KIND, name, sentinel)
    monkeypatch.chdir(tmp_path)
    out = parse(text, **_setup(case))
    assert_hostile_problems(out, case["reason"])
    assert not sentinel.exists()
    assert list(tmp_path.iterdir()) == []


def test_never_evaluates(monkeypatch: pytest.MonkeyPatch) -> None:
    """eval/exec are never called; compile only ever in parse-only (AST) mode."""
    texts = [p.read_text(encoding="utf-8") for p in (CORPUS / KIND).glob("*.txt")]
    texts += [p.read_text(encoding="utf-8") for p in (CORPUS / "hostile" / KIND).glob("*.txt")]
    real_compile = builtins.compile
    flags_seen: list[int] = []

    def checked_compile(source, filename, mode, flags=0, *args, **kwargs):  # type: ignore[no-untyped-def]
        flags_seen.append(flags)
        assert flags & ast.PyCF_ONLY_AST, "compile called to produce code, not an AST"
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    def forbidden(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the parser evaluated something")

    with monkeypatch.context() as m:
        m.setattr(builtins, "compile", checked_compile)
        m.setattr(builtins, "eval", forbidden)
        m.setattr(builtins, "exec", forbidden)
        outs = [parse(t, **ABS) for t in texts]
    assert all(o.actions for o in outs)
    assert flags_seen  # the code did go through ast.parse


def test_ast_normalizes_lookalikes_so_source_is_checked() -> None:
    # Why the raw-source check exists: ast NFKC-normalizes identifiers.
    tree = ast.parse("ｐyautogui.click(x=1, y=2)")
    assert tree.body[0].value.func.value.id == "pyautogui"  # type: ignore[attr-defined]
    assert "non-ASCII" in only_problem(parse(code("ｐyautogui.click(x=1, y=2)"), **ABS))


@pytest.mark.parametrize("written", ["(pyautogui).click(x=1, y=2)", "pyautogui\\\n.click(x=1, y=2)",
                                     "( pyautogui ).click(x=1, y=2)"])
def test_a_call_name_written_otherwise_is_refused_by_the_exact_name_check(written: str) -> None:
    # ASCII (the non-ASCII check passes it) and valid Python that ast reads as pyautogui.click: only the check that
    # the name is written exactly `pyautogui.click` refuses it
    assert written.isascii()
    func = ast.parse(written).body[0].value.func  # type: ignore[attr-defined]
    assert (func.value.id, func.attr) == ("pyautogui", "click")
    assert "not exactly 'pyautogui.click'" in only_problem(parse(code(written), **ABS))


# --- mapping details ---------------------------------------------------------------


def test_drag_pair_and_lone_drag() -> None:
    out = parse(code("pyautogui.moveTo(161, 91)\npyautogui.dragTo(322, 182, duration=0.5)"), **ABS)
    _assert_actions(out.actions, [{"type": "drag", "x": 160, "y": 90, "to_x": 320, "to_y": 180}])
    assert "current pointer" in only_problem(parse(code("pyautogui.dragTo(322, 182)"), **ABS))
    assert "statement 1 of 2: pyautogui.dragTo drags from the current pointer" in only_problem(
        parse(code("pyautogui.dragTo(1, 2)\npyautogui.moveTo(3, 4)"), **ABS))
    assert "left-button" in only_problem(
        parse(code("pyautogui.moveTo(1, 2)\npyautogui.dragTo(3, 4, button='right')"), **ABS))


# --- several statements in one block -----------------------------------------------


def test_several_statements_become_their_actions_in_order() -> None:
    out = parse(code("pyautogui.click(x=161, y=91)\npyautogui.write(message='stat')\n"
                     "pyautogui.press(keys=['enter'])"), **ABS)
    _assert_actions(out.actions, [{"type": "click", "x": 160, "y": 90}, {"type": "type", "text": "stat"},
                                  {"type": "key", "key": "enter"}])
    # a drag pair inside a longer block is still one drag, between the actions around it
    out = parse(code("pyautogui.click(x=161, y=91)\npyautogui.moveTo(161, 91)\npyautogui.dragTo(322, 182)\n"
                     "pyautogui.hotkey('ctrl', 'c')"), **ABS)
    assert [a.type for a in out.actions] == ["click", "drag", "hotkey"]  # type: ignore[union-attr]
    # computer.* calls mix with pyautogui ones (OpenCUA writes them in the same block)
    out = parse(code("pyautogui.press('enter')\ncomputer.wait(seconds=2)"), **ABS)
    assert [a.type for a in out.actions] == ["key", "wait"]  # type: ignore[union-attr]


def test_the_statement_bound_is_the_callers() -> None:
    block = code("\n".join(f"pyautogui.click(x={10 + i}, y=10)" for i in range(8)))
    assert len(parse(block, **ABS).actions) == 8 and parse(block, **ABS).ok  # the default bound, exactly
    assert "8 statements in one code block (limit 3)" in only_problem(parse(block, **ABS, max_statements=3))
    assert "9 statements in one code block (limit 8)" in only_problem(
        parse(code("\n".join(["pyautogui.press('a')"] * 9)), **ABS))


def test_one_bad_statement_refuses_the_whole_block_with_its_reason() -> None:
    good = ["pyautogui.click(x=10, y=10)", "pyautogui.write(message='ls')"]
    for bad, reason in (("os.system('ls')", "statement 3 of 3: os.system is not an allowed call"),
                        ("x = 1", "statement 3 of 3: only a call is allowed"),
                        ("pyautogui.click(x=5000, y=1)", "statement 3 of 3: pyautogui.click: x=5000 outside"),
                        ("pyautogui.press('notakey')", "statement 3 of 3: ")):
        out = parse(code("\n".join([*good, bad])), **ABS)
        assert reason in only_problem(out), bad  # one problem, no action of the good statements
    # the schema's own refusal of one statement (an unknown key) names it too
    assert "statement 1 of 2" in only_problem(parse(code("pyautogui.press('nokey')\npyautogui.press('a')"), **ABS))


def test_press_lists_and_repeats() -> None:
    out = parse(code("pyautogui.press(['tab', 'Enter'], presses=2)"), **ABS)
    assert [a.key for a in out.actions] == ["tab", "enter", "tab", "enter"]  # type: ignore[union-attr]
    assert "more than 50" in only_problem(parse(code("pyautogui.press(['a', 'b'], presses=30)"), **ABS))
    assert "keys must be" in only_problem(parse(code("pyautogui.press([])"), **ABS))


def test_hotkey_forms() -> None:
    for c in ("pyautogui.hotkey('ctrl', 'c')", "pyautogui.hotkey(keys=['ctrl', 'c'])",
              "pyautogui.hotkey(['ctrl', 'c'])"):
        out = parse(code(c), **ABS)
        _assert_actions(out.actions, [{"type": "hotkey", "keys": ["ctrl", "c"]}])
    assert "not both" in only_problem(parse(code("pyautogui.hotkey('ctrl', keys=['c'])"), **ABS))


def test_click_variants() -> None:
    assert "1..3" in only_problem(parse(code("pyautogui.click(x=1, y=2, clicks=4)"), **ABS))
    assert "left button" in only_problem(parse(code("pyautogui.click(x=1, y=2, clicks=2, button='right')"), **ABS))
    assert "button must be" in only_problem(parse(code("pyautogui.click(x=1, y=2, button='primary')"), **ABS))
    assert "both x and y" in only_problem(parse(code("pyautogui.click(x=1)"), **ABS))
    assert "at most 6 positional" in only_problem(parse(code("pyautogui.click(1, 2, 1, 0, 'left', 0, 9)"), **ABS))
    assert "seconds" in only_problem(parse(code("pyautogui.click(x=1, y=2, duration=999)"), **ABS))
    out = parse(code("pyautogui.click(x=1, y=2, duration=0.2, interval=0.1)"), **ABS)
    assert out.ok


def test_terminate_and_wait() -> None:
    out = parse(code("computer.terminate(status='failure', answer='no network')"), **ABS)
    _assert_actions(out.actions, [{"type": "finish", "status": "FAIL", "message": "no network"}])
    out = parse(code("computer.wait(seconds=3)"), **ABS)
    _assert_actions(out.actions, [{"type": "wait", "seconds": 3}])
    assert "status must be" in only_problem(parse(code("computer.terminate()"), **ABS))


def test_scroll_checks() -> None:
    assert "needs the number of clicks" in only_problem(parse(code("pyautogui.scroll(x=1, y=2)"), **ABS))
    assert "-100..100" in only_problem(parse(code("pyautogui.scroll(500)"), **ABS))
    assert "whole number" in only_problem(parse(code("pyautogui.scroll(2.5)"), **ABS))
    out = parse(code("pyautogui.scroll(-3.0)"), **ABS)
    _assert_actions(out.actions, [{"type": "scroll", "dy": -3, "x": None, "y": None}])


def test_empty_text_is_a_problem() -> None:
    assert "invalid type action" in only_problem(parse(code("pyautogui.write('')"), **ABS))


def test_sections_and_reasoning() -> None:
    text = "<think>first I look</think>\n## Action:\nPress enter.\n## Code:\n```python\npyautogui.press('enter')\n```"
    out = parse(text, **ABS)
    assert out.reasoning == "first I look" and out.thought == "Press enter." and out.ok
    # an opening <think> in the prompt: only the closing tag appears in the answer
    out = parse("I consider options</think>\n```python\npyautogui.press('esc')\n```", **ABS)
    assert out.reasoning == "I consider options" and out.ok
    # truncated inside <think>: everything after it is reasoning, no code
    out = parse("<think>still thinking ```python\npyautogui.press('esc')\n```", **ABS)
    assert out.reasoning and "no code found" in only_problem(out)
    # a bare code line as the whole answer
    out = parse("pyautogui.click(x=161, y=91)", **ABS)
    _assert_actions(out.actions, [{"type": "click", "x": 160, "y": 90}])
    assert out.raw_action_text == "pyautogui.click(x=161, y=91)"
    # comments inside code are not section headings
    out = parse("## Thought:\nreal thought\n## Code:\n```python\n# Action: fake\npyautogui.press('a')\n```", **ABS)
    assert out.thought == "real thought" and out.ok


def test_misconfigured_setup_is_a_problem_not_an_exception() -> None:
    out = parse(code("pyautogui.click(x=1, y=2)"), convention="pixels", sent_size=SENT, captured_size=CAPTURED)
    assert "parser misconfigured" in only_problem(out)
    out = parse(code("pyautogui.click(x=1, y=2)"), convention="absolute", sent_size=(0, 5), captured_size=CAPTURED)
    assert "sent_size" in only_problem(out)
    assert "must be text" in only_problem(parse(None, **ABS))  # type: ignore[arg-type]


# --- conventions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "convention,point,bad,reason",
    [
        ("absolute", (966, 546), (1932, 10), "outside the 1932x1092 image sent to the model"),
        ("relative", (0.5, 0.5), (1.01, 0.5), "outside 0..1"),
        ("relative1000", (500, 500), (1000.5, 10), "outside 0..1000"),
        ("screen", (960, 540), (1920, 10), "outside the 1920x1080 captured screenshot"),
    ],
)
def test_each_convention(convention: str, point: tuple, bad: tuple, reason: str) -> None:
    setup = dict(convention=convention, sent_size=SENT, captured_size=CAPTURED)
    out = parse(code(f"pyautogui.click(x={point[0]}, y={point[1]})"), **setup)
    _assert_actions(out.actions, [{"type": "click", "x": 960, "y": 540}])
    assert reason in only_problem(parse(code(f"pyautogui.click(x={bad[0]}, y={bad[1]})"), **setup))


def test_relative_edge_stays_on_the_image() -> None:
    out = parse(code("pyautogui.click(x=1.0, y=1.0)"), **REL)
    _assert_actions(out.actions, [{"type": "click", "x": 1919, "y": 1079}])


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(list(Convention)),
    st.floats(0, 1919.99), st.floats(0, 1079.99),
)
def test_round_trip_through_geometry(convention: Convention, cx: float, cy: float) -> None:
    mx, my = captured_to_model(cx, cy, convention, SENT, CAPTURED)
    out = parse(code(f"pyautogui.moveTo(x={mx!r}, y={my!r})"), convention=convention,
                sent_size=SENT, captured_size=CAPTURED)
    if out.ok:
        a = out.actions[0]
        assert a.x == pytest.approx(cx, abs=0.01) and a.y == pytest.approx(cy, abs=0.01)  # type: ignore[union-attr]
    else:  # only a model coordinate that rounds onto the far edge may be refused
        assert "outside" in only_problem(out)


# --- fuzzing ------------------------------------------------------------------------

FRAGMENTS = [
    "## Thought:\n", "## Action:\n", "## Code:\n", "## Observation:\n", "```python\n", "```\n", "```code\n",
    "```", "pyautogui.", "computer.", "click", "doubleClick", "moveTo", "dragTo", "scroll", "hscroll",
    "write", "press", "hotkey", "terminate", "triple_click", "wait", "typewrite", "(", ")", "x=", "y=",
    ", ", "1", "-", "0.5", "1e309", "99999999999", "'a'", '"', "'", "[", "]", "keys=", "presses=",
    "status='success'", "answer=", "\n", ";", "__import__", "os.system", "р", "ｐ", "<think>",
    "</think>", "**", "*", "=", "lambda", "f'", "{", "}", "\\", "\x00", " ", "button='right'",
    "clicks=3", "message=", "True", "None", "getattr", ".__dict__", "import os", "\t", "#",
]
near_miss = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)


def _literal() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(-2000, 3000).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=12).map(repr), st.lists(st.text(max_size=5), max_size=4).map(repr),
        st.sampled_from(["x", "None", "True", "os.sep", "f'{1}'", "(1, 2)", "-0.0", "+3", "{}", "1j"]),
    )


structured = st.builds(
    lambda name, args, kwargs, fence: (
        f"## Code:\n{fence}\n{name}({', '.join(args + [f'{k}={v}' for k, v in kwargs])})\n{fence}"
    ),
    st.sampled_from(sorted(ALLOWED_CALLS) + ["pyautogui.keyDown", "os.system", "computer.exec"]),
    st.lists(_literal(), max_size=4),
    st.lists(st.tuples(st.sampled_from(["x", "y", "clicks", "button", "keys", "message", "status",
                                        "presses", "seconds", "answer", "duration", "zz"]), _literal()),
             max_size=4),
    st.sampled_from(["```python", "```", "```code"]),
)


def _check_invariants(out: ParsedOutput) -> None:
    assert isinstance(out, ParsedOutput)
    assert out.actions, "a parse always yields an action or a problem"
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
    for text in ["```python\n" + "(" * 5000 + "\n```", "```python\n" + "pyautogui.click(1,2)\n" * 3000 + "```",
                 "```python\n" + "1" * 10000 + "\n```", "x" * 300_000, "```python\npyautogui.write('" + "a" * 15_000 + "')\n```"]:
        out = parse(text, **ABS)
        assert all(isinstance(a, ActionProblem) for a in out.actions)
        assert not any("internal" in a.message for a in out.actions)  # type: ignore[union-attr]


# --- the identifier check reads a bounded number of tokens (found by the fuzz proof: 90 ms per 19k chars) ----


def test_a_token_dense_non_ascii_code_block_is_refused_after_500_tokens() -> None:
    out = parse("```python\npyautogui.click(x=1" + "+1" * 9000 + ", y=2) # é\n```", **ABS)
    assert "more than 500 tokens" in only_problem(out)


def test_non_ascii_names_are_still_refused_and_non_ascii_text_still_typed() -> None:
    assert "non-ASCII" in only_problem(parse("```python\npyautogui.clіck(x=1, y=2)\n```", **ABS))  # Cyrillic і
    out = parse("```python\npyautogui.write(message='héllo ✓')\n```", **ABS)
    assert out.ok and out.actions[0].model_dump()["text"] == "héllo ✓"


def test_an_answer_of_thousands_of_lines_is_refused_before_the_heading_scan() -> None:
    out = parse("\n" * 199_000, **ABS)
    assert "not an OpenCUA answer: 199001 lines" in only_problem(out)
    ok = parse("## Thought:\n" + "a line of thought\n" * 4000 + "## Code:\n```python\npyautogui.click(x=1, y=2)\n```",
               **ABS)
    assert ok.ok, ok.actions


def test_python_syntax_warnings_stay_inside_the_parser() -> None:
    """ast.parse warns on stderr about '0x7fin' (found by the fuzz proof); the rejection is the message."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = parse("```python\npyautogui.click(x=0x7fffffffin, y=1e5in)\n```", **ABS)
    assert "not valid Python" in only_problem(out)
    assert not caught, [str(w.message) for w in caught]
