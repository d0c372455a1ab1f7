"""Shared corpus, setup and assertion helpers for the model-output parser tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conway.actions import ActionProblem, _Action
from conway.policies.parsed import ParsedOutput

CORPUS = Path(__file__).parents[1] / "data" / "parser_corpus"
SENT, CAPTURED = (1932, 1092), (1920, 1080)
ABS = dict(convention="absolute", sent_size=SENT, captured_size=CAPTURED)


def load_hostile(kind: str) -> dict:
    """The expected outcome of each hostile corpus case of one parser kind."""
    return json.loads((CORPUS / "hostile" / "EXPECTED.json").read_text(encoding="utf-8"))[kind]


def hostile_text(kind: str, name: str, sentinel: Path) -> str:
    """One hostile corpus case, with SENTINEL pointing at a file that must never appear."""
    text = (CORPUS / "hostile" / kind / f"{name}.txt").read_text(encoding="utf-8")
    return text.replace("SENTINEL", str(sentinel))


def _setup(d: dict) -> dict:
    return dict(convention=d["convention"], sent_size=tuple(d["sent_size"]),
                captured_size=tuple(d["captured_size"]))


def _assert_actions(actual: list, expected: list[dict]) -> None:
    assert len(actual) == len(expected), actual
    for a, e in zip(actual, expected):
        assert isinstance(a, _Action), a
        dumped = a.model_dump()
        for k, v in e.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                assert dumped[k] == pytest.approx(v, abs=0.01), (k, dumped)
            else:
                assert dumped[k] == v, (k, dumped)


def only_problem(out: ParsedOutput) -> str:
    assert len(out.actions) == 1 and isinstance(out.actions[0], ActionProblem), out.actions
    return out.actions[0].message


def assert_hostile_problems(out: ParsedOutput, reason: str) -> None:
    """A hostile case yields only problems, one naming the reason, none internal."""
    assert out.actions and all(isinstance(a, ActionProblem) for a in out.actions), out.actions
    messages = [a.message for a in out.actions]
    assert any(reason in m for m in messages), messages
    assert not any("internal" in m for m in messages), messages

