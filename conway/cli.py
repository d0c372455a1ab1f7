"""The `conway` command: argument parsing only; each subcommand calls one function elsewhere."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from . import __version__
from .errors import UserError

EPILOG = """\
Put --home PATH (or set CONWAY_HOME) before the subcommand; the default home is ~/.conway.
Settings: key=value overrides after a command, e.g. `conway run agent.max_steps=5 policy=generic`.
Start here: conway init && conway run --mock --max-steps 5
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # user mistakes exit 1 with a hint, never 2 or a traceback
        self.print_usage(sys.stderr)
        sys.stderr.write(f"conway: error: {message}\n(see `{self.prog} --help`)\n")
        raise SystemExit(1)


def _add_overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("overrides", nargs="*", metavar="key=value",
                   help="configuration overrides (e.g. agent.max_steps=5, policy=opencua-7b)")


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mock", action="store_true", help="use the offline scripted mock policy (no model, no desktop)")
    p.add_argument("--mock-script", metavar="FILE", help="YAML/JSONL script of mock decisions (implies --mock)")
    p.add_argument("--endpoint", metavar="URL", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--model", metavar="ID", help="served model id (required when the endpoint serves several)")


def _add_budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-steps", type=int, metavar="N", help="stop after N cycles")
    p.add_argument("--max-seconds", type=float, metavar="S", help="stop after S seconds (checked between steps)")
    p.add_argument("--quiet", action="store_true", help="print nothing per cycle (state and journal still record all)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="conway", description="Conway: a continuous observe → decide → act agent around a "
                     "replaceable local vision-language model, with file memory and an append-only journal.",
                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", metavar="PATH", help="Conway home (default: $CONWAY_HOME or ~/.conway)")
    parser.add_argument("--version", action="version", version=f"conway {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def cmd(name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description or help,
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    cmd("init", "create the home layout, a starter constitution.md and goals.md (existing files are kept)")
    p = cmd("doctor", "report Python, platform, CPU, memory, disk, optional extras and which tools actually run here")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_overrides(p)

    p = cmd("run", "run the agent continuously until stopped",
            "Run the continuous loop: observe, decide, act, record, forever (or within --max-steps/--max-seconds).\n"
            "A model's finish is recorded and the loop carries on. Never reads stdin; control it from another\n"
            "terminal with `conway status|pause|resume|stop`.")
    _add_model_args(p)
    _add_budget_args(p)
    p.add_argument("--observe", action="store_true",
                   help="capture real observations and plan without dispatching any action (dry run)")
    _add_overrides(p)

    p = cmd("start", "run one session; a finish ends it",
            "Run a single session. Without --execute the session only plans (no action is dispatched).")
    _add_model_args(p)
    _add_budget_args(p)
    p.add_argument("--execute", action="store_true", help="dispatch actions (default: plan only)")
    p.add_argument("--task", metavar="TEXT", help="the task for this session")
    p.add_argument("--task-file", metavar="FILE", help="a UTF-8 file holding the task")
    _add_overrides(p)

    p = cmd("status", "show the agent's state, whether its pid is alive, the pending intent and the last events")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    cmd("pause", "ask the running agent to pause between steps")
    cmd("resume", "ask a paused agent to continue")
    cmd("stop", "ask the running agent to stop (an action returned by an in-flight decision is discarded)")

    p = cmd("config", "validate and print the resolved configuration")
    p.add_argument("--check", action="store_true", help="validate (the default action) and print the result")
    _add_overrides(p)

    p = cmd("export", "write the journal as trajectory records (JSONL, one per step)")
    p.add_argument("--output", required=True, metavar="FILE", help="new file to write (never overwritten)")
    p.add_argument("--include-dry-runs", action="store_true", help="also export planned-only steps")
    return parser


# --- command functions -------------------------------------------------------


def _home(args):
    from .home import resolve_home
    return resolve_home(args.home)


def _config(args, home, extra: list[str] | None = None):
    from .config import load_config
    overrides = list(getattr(args, "overrides", []) or [])
    if getattr(args, "mock", False) or getattr(args, "mock_script", None):
        overrides.insert(0, "policy=mock")
        if args.mock_script:
            overrides.append(f"policy.mock_script={Path(args.mock_script).expanduser().resolve()}")
    if getattr(args, "endpoint", None):
        overrides.append(f"policy.endpoint={args.endpoint}")
    if getattr(args, "model", None):
        overrides.append(f"policy.model={args.model}")
    for flag, key in (("max_steps", "agent.max_steps"), ("max_seconds", "agent.max_seconds")):
        value = getattr(args, flag, None)
        if value is not None:
            if value <= 0:
                raise UserError(f"--{flag.replace('_', '-')} must be positive (got {value})")
            overrides.append(f"{key}={value}")
    return load_config(home.config, overrides + (extra or []))


def do_init(args) -> int:
    from .home import init_home
    home = _home(args)
    for msg in init_home(home):
        print(msg)
    print(f"home: {home.root}")
    print(f"goals: {home.goals}  (edit it; the agent rereads it every cycle)")
    return 0


def do_doctor(args) -> int:
    from .app import workdir_for
    from .doctor import doctor, render_doctor
    home = _home(args)
    cfg = _config(args, home)
    report = doctor(cfg, workdir_for(cfg, home) if home.root.exists() else Path.cwd())
    print(json.dumps(report, indent=2) if args.json else render_doctor(report))
    return 0


def _require_home(home) -> None:
    if not home.constitution.exists():
        raise UserError(f"{home.root} has no constitution.md; run `conway init` first")


def do_run(args) -> int:
    from .app import RunRequest, run_agent
    home = _home(args)
    _require_home(home)
    cfg = _config(args, home)
    outcome, _ = run_agent(home, cfg, RunRequest(single_session=False, dry_run=args.observe, quiet=args.quiet))
    return 1 if outcome.reason.startswith(("uncertain", "fail-safe")) else 0


def do_start(args) -> int:
    from .app import RunRequest, run_agent
    home = _home(args)
    _require_home(home)
    task = read_task(args.task, args.task_file)
    cfg = _config(args, home)
    outcome, _ = run_agent(home, cfg, RunRequest(single_session=True, dry_run=not args.execute,
                                                 quiet=args.quiet, task=task))
    if not args.execute and not args.quiet:
        print("plan only: nothing was dispatched (add --execute to act)")
    return 1 if outcome.reason.startswith(("uncertain", "fail-safe")) else 0


def read_task(text: str | None, file: str | None) -> str | None:
    if text and file:
        raise UserError("give either --task or --task-file, not both")
    if file:
        path = Path(file).expanduser()
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise UserError(f"task file {path} does not exist") from None
        except OSError as exc:
            raise UserError(f"cannot read task file {path}: {exc.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"task file {path} is not UTF-8 (byte {exc.start}); save it as UTF-8") from None
        if not text.strip():
            raise UserError(f"task file {path} is empty")
    if text is not None and not text.strip():
        raise UserError("--task is empty")
    return text


def do_status(args) -> int:
    from .app import status_report
    home = _home(args)
    report = status_report(home)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    print(f"home:     {report['home']}")
    print(f"session:  {report['session'] or '-'}")
    print(f"status:   {report['status']}" + (f" ({report['stop_reason']})" if report.get("stop_reason") else ""))
    print(f"pid:      {report['pid'] or '-'} ({'alive' if report['pid_alive'] else 'not running'})")
    print(f"step:     {report['step'] if report['step'] is not None else '-'}")
    print(f"model:    {report['model_id'] or '-'}")
    pending = report["pending_intent"]
    print(f"pending:  {pending['summary'] if pending else 'none'}")
    if report["state_recovery"]:
        print(f"recovery: {report['state_recovery']}")
    if report["last_events"]:
        print("last events:")
        for e in report["last_events"]:
            print(f"  {e['ts']}  step {e['step']:>4}  {e['kind']:<11} {e['summary']}")
    return 0


def _control(request: str) -> Callable:
    def run(args) -> int:
        from .app import send_control
        print(send_control(_home(args), request))
        return 0
    return run


def do_config(args) -> int:
    from .config import to_yaml
    home = _home(args)
    cfg = _config(args, home)
    print(f"# configuration valid (digest {cfg.digest()[:12]})")
    print(to_yaml(cfg), end="")
    return 0


def do_export(args) -> int:
    from .export import export_trajectory
    home = _home(args)
    out = Path(args.output).expanduser()
    n, skipped = export_trajectory(home.journal_dir, out, include_dry_runs=args.include_dry_runs)
    print(f"wrote {n} step record(s) to {out}")
    if skipped:
        print(f"skipped {len(skipped)} unreadable journal line(s): {', '.join(skipped[:5])}")
    return 0


COMMANDS: dict[str, Callable] = {
    "init": do_init, "doctor": do_doctor, "run": do_run, "start": do_start, "status": do_status,
    "pause": _control("pause"), "resume": _control("resume"), "stop": _control("stop"),
    "config": do_config, "export": do_export,
}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except UserError as exc:
        sys.stderr.write(f"conway: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("conway: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
