"""The `conway tasks` command group: parsing and one function per subcommand (`list`; `run` joins it here)."""

from __future__ import annotations

import argparse
import json
from typing import Callable

from conway.errors import ExitCode

SUITE_HELP = ("a folder of task files (searched recursively; OSWorld's examples/<domain>/<id>.json gives the "
              "domain), task files (.json in OSWorld's format, .md in Conway's), or an OSWorld test_*.json index")
LIST_DESCRIPTION = f"""\
Load a suite and say, for each task, whether it can run on this machine and, when it cannot, every reason:
a setup step type, getter or metric not implemented, an application not installed, a downloaded or cloud
file missing from the local cache (naming its URL), or a live URL the task needs at run time. Files that
do not load (malformed JSON, an id an index lists but whose file is missing, a duplicate id) are listed
apart, one line each. Nothing here runs a task.

  conway tasks list evals/tasks
  conway tasks list ~/OSWorld/evaluation_examples/test_small.json --cache ~/OSWorld/cache --json

Exit {ExitCode.PASSED:d} every task can run here, {ExitCode.NOT_PASSED:d} some cannot (or some files did not load), \
{ExitCode.SETUP_ERROR:d} bad input (a missing suite or cache, nothing loadable)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `tasks` group under the main parser's subcommands; each subcommand adds its own parser here."""
    p = sub.add_parser("tasks", help="task suites in OSWorld's format or Conway's: which can run here (list)",
                       description="Task suites: OSWorld's task JSON read as is, and Conway's Markdown task files.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    group = p.add_subparsers(dest="tasks_command", metavar="SUBCOMMAND", parser_class=type(p))
    group.required = True
    lp = group.add_parser("list", help="which tasks can run here, and why not", description=LIST_DESCRIPTION,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    lp.add_argument("suite", nargs="+", metavar="SUITE", help=SUITE_HELP)
    lp.add_argument("--cache", metavar="DIR", help="the local cache in OSWorld's layout (<DIR>/<task id>/…): the "
                    "files download steps and cloud_file getters use; never fetched from the network")
    lp.add_argument("--json", action="store_true", help="print the listing as JSON (conway-task-list/1)")


def step_types() -> frozenset[str]:
    # the sandbox's STEP_TYPES (conway.sandbox) goes here when it is merged; until then no setup step runs
    return frozenset()


def do_list(args) -> int:
    from conway.tasks.listing import exit_code, list_suite, render_listing
    record = list_suite(args.suite, cache=args.cache, step_types=step_types())
    print(json.dumps(record, indent=2) if args.json else render_listing(record))
    return exit_code(record)


SUBCOMMANDS: dict[str, Callable] = {"list": do_list}


def do_tasks(args) -> int:
    return SUBCOMMANDS[args.tasks_command](args)
