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


def add_desktop_args(p: argparse.ArgumentParser, default: str) -> None:
    """`--desktop NAME` and `--desktop-url URL`: the task desktop a command builds at the seam's one construction
    point (`conway.desktops.open_desktop`), by the providers' short names (`tasks.desktop`)."""
    p.add_argument("--desktop", metavar="NAME", help="run on a fresh task desktop of this provider (local, osworld, "
                   f"qemu: as tasks.desktop, configured by tasks.desktop_url and tasks.desktop_options.*); {default}")
    p.add_argument("--desktop-url", metavar="URL", help="the machine whose OSWorld guest server answers at URL "
                   "(http://HOST:PORT): --desktop osworld with tasks.desktop_url=URL")


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mock", action="store_true", help="use the offline scripted mock policy (no model, no desktop)")
    p.add_argument("--mock-script", metavar="FILE", help="YAML/JSONL script of mock decisions (implies --mock)")
    p.add_argument("--endpoint", metavar="URL", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--model", metavar="ID", help="served model id (required when the endpoint serves several)")
