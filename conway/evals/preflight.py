"""`conway preflight [--desktop] [--output FILE]`: is this home and setup ready to run?

Checks, each reported with what was observed: the configuration validates;
constitution.md is there; recovery state (a pending intent in state.json, a
a lock held by a running agent, a torn journal tail); available memory; the model (endpoint
reachable and serving the configured model, or the local GGUF + mmproj
present and fitting); who writes memory's summary (a configured summariser
reachable or present). It never downloads anything. `--desktop` adds a
time-bounded screenshot in a subprocess; its temporary image is deleted and
never sent to a model, and the context check sizes the image from its size. Without `--desktop` the report says desktop readiness
was not checked.

The checks live in `conway/readiness/` (shared with doctor and probe); this
module selects them, writes the report and prints the table.

Exit 0 ready, 2 not ready (the failed checks are the reasons), 1 setup error.
"""

from __future__ import annotations

import sys
import time
from typing import Callable

from conway.args.command import CommandPiece, Subparsers, add_model_args, add_overrides, cmd
from conway.args.resolve import config_of, home_of, require_model
from conway.config import ConwayConfig
from conway.errors import ExitCode, UserError
from conway.evals.report import Report, check_new_output
from conway.evals.text import table
from conway.readiness.checks import Check
from conway.readiness.checks.extensions import mcp_checks, prompt_parts, skills_check
from conway.readiness.checks.home_files import (
    configuration_check,
    constitution_check,
    home_layout_check,
    recovery_checks,
    workdir_check,
)
from conway.readiness.checks.host import desktop_check, memory_check
from conway.readiness.checks.memory_summary import summariser_check
from conway.readiness.checks.model_runtime import model_checks
from conway.redact import redact_text
from conway.store.home import Home
from conway.store.state import STDOUT


def select_checks(home: Home, load_config: Callable[[], ConwayConfig],
                  desktop: bool = False) -> tuple[list[Check], ConwayConfig | None]:
    """The checks preflight runs, in the order it reports them, and the configuration when it loaded."""
    checked, config = configuration_check(load_config)
    checks = [checked, constitution_check(home), home_layout_check(home), *recovery_checks(home), memory_check()]
    screen = desktop_check() if desktop else \
        Check("desktop", "not_checked", "desktop readiness was not checked (add --desktop)")
    captured = screen.data.get("captured_size") if screen.ok else None
    if config is not None:
        skills = skills_check(config, home.root)
        servers, mcp_listing = mcp_checks(config, home)
        checks += [*model_checks(config, home, prompt_parts(config, home, mcp_listing),
                                 tuple(captured) if captured else None),
                   summariser_check(config), skills, *servers, workdir_check(config, home)]
    else:
        checks.append(Check("model", "not_checked", "the configuration is invalid"))
    checks.append(screen)
    return checks, config


def preflight(home: Home, load_config: Callable[[], ConwayConfig], *, output: str | None = None,
              desktop: bool = False, argv: list[str] | None = None, say: Callable[[str], None] = print) -> int:
    """Run the checks and print them; `output`: also write the report there (`/dev/stdout`: the report alone
    on standard output, the table on stderr)."""
    started = time.time()
    out = check_new_output(output, home, stdout_ok=True) if output is not None else None
    if out == STDOUT:
        say = _to_stderr
    checks, config = select_checks(home, load_config, desktop)
    failed = [c for c in checks if c.status == "fail"]
    code = ExitCode.NOT_PASSED if failed else ExitCode.PASSED
    if out is not None:
        report = Report("preflight", out, argv=argv, config=config,
                        parameters={"desktop": desktop, "downloads": "never"}, started=started)
        found = [c.data["model_id"] for c in checks if c.data.get("model_id")]
        report.set_model(found[0] if found else (config.policy.model if config is not None else None))
        for c in checks:
            report.add_case(c.record())
        report.finish(status="not ready" if failed else "ready", exit_code=code,
                      summary={"ready": not failed, "failed": [c.check for c in failed],
                               "warnings": [c.check for c in checks if c.status == "warn"],
                               "desktop_checked": desktop})
    say(redact_text(table(["check", "status", "detail"], [[c.check, c.status, c.detail] for c in checks])))
    if failed:
        say(redact_text("not ready: " + "; ".join(f"{c.check}: {c.detail}" for c in failed)))
    else:
        say("ready" + ("" if desktop else " (desktop readiness not checked; add --desktop)"))
    if out is not None and out != STDOUT:
        say(f"report: {out}")
    return code


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


# --- its command, `conway preflight` (registered with its kind in conway.evals.suites) ---


def _add_parser(sub: Subparsers) -> None:
    p = cmd(sub, "preflight", "check configuration, constitution, recovery state, memory and model readiness",
            "Check that this home and setup are ready to run. Never downloads anything.\n"
            "Exit 0 ready, 2 not ready (with the reasons), 1 setup error.")
    add_model_args(p)
    p.add_argument("--desktop", action="store_true",
                   help="also take one time-bounded screenshot (deleted at once, never sent to a model)")
    p.add_argument("--output", metavar="FILE", help="also write the report to this new file (never overwritten; not "
                   "in the home); /dev/stdout: the report alone on standard output")
    add_overrides(p)


def _run_command(args) -> int:
    home = home_of(args)
    try:
        cfg = config_of(args, home)
    except UserError:
        cfg = None  # an invalid configuration is preflight's to report, as its first check
    if cfg is not None:
        require_model(args, home, cfg)
    return preflight(home, lambda: config_of(args, home), output=args.output, desktop=args.desktop, argv=args._argv)


COMMAND = CommandPiece("preflight", _add_parser, _run_command, after="mcp-serve")
