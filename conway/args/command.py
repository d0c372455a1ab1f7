"""A command's piece (name, parser, handler) and the argument groups several commands share."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Callable

OVERRIDE = re.compile(r"^[+~]?[A-Za-z_][A-Za-z0-9_.]*=")
"""A `key=value` override among a command's words (Hydra's, with its `+` and `~`)."""

Subparsers = argparse._SubParsersAction
AddParser = Callable[[Subparsers], None]


@dataclass(frozen=True)
class CommandPiece:
    """One subcommand: what `build_parser` adds and what `run_command` calls (a suite declares its own in its
    `SuiteKind`, `conway.evals.suites`)."""

    name: str
    add_parser: AddParser
    run: Callable[[argparse.Namespace], int]
    after: str
    """The command it follows in `conway --help` (the list's order is kept by these anchors, not by edits to a
    central list)."""


def cmd(sub: Subparsers, name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=description or help,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def add_overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("overrides", nargs="*", metavar="key=value",
                   help="configuration overrides (e.g. agent.max_steps=5, policy=opencua-7b)")


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mock", action="store_true", help="use the offline scripted mock policy (no model, no desktop)")
    p.add_argument("--mock-script", metavar="FILE", help="YAML/JSONL script of mock decisions (implies --mock)")
    p.add_argument("--endpoint", metavar="URL", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--model", metavar="ID", help="served model id (required when the endpoint serves several)")
