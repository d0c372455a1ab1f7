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


def test_the_lists_of_kinds_keep_their_order():
    assert [k.name for k in having("view")] == ["vision-check", "grounding-check", "candidate-eval", "tasks", "sweep",
                                                 "learning-curve"]
    assert [k.name for k in having("records")] == ["vision-check", "grounding-check", "tasks"]
    assert list(metrics()) == ["vision-check", "grounding-check", "tasks run"]


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
    assert [c.name for c in owned] == ["vision-check", "grounding-check", "preflight", "acceptance-check"]
    for piece in owned:
        assert names.index(piece.name) == names.index(piece.after) + 1, piece.name
        assert piece.name not in commands.COMMANDS  # one handler per command: the suite's
    ran = []
    kind = suite_kind("vision-check")
    handler = dataclasses.replace(kind.command, run=lambda args: ran.append(args.command) or 0)
    monkeypatch.setitem(KINDS, "vision-check", dataclasses.replace(kind, command=handler))
    assert commands.run_command(argparse.Namespace(command="vision-check")) == 0 and ran == ["vision-check"]
