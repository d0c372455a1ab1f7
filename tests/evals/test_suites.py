"""The suite-kind registry (`conway.evals.suites`): every consumer finds what a kind declares."""

from __future__ import annotations

from conway.cli.main import build_parser
from conway.evals.suites import KINDS, having, suite_kind
from conway.evals.sweep import metrics
from conway.view.reports import LAYOUTS


def test_every_viewed_kind_names_a_layout_the_viewer_draws():
    for kind in having("view"):
        assert kind.view is not None and kind.view.layout in LAYOUTS, kind.name
        assert kind.view.layout != "click" or kind.view.caption is not None, kind.name
        assert set(kind.view.error_outcomes) <= set(kind.view.outcomes), kind.name


SHIPPED = ["vision-check", "grounding-check", "candidate-eval", "tasks", "sweep", "preflight", "acceptance-check",
           "session", "replay"]
"""The kinds Conway ships, in the order they are registered. A new suite adds its kind without editing this list
(the docs promise 2 files: its module and one `register` line): every check below reads the registry and holds
only the shipped kinds' relative order."""


def _shipped(names: list[str]) -> list[str]:
    return [n for n in names if n in SHIPPED]


def test_the_lists_of_kinds_follow_the_registration_order():
    order = list(KINDS)
    assert _shipped(order) == [n for n in SHIPPED if n in KINDS]
    for facet in ("view", "records", "sweep", "command", "text"):
        assert [k.name for k in having(facet)] == [n for n in order if getattr(KINDS[n], facet) is not None], facet
    assert list(metrics()) == [KINDS[n].sweep.command for n in order if KINDS[n].sweep is not None]
    assert _shipped([k.name for k in having("view")]) == ["vision-check", "grounding-check", "candidate-eval",
                                                          "tasks", "sweep"]
    assert _shipped([k.name for k in having("records")]) == ["vision-check", "grounding-check", "tasks"]


def test_a_sweep_runs_commands_the_cli_has():
    import argparse

    def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    for command in metrics():
        parser = build_parser()
        for word in command.split():  # `tasks run`: a group's subcommand
            parser = commands(parser)[word]


def test_every_kind_renders_text_and_an_unknown_kind_is_none():
    assert all(k.text is not None for k in KINDS.values())
    assert suite_kind("no-such-kind") is None
    assert suite_kind(None) is None


def test_a_suites_own_command_is_listed_after_its_anchor_and_runs_its_handler(monkeypatch):
    import argparse
    import dataclasses

    from conway.cli import commands

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    names = list(sub.choices)
    owned = [k.command for k in having("command") if k.command is not None]
    assert _shipped([c.name for c in owned]) == ["vision-check", "grounding-check", "preflight", "acceptance-check"]
    for piece in owned:
        assert names.index(piece.name) == names.index(piece.after) + 1, piece.name
        assert piece.name not in commands.COMMANDS  # one handler per command: the suite's
    ran = []
    kind = suite_kind("vision-check")
    handler = dataclasses.replace(kind.command, run=lambda args: ran.append(args.command) or 0)
    monkeypatch.setitem(KINDS, "vision-check", dataclasses.replace(kind, command=handler))
    assert commands.run_command(argparse.Namespace(command="vision-check")) == 0 and ran == ["vision-check"]


def test_a_new_kind_registered_once_is_read_by_report_without_another_edit(tmp_path, monkeypatch):
    # the docs promise 2 files for a new suite (its module and a `register` line); the registry is all they read
    import json

    from conway.evals.kinds import SuiteKind
    from conway.evals.report_render import render_report

    toy = SuiteKind("toy-check", text=lambda data, cases, max_rows: [f"  toys counted: {len(cases)}"])
    monkeypatch.setitem(KINDS, "toy-check", toy)
    path = tmp_path / "toy.json"
    path.write_text(json.dumps({"format": "conway-report/1", "kind": "toy-check", "status": "pass", "exit_code": 0,
                                "cases": [{}, {}]}))
    assert "  toys counted: 2" in render_report(path).splitlines()
    assert [k.name for k in having("text")][-1] == "toy-check"
