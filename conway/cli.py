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
    p.add_argument("--max-steps", type=int, metavar="N",
                   help="stop after the model has made N decisions (cycles without an answer -- rate limits, "
                        "failed or timed-out requests -- do not count; --max-seconds bounds those)")
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
    p.add_argument("--task-file", metavar="FILE", help="a UTF-8 file holding the task (may declare acceptance criteria)")
    p.add_argument("--output", metavar="FILE", help="also write a session report (a new file outside the home)")
    _add_overrides(p)

    p = cmd("status", "show the agent's state, whether its pid is alive, the pending intent and the last events")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    cmd("pause", "ask the running agent to pause between steps")
    cmd("resume", "ask a paused agent to continue")
    cmd("stop", "ask the running agent to stop (an action returned by an in-flight decision is discarded)")

    p = cmd("config", "validate and print the resolved configuration")
    p.add_argument("--check", action="store_true", help="validate (the default action) and print the result")
    _add_overrides(p)

    p = cmd("export", "write the journal as trajectory records (JSONL, one per step)",
            "Write recorded steps as conway-traj/1 records (JSONL; image bytes never included) or, with\n"
            "--format hf, a Hugging Face datasets folder with the screenshots as an Image feature.\n"
            "Exports can hold private screen content: review them before sharing.")
    p.add_argument("--output", required=True, metavar="FILE", help="new file (or folder, --format hf) to write (never overwritten)")
    p.add_argument("--include-dry-runs", action="store_true", help="also export planned-only steps")
    p.add_argument("--include-uncertain", action="store_true", help="also export steps whose outcome is uncertain")
    p.add_argument("--format", default="jsonl", choices=("jsonl", "hf"), dest="fmt",
                   help="jsonl (default) or hf (a datasets folder with images)")
    p.add_argument("--style", choices=("generic", "opencua", "uitars"),
                   help="add each step's target turn in this model family's own action format")
    p.add_argument("--skip-missing", action="store_true",
                   help="leave out steps whose screenshot file is gone (default: keep them, marked image_missing)")
    p.add_argument("--from-report", metavar="REPORT",
                   help="export a vision-check or grounding-check report's cases (labelled by their targets) "
                        "instead of the journal")

    p = cmd("view", "see sessions (or a vision-, grounding-check or candidate-eval report) in a browser; --serve to label",
            "Write a self-contained static site (no network needed; open it from file://) for one session or an\n"
            "index of all sessions, or a report's cases. --serve answers the same pages from 127.0.0.1 and is\n"
            "the only mode that writes labels (labels.jsonl, source review, as `conway review` does).")
    p.add_argument("report", nargs="?", metavar="REPORT", help="a vision-check, grounding-check or candidate-eval report")
    p.add_argument("--session", metavar="ID", help="only this session")
    p.add_argument("--last", action="store_true", help="only the latest session")
    p.add_argument("--output", metavar="DIR", help="folder for the site (new, empty or an earlier view; default HOME/view)")
    p.add_argument("--serve", action="store_true", help="serve from 127.0.0.1 on a free port, with review buttons")
    p.add_argument("--port", type=int, default=0, metavar="N", help="port for --serve (default: any free one)")
    p.add_argument("--page-size", type=int, default=100, metavar="N", help="steps per page (default 100)")

    # --- experience → candidates (labels, training outputs, promotion) ---
    p = cmd("review", "label recorded steps as a person: correct, wrong (with the corrected action) or redundant",
            "Labels go to labels.jsonl beside the journal (source: review); the journal is never changed.\n"
            "Interactive by default; --step N --verdict V [--action JSON] labels one step from a script.")
    p.add_argument("--session", metavar="ID", help="only steps of this session")
    p.add_argument("--step", type=int, metavar="N", help="label this step (with --verdict)")
    p.add_argument("--verdict", choices=("correct", "wrong", "redundant"), help="the label for --step")
    p.add_argument("--action", metavar="JSON", help="the corrected action for a wrong step (captured-screen pixels)")
    p.add_argument("--note", default="", help="free text kept with the label")
    p.add_argument("--hindsight", action="store_true", help="mark the label as made in hindsight")
    p.add_argument("--include-dry-runs", action="store_true", help="also offer planned-only steps")

    p = cmd("candidates", "list trained candidate policies under the home (complete ones have a manifest)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")

    p = cmd("candidate-eval", "run the same held-out cases on the base and on a candidate through llama.cpp",
            "Serve the base model and the candidate through llama.cpp one after the other, run the same\n"
            "seeded vision-check cases (or --suite grounding: the same --dataset / --apps cases) on both and\n"
            "report each hit rate with its 95% interval and the difference. Exit 0 candidate better with\n"
            "separated intervals, 2 not separated, 1 setup error.")
    p.add_argument("name", help="candidate name (a folder under candidates/)")
    p.add_argument("--suite", default="vision-check", choices=("vision-check", "grounding"), help="the held-out suite")
    p.add_argument("--dataset", metavar="DIR", help="grounding: a local ScreenSpot-style folder")
    p.add_argument("--apps", metavar="SUITE", help="grounding: a grounding suite (harvested once, used for both)")
    p.add_argument("--bbox-format", default="auto", choices=("auto", "xywh", "xyxy"), help="grounding: dataset boxes")
    p.add_argument("--samples", type=int, default=50, metavar="N", help="number of cases (default 50)")
    p.add_argument("--seed", type=int, default=1000, metavar="S", help="seed of the held-out cases (default 1000)")
    p.add_argument("--size", metavar="WxH", help="image size (default: the candidate's manifest)")
    p.add_argument("--profile", default=None, choices=("standard", "demo", "offcentre", "choose"),
                   help="vision-check case profile (default: the candidate's manifest, else standard)")
    p.add_argument("--base-model", metavar="GGUF", help="the base model (default: the manifest's base GGUF)")
    p.add_argument("--base-mmproj", metavar="GGUF", help="the base model's vision projector")
    p.add_argument("--backend", default="llama_cpp", choices=("llama_cpp", "http"),
                   help="llama_cpp: in-process llama-cpp-python (default); http: a llama.cpp server Conway starts")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")

    p = cmd("promote", "make a candidate the configured policy (or --rollback to the previous one)",
            "Rewrite the policy section of the home's config.yaml to serve the candidate's GGUF, recording\n"
            "the previous section in promotions.jsonl and the journal. Nothing promotes by itself.")
    p.add_argument("name", nargs="?", help="candidate name")
    p.add_argument("--rollback", action="store_true", help="restore the policy the last promotion replaced")

    p = cmd("replay", "feed recorded steps to a policy and score agreement with labelled actions (nothing executed)")
    _add_model_args(p)
    p.add_argument("--trajectory", required=True, metavar="FILE", help="a conway-traj/1 JSONL from `conway export`")
    p.add_argument("--candidate", metavar="NAME", help="replay through this candidate's GGUF (llama.cpp)")
    p.add_argument("--against", default="labels", choices=("labels", "recorded"),
                   help="compare with labelled actions only (default) or also the recorded ones")
    p.add_argument("--tolerance-px", type=float, default=20.0, help="point distance that agrees when no target box")
    p.add_argument("--limit", type=int, metavar="N", help="replay at most N steps")
    p.add_argument("--skip-missing", action="store_true", help="leave out steps whose screenshot file is gone")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    _add_overrides(p)

    p = cmd("skills", "list the Agent Skills the agent is offered, and the malformed ones left out (with why)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    _add_overrides(p)

    p = cmd("mcp-serve", "serve this home's status, control, export and checks to another agent over MCP",
            "Expose status, recent journal events, pause/resume/stop, export, vision-check and preflight as\n"
            "MCP tools (stdio by default). Never the desktop or the agent's tools.")
    _add_model_args(p)
    p.add_argument("--http", type=int, metavar="PORT", help="Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    _add_overrides(p)

    # --- checks (conway/evals) ---
    p = cmd("preflight", "check configuration, constitution, recovery state, memory and model readiness",
            "Check that this home and setup are ready to run. Never downloads anything.\n"
            "Exit 0 ready, 2 not ready (with the reasons), 1 setup error.")
    _add_model_args(p)
    p.add_argument("--desktop", action="store_true",
                   help="also take one time-bounded screenshot (deleted at once, never sent to a model)")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    _add_overrides(p)

    p = cmd("vision-check", "score the model's clicks on generated colour-target images (nothing is executed)",
            "Send seeded generated images (a coloured target among distractors, 'Click the red square.')\n"
            "through the configured policy's own resize and coordinate pipeline and score the proposed\n"
            "click against the target's box. Exit 0 all hit, 2 misses or errors, 1 setup errors.")
    _add_model_args(p)
    p.add_argument("--samples", type=int, default=8, metavar="N", help="number of generated images (default 8)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the images (default 0)")
    p.add_argument("--size", metavar="WxH", help="image size (default: the real screen's, else 1920x1080)")
    p.add_argument("--parallel", type=int, default=1, metavar="K",
                   help="send K requests at once (for servers with several slots)")
    p.add_argument("--sheet", metavar="FILE.png", help="also draw a contact sheet of the misses")
    p.add_argument("--profile", default="standard", choices=("standard", "demo", "offcentre", "choose"),
                   help="case difficulty: standard (small targets among distractors); for CPU learning demos: "
                        "demo (one large target), offcentre (one target never on the image centre), choose "
                        "(2-3 squares of different colours, the goal names one)")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_overrides(p)

    p = cmd("grounding-check", "score the model's clicks on real screens: live apps or a ScreenSpot-style dataset",
            "Instruction -> real screenshot -> target box, through the configured policy's own resize and\n"
            "coordinate pipeline; nothing is clicked. Cases come from --dataset DIR (ScreenSpot / v2 / Pro JSON or\n"
            "a datasets folder), --apps SUITE (starts the suite's apps, targets from the accessibility tree) or\n"
            "--desktop (the current desktop). Exit 0 all hit, 2 misses or errors, 1 setup errors.")
    _add_model_args(p)
    p.add_argument("--dataset", metavar="DIR", help="a local ScreenSpot-style folder (never downloaded)")
    p.add_argument("--apps", metavar="SUITE", help="a grounding suite file (YAML), e.g. evals/grounding/stock-linux.yaml")
    p.add_argument("--desktop", action="store_true", help="harvest targets from the applications on this desktop")
    p.add_argument("--samples", type=int, metavar="N", help="at most N cases (seeded sample; default all)")
    p.add_argument("--per-screen", type=int, metavar="N", help="live: at most N targets per screen (default: the suite's)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sample and the harvest (default 0)")
    p.add_argument("--bbox-format", default="auto", choices=("auto", "xywh", "xyxy"),
                   help="dataset boxes: [x, y, w, h] or [x1, y1, x2, y2] (default: detected per file)")
    p.add_argument("--parallel", type=int, default=1, metavar="K",
                   help="send K requests at once (for servers with several slots)")
    p.add_argument("--sheet", metavar="FILE.png", help="also draw a contact sheet of the misses")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_overrides(p)

    p = cmd("acceptance-check", "real-model file and program tasks, verified by Conway, not by the model",
            "Run the configured model through the loop (files + shell only, no desktop) on two disposable\n"
            "tasks in a temporary directory and verify each independently.\n"
            "Exit 0 all verified, 2 any not verified, 1 setup errors.")
    _add_model_args(p)
    p.add_argument("--max-steps", type=int, default=10, metavar="N",
                   help="decisions the model may make per task (default 10; rate limits and failed requests "
                        "do not count)")
    p.add_argument("--max-seconds", type=float, default=600.0, metavar="S", help="time budget per task (default 600)")
    p.add_argument("--seed", type=int, metavar="S", help="seed of the task names and contents (default: random, recorded)")
    p.add_argument("--keep", action="store_true", help="keep the temporary working directories")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    _add_overrides(p)

    p = cmd("report", "print a readable summary (a table) of any Conway report")
    p.add_argument("file", metavar="FILE", help="a conway-report/1 JSON file")

    # --- models (conway/probe.py, conway/runtime) ---
    p = cmd("probe", "send one synthetic PNG through the configured policy and check the answer parses",
            "Send a generated PNG (never the desktop) through the chosen policy and backend; report the model\n"
            "id, latency, the output constraint the backend honours and whether the answer is a valid action.\n"
            "A local model (policy.model_path) is loaded or served the way `run` would. Exit 0 pass, 2 fail,\n"
            "1 setup error.")
    _add_model_args(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_overrides(p)

    p = cmd("models", "list what an endpoint serves and the local GGUF files the configuration names",
            "List the models an OpenAI-compatible endpoint serves (GET /v1/models) and the local GGUF model\n"
            "and mmproj files of the configuration, with their metadata and a memory estimate.")
    p.add_argument("--endpoint", metavar="URL", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")
    _add_overrides(p)
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
    if ((getattr(args, "endpoint", None) or getattr(args, "model", None)) and "policy=mock" not in overrides
            and not any(o.lstrip("+").split("=", 1)[0] == "policy" for o in overrides)):
        overrides.insert(0, "policy=generic")  # --endpoint/--model mean a real model (generic unless chosen)
    for flag, key in (("max_steps", "agent.max_steps"), ("max_seconds", "agent.max_seconds")):
        value = getattr(args, flag, None)
        if value is not None:
            if value <= 0:
                raise UserError(f"--{flag.replace('_', '-')} must be positive (got {value})")
            overrides.append(f"{key}={value}")
    cfg = load_config(home.config, overrides + (extra or []))
    if getattr(args, "endpoint", None) and cfg.policy.kind == "mock":
        raise UserError("--endpoint was given but the policy is the offline mock (--mock, or policy.kind: mock in "
                        "the home's config.yaml): use one or the other")
    return cfg


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
    report = doctor(cfg, workdir_for(cfg, home) if home.root.exists() else Path.cwd(), home_root=home.root)
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
    from .evals.task_acceptance import parse_task, run_task_session
    home = _home(args)
    _require_home(home)
    if args.execute and not (args.task or args.task_file):
        raise UserError("--execute needs a task: give --task TEXT or --task-file FILE")
    task = read_task(args.task, args.task_file)
    spec = parse_task(task, args.task_file) if args.task_file and task is not None else None
    if args.output and task is None:
        raise UserError("--output (a session report) needs a task: give --task TEXT or --task-file FILE")
    cfg = _config(args, home)
    return run_task_session(home, cfg, task=task, spec=spec, execute=args.execute, quiet=args.quiet,
                            output=args.output, argv=args._argv)


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
    from .evals.task_acceptance import acceptance_counts, render_counts
    report["task_acceptance"] = acceptance_counts(home)  # declared vs verified, counted apart
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
    if report["task_acceptance"]["sessions"]:
        print(f"tasks:    {render_counts(report['task_acceptance'])}")
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
    from .export import export
    home = _home(args)
    out = Path(args.output).expanduser()
    res = export(home.journal_dir, out, include_dry_runs=args.include_dry_runs,
                 include_uncertain=args.include_uncertain, fmt=args.fmt, style=args.style,
                 skip_missing=args.skip_missing, home_root=home.root, from_report=args.from_report,
                 secret_values=_known_secrets(home))
    print(f"wrote {res.written} step record(s) to {out}" + (f" ({res.labelled} labelled)" if res.labelled else ""))
    if res.skipped_lines:
        print(f"skipped {len(res.skipped_lines)} unreadable journal line(s): {', '.join(res.skipped_lines[:5])}")
    if res.missing:
        print(f"left out {len(res.missing)} step(s) whose screenshot is missing (--skip-missing)")
    if res.images_missing:
        print(f"{len(res.images_missing)} step(s) kept without their screenshot (rotated away: observation.image "
              "is null, image_missing true)" + (", left out of the hf image data" if res.left_out_of_images else ""))
    if res.redacted:
        print(f"redacted {res.redacted} secret value(s) (API keys and credential-looking variables' values)")
    if res.unrendered:
        print(f"left out {len(res.unrendered)} step(s) with no {args.style or 'generic'} rendering: "
              f"{res.unrendered[0]}")
    return 0


def _known_secrets(home) -> list[str]:
    """Values exports must never carry: policy.api_key_env's variable and credential-looking ones."""
    import os

    from .redact import known_secret_values
    try:
        name = _config(argparse.Namespace(), home).policy.api_key_env
    except UserError:
        name = None  # an invalid config.yaml does not stop an export; the name-based scan still runs
    return known_secret_values(os.environ, [name])


def do_review(args) -> int:
    from .review import review
    home = _home(args)
    review(home, session=args.session, step=args.step, verdict=args.verdict, action=args.action, note=args.note,
           include_dry_runs=args.include_dry_runs, relabel=args.hindsight)
    return 0


def do_view(args) -> int:
    from .view.command import view
    return view(_home(args), report=args.report, session=args.session, last=args.last, output=args.output,
                serve=args.serve, port=args.port, page_size=args.page_size)


def do_candidates(args) -> int:
    from .candidates import list_candidates
    home = _home(args)
    items = list_candidates(home)
    if args.json:
        print(json.dumps(items, indent=2, default=str))
        return 0
    if not items:
        print(f"no candidates under {home.candidates}")
        return 0
    for c in items:
        m = c.get("metrics") or {}
        hits = m.get("held_out_hit_rate")
        loss = m.get("final_loss")
        print(f"{c['name']:<24} {c['status']:<26} recipe {c.get('recipe') or '-':<14} "
              f"loss {f'{loss:.4f}' if isinstance(loss, (int, float)) else '-'}"
              + (f"  train-time held-out hits {hits:.0%}" if isinstance(hits, (int, float)) else ""))
    return 0


def do_candidate_eval(args) -> int:
    from .candidates import candidate_eval
    home = _home(args)
    return candidate_eval(home, args.name, suite=args.suite, samples=args.samples, seed=args.seed,
                          output=args.output, size=args.size, profile=args.profile, base_model=args.base_model,
                          base_mmproj=args.base_mmproj, backend=args.backend, argv=args._argv,
                          progress=not args.quiet, dataset=args.dataset, apps=args.apps, bbox_format=args.bbox_format)


def do_promote(args) -> int:
    from .candidates import promote, rollback
    home = _home(args)
    if args.rollback:
        if args.name:
            raise UserError("give either a candidate name or --rollback, not both")
        entry = rollback(home)
        print(f"rolled back: the policy before candidate {entry['candidate']!r} is configured again "
              f"({home.config})")
        return 0
    if not args.name:
        raise UserError("name the candidate to promote (see `conway candidates`), or pass --rollback")
    entry = promote(home, args.name)
    print(f"promoted {args.name}: policy.model_path = {entry['new_policy'].get('model_path')}")
    print("the previous policy is recorded; `conway promote --rollback` restores it. "
          "A running agent picks the change up at its next start.")
    return 0


def do_replay(args) -> int:
    from .replay import replay
    home = _home(args)
    extra = []
    if args.candidate:
        from .candidates import candidate_policy, load_manifest
        pol = candidate_policy(home, args.candidate, load_manifest(home, args.candidate))
        extra = [f"policy.{k}={v}" for k, v in pol.items()] + ["policy.backend=llama_cpp"]
    cfg = _config(args, home, extra)
    return replay(home, cfg, args.trajectory, output=args.output, against=args.against,
                  tolerance_px=args.tolerance_px, limit=args.limit, skip_missing=args.skip_missing, argv=args._argv)


def do_preflight(args) -> int:
    from .evals.preflight import preflight
    home = _home(args)
    return preflight(home, lambda: _config(args, home), output=args.output, desktop=args.desktop, argv=args._argv)


def do_vision_check(args) -> int:
    from .evals.vision_check import vision_check
    home = _home(args)
    if args.samples < 1:
        raise UserError(f"--samples must be at least 1 (got {args.samples})")
    cfg = _config(args, home)
    return vision_check(home, cfg, output=args.output, samples=args.samples, seed=args.seed, size=args.size,
                        parallel=args.parallel, sheet=args.sheet, argv=args._argv, progress=not args.quiet,
                        profile=args.profile)


def do_grounding_check(args) -> int:
    from .evals.grounding.check import grounding_check
    home = _home(args)
    cfg = _config(args, home)
    return grounding_check(home, cfg, output=args.output, dataset=args.dataset, apps=args.apps, desktop=args.desktop,
                           samples=args.samples, seed=args.seed, per_screen=args.per_screen,
                           bbox_format=args.bbox_format, parallel=args.parallel, sheet=args.sheet, argv=args._argv,
                           progress=not args.quiet)


def do_acceptance_check(args) -> int:
    from .evals.acceptance import acceptance_check
    home = _home(args)
    cfg = _config(args, home)
    return acceptance_check(home, cfg, output=args.output, max_steps=args.max_steps, max_seconds=args.max_seconds,
                            seed=args.seed, keep=args.keep, argv=args._argv)


def do_report(args) -> int:
    from .evals.report import render_report
    print(render_report(args.file))
    return 0


def do_probe(args) -> int:
    from .app import build_policy
    from .errors import NotReady
    from .probe import probe
    home = _home(args)
    cfg = _config(args, home)
    policy = build_policy(cfg, home)
    try:
        report = probe(policy)
    finally:
        close = getattr(policy, "close", None)
        if close:
            close()
    from .redact import redact, redact_text  # the answer or an error can quote a key
    print(json.dumps(redact(report.to_dict()), indent=2, default=str) if args.json else redact_text(report.render()))
    if not report.ok:
        raise NotReady("probe failed: " + (report.error or "; ".join(report.problems) or "no valid action"))
    return 0


def do_models(args) -> int:
    from .policies.discovery import models_report, render_models
    home = _home(args)
    report = models_report(_config(args, home))
    print(json.dumps(report, indent=2, default=str) if args.json else render_models(report))
    if report["problems"]:
        raise UserError("; ".join(report["problems"]))
    return 0


def do_skills(args) -> int:
    from .skills import find_skills, render_skills, skill_roots
    home = _home(args)
    cfg = _config(args, home)
    found = find_skills(home.root, cfg.skills)
    print(json.dumps(found.record(), indent=2) if args.json else render_skills(found, skill_roots(home.root, cfg.skills)))
    return 0


def do_mcp_serve(args) -> int:
    from .mcp_serve import serve
    home = _home(args)
    return serve(home, lambda: _config(args, home), http_port=args.http)


COMMANDS: dict[str, Callable] = {
    "init": do_init, "doctor": do_doctor, "run": do_run, "start": do_start, "status": do_status,
    "pause": _control("pause"), "resume": _control("resume"), "stop": _control("stop"),
    "config": do_config, "export": do_export, "review": do_review, "view": do_view, "candidates": do_candidates,
    "candidate-eval": do_candidate_eval, "promote": do_promote, "replay": do_replay,
    "preflight": do_preflight, "vision-check": do_vision_check, "grounding-check": do_grounding_check,
    "acceptance-check": do_acceptance_check,
    "report": do_report, "probe": do_probe, "models": do_models, "skills": do_skills, "mcp-serve": do_mcp_serve,
}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args._argv = list(sys.argv[1:] if argv is None else argv)  # reports record the command line
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
