"""The entry every parser shares (`conway.policies.parsed.parser` / `run_parser`)."""

from __future__ import annotations

import inspect
import pickle

import pytest

from conway.policies.families.generic import parse as parse_json
from conway.policies.families.opencua import parse as parse_opencua
from conway.policies.families.qwen3vl import parse as parse_qwen3vl
from conway.policies.families.uitars import parse as parse_uitars
from conway.policies.parsed import MAX_TEXT_CHARS, ParsedOutput, parser, run_parser

SETUP = dict(convention="absolute", sent_size=(100, 100), captured_size=(100, 100))


def _echo(visible, reasoning, convention, sent_size, captured_size):
    return ParsedOutput(visible, [], reasoning, f"{convention} {sent_size} {captured_size}")


def test_the_body_gets_the_visible_text_and_the_reasoning_apart() -> None:
    out = parser("Echo", _echo, "Echo.")("<think>why</think>the answer", **SETUP)
    assert (out.thought, out.reasoning, out.raw_action_text) == ("the answer", "why", "absolute (100, 100) (100, 100)")


def test_an_exception_in_the_body_becomes_a_problem_naming_the_parser() -> None:
    def boom(*args):
        raise RuntimeError("boom")

    out = parser("Echo", boom, "Echo.")("text", **SETUP)
    assert [p.message for p in out.problems] == ["internal Echo parser error (RuntimeError: boom)"]
    assert out.actions[0].raw == "text"  # type: ignore[union-attr]
    assert run_parser("Echo", boom, "text", 1, 2).problems[0].message == out.problems[0].message


@pytest.mark.parametrize("text, message", [
    (b"bytes", "model output must be text, got bytes"),
    ("x" * (MAX_TEXT_CHARS + 1), f"model output is {MAX_TEXT_CHARS + 1} chars (limit {MAX_TEXT_CHARS})"),
])
def test_input_is_checked_before_the_body_runs(text: object, message: str) -> None:
    def never(*args):
        raise AssertionError("the body ran")

    assert [p.message for p in parser("Echo", never, "Echo.")(text, **SETUP).problems] == [message]  # type: ignore[arg-type]


@pytest.mark.parametrize("module", [parse_json, parse_qwen3vl, parse_uitars])
def test_a_made_parse_reads_as_its_modules_own(module) -> None:
    parse = module.parse
    assert (parse.__module__, parse.__qualname__) == (module.__name__, "parse")
    assert parse.__doc__ and parse.__doc__.startswith("Parse one ")
    assert pickle.loads(pickle.dumps(parse)) is parse
    params = inspect.signature(parse).parameters
    assert list(params) == ["text", "convention", "sent_size", "captured_size"]
    assert all(p.kind is p.KEYWORD_ONLY for name, p in params.items() if name != "text")
    with pytest.raises(TypeError):
        parse("text", "absolute", (100, 100), (100, 100))  # type: ignore[misc]


def test_opencua_keeps_its_own_option() -> None:
    text = "```python\npyautogui.press('a')\npyautogui.press('b')\n```"
    assert [a.key for a in parse_opencua.parse(text, **SETUP).actions] == ["a", "b"]  # type: ignore[union-attr]
    out = parse_opencua.parse(text, **SETUP, max_statements=1)
    assert out.problems[0].message == "rejected OpenCUA code: 2 statements in one code block (limit 1)"
