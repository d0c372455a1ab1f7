"""One function per `conway` subcommand: turn parsed arguments into a call to the module that does the work.

`main.py` parses; this module resolves the home and the configuration from the
arguments (`resolve.py`) and hands over; the `tasks` group is `tasks.py`'s.
What a command prints is rendered by the module that owns the data (status by
`app`, candidates by `candidates`, probes by `probe`).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from conway.args.resolve import config_of as _config
from conway.args.resolve import home_of as _home
from conway.args.resolve import model_config_of as _model_config
from conway.args.resolve import require_model as _require_model
from conway.errors import ExitCode, UserError


def do_init(args) -> int:
    from conway.store.home import init_home
    home = _home(args)
    for msg in init_home(home):
        print(msg)
    print(f"home: {home.root}")
    print(f"goals: {home.goals}  (edit it; the agent rereads it every cycle)")
    return ExitCode.PASSED


def do_doctor(args) -> int:
    from conway.readiness.doctor import doctor, render_doctor
    from conway.session.app import workdir_for
    home = _home(args)
    cfg = _config(args, home)
    report = doctor(cfg, workdir_for(cfg, home) if home.root.exists() else Path.cwd(), home_root=home.root)
    print(json.dumps(report, indent=2) if args.json else render_doctor(report))
    return ExitCode.PASSED


def _require_home(home) -> None:
    from conway.store.home import not_text
    if not home.constitution.exists():
        raise UserError(f"{home.root} has no constitution.md; run `conway init` first")
    for path in (home.constitution, home.goals):  # both go to the model as text, every decision
        if not path.is_file():
            continue  # no goals.md: the prompt says so; a folder is refused with the home's other entries
        try:
            problem = not_text(path.read_bytes())
        except OSError as exc:
            raise UserError(f"cannot read {path}: {exc.strerror}") from None
        if problem:
            raise UserError(f"{path} {problem}; the model reads it as text: save it as UTF-8 text")


def do_run(args) -> int:
    from conway.session.app import RunRequest, run_agent
    home = _home(args)
    _require_home(home)
    cfg = _config(args, home)
    _require_model(args, home, cfg)
    outcome, _ = run_agent(home, cfg, RunRequest(single_session=False, dry_run=args.observe, quiet=args.quiet,
                                                 video=args.video))
    if outcome.failed:
        raise UserError(f"the run ended: {outcome.reason} (journal: {outcome.journal})")
    if outcome.uncertain:
        return ExitCode.SETUP_ERROR
    if outcome.setup_failed:  # the model server kept failing in a way no retry cures: its setup is wrong, whether
        # or not a valid decision came first (a server refusing every path also ends at discovery with exit 1)
        raise UserError(f"the run ended: {outcome.reason} (journal: {outcome.journal})")
    if outcome.no_valid_decision:
        return ExitCode.NO_VALID_DECISION
    return ExitCode.PASSED


def do_start(args) -> int:
    from conway.session.task_run import run_task_session
    from conway.tasks.task_file import parse_task, read_task
    home = _home(args)
    _require_home(home)
    if args.execute and not (args.task or args.task_file):
        raise UserError("--execute needs a task: give --task TEXT or --task-file FILE")
    task = read_task(args.task, args.task_file)
    spec = parse_task(task, args.task_file) if args.task_file and task is not None else None
    if args.output and task is None:
        raise UserError("--output (a session report) needs a task: give --task TEXT or --task-file FILE")
    cfg = _config(args, home)
    _require_model(args, home, cfg)
    report = None
    if args.output:
        from conway.evals.session_report import SessionReport
        report = SessionReport(args.output, home, cfg, task, spec, execute=args.execute, argv=args._argv)
    if not (args.desktop or args.desktop_url):  # this machine's own screen, as `conway run`
        return run_task_session(home, cfg, task=task, spec=spec, execute=args.execute, quiet=args.quiet,
                                report=report)
    from conway.cli.tasks import with_desktop
    from conway.desktops import DesktopRequest, check_settings, open_desktop
    from conway.evals.tasks_run import box_limits
    cfg = with_desktop(cfg, args.desktop, args.desktop_url)
    check_settings(cfg.tasks)
    name = Path(args.task_file).stem if args.task_file else "start"
    with open_desktop(cfg.tasks, DesktopRequest(name, limits=box_limits(cfg))) as desk:  # the seam's one place
        if report is not None:
            report.on_desktop(desk.facts())
        return run_task_session(home, desk.task_config(cfg), task=task, spec=spec, execute=args.execute,
                                quiet=args.quiet, report=report, desktop=desk)


def do_status(args) -> int:
    from conway.session.acceptance import acceptance_counts, render_counts
    from conway.session.app import render_status, status_report
    from conway.store.journal import iter_journal
    home = _home(args, writable=False)
    if not home.root.exists():  # a mistyped --home is not a home that was never run
        raise UserError(f"Conway home {home.root} does not exist (create it with `conway --home {home.root} init`)")
    # what status reads must be what Conway keeps there (a `journal` file is not a home without sessions: say so,
    # exit 1); other entries may be wrong (a crash's memory.md folder) and status still tells what happened
    home.check_layout(only=(home.journal_dir, home.state, home.state_previous))
    report = status_report(home)
    skipped: list[str] = []  # lines that do not parse, said as `export` says them: one pass reads both

    def events() -> Iterator[dict[str, Any]]:
        for event, where in iter_journal(home.journal_dir):
            if event is None:
                skipped.append(where)
            else:
                yield event

    counts = report["task_acceptance"] = acceptance_counts(home, events())  # declared vs verified, counted apart
    report["journal_skipped"] = skipped
    tasks = render_counts(counts) if counts["sessions"] else None
    print(json.dumps(report, indent=2, default=str) if args.json else render_status(report, tasks))
    return ExitCode.PASSED


def _control(request: str) -> Callable:
    def run(args) -> int:
        from conway.session.app import send_control
        print(send_control(_home(args), request))
        return ExitCode.PASSED
    return run


def do_record(args) -> int:
    from conway.session.record import record_session
    from conway.session.task_run import with_budget
    home = _home(args)
    _require_home(home)
    cfg = with_budget(_config(args, home), None, args.max_seconds)
    outcome, session = record_session(home, cfg, task=args.task, video=args.video)
    if outcome.failed:
        raise UserError(f"the recording ended: {outcome.reason} (journal: {outcome.journal})")
    print(f"recorded session {session}: `conway export` writes its human steps as labelled rows")
    return ExitCode.PASSED


def do_rerun(args) -> int:
    from conway.evals.rerun import rerun
    home = _home(args)
    _require_home(home)
    settings = None
    if args.desktop or args.desktop_url:  # else the provider the task's report ran on (conway.evals.rerun)
        from conway.cli.tasks import with_desktop
        from conway.desktops import check_settings
        settings = with_desktop(_config(args, home), args.desktop, args.desktop_url).tasks
        check_settings(settings)
    return rerun(home, args.session, output=args.output, threshold=args.threshold, settings=settings)


def do_config(args) -> int:
    from conway.config import to_yaml
    home = _home(args, writable=False)
    cfg = _config(args, home)
    print(f"# configuration valid (digest {cfg.digest()[:12]})")
    print(to_yaml(cfg), end="")
    return ExitCode.PASSED


def do_export(args) -> int:
    from conway.experience.export import export
    from conway.store.state import STDOUT, is_stdout
    home = _home(args, writable=False)
    out = STDOUT if is_stdout(args.output) else Path(args.output).expanduser()
    say = functools.partial(print, file=sys.stderr if out == STDOUT else sys.stdout)  # stdout carries the records
    report_records = None
    if args.from_report is not None:  # the report's kind builds its records (conway.evals.suites)
        from conway.evals.export_report import records_from_report
        report_records = functools.partial(records_from_report, Path(args.from_report))
    res = export(home.journal_dir, out, include_dry_runs=args.include_dry_runs,
                 include_uncertain=args.include_uncertain, fmt=args.fmt, style=args.style,
                 skip_missing=args.skip_missing, home_root=home.root, report_records=report_records,
                 secret_values=_known_secrets(home))
    say(f"wrote {res.written} step record(s) to {out}" + (f" ({res.labelled} labelled)" if res.labelled else ""))
    if res.skipped_lines:
        say(f"skipped {len(res.skipped_lines)} unreadable journal line(s): {', '.join(res.skipped_lines[:5])}")
    for span in res.unreadable:
        say(span)
    if res.missing:
        say(f"left out {len(res.missing)} step(s) whose screenshot is missing (--skip-missing)")
    if res.images_missing:
        say(f"{len(res.images_missing)} step(s) kept without their screenshot (rotated away: observation.image "
            "is null, image_missing true)" + (", left out of the hf image data" if res.left_out_of_images else ""))
    if res.no_conversation:
        say(f"left out {len(res.no_conversation)} step(s) of the hf data that make no whole conversation: "
            f"{res.no_conversation[0]}")
    if res.redacted:
        say(f"redacted {res.redacted} secret value(s) (API keys and credential-looking variables' values)")
    if res.unrendered:
        left = "the target turn of" if res.targets is not None else ""
        say(f"left out {left}{' ' if left else ''}{len(res.unrendered)} step(s) with no "
            f"{args.style or 'generic'} rendering: {res.unrendered[0]}")
    if res.targets == 0:
        print(f"conway: no step has a {args.style} target turn; the records were written without one",
              file=sys.stderr)
        return ExitCode.NOT_PASSED
    return ExitCode.PASSED


def _known_secrets(home) -> list[str]:
    """Values exports must never carry: the variables policy.api_key_env and memory.summariser.api_key_env name,
    and credential-looking ones."""
    import os

    from conway.redact import known_secret_values
    try:
        config = _config(argparse.Namespace(), home)
        names = [config.policy.api_key_env, config.memory.summariser.api_key_env]
    except UserError:
        names = []  # an invalid config.yaml does not stop an export; the name-based scan still runs
    return known_secret_values(os.environ, names)


def do_review(args) -> int:
    from conway.experience.review import review
    home = _home(args)
    review(home, session=args.session, step=args.step, verdict=args.verdict, action=args.action, note=args.note,
           include_dry_runs=args.include_dry_runs, relabel=args.hindsight)
    return ExitCode.PASSED


def do_view(args) -> int:
    from conway.view.command import view
    # a site written elsewhere only reads the home (as status and export do); the default site goes into the
    # home, and --serve keeps the labels given in the browser there
    home = _home(args, writable=bool(args.serve or not args.output))
    return view(home, report=args.report, session=args.session, last=args.last, output=args.output,
                serve=args.serve, port=args.port, page_size=args.page_size, live=args.live)


def do_candidates(args) -> int:
    from conway.evals.candidates import list_candidates, render_candidates
    home = _home(args)
    items = list_candidates(home)
    print(json.dumps(items, indent=2, default=str) if args.json else render_candidates(items, home))
    return ExitCode.PASSED


def do_candidate_eval(args) -> int:
    from conway.evals.candidates import candidate_eval
    from conway.evals.pool import pool_spec_of
    home = _home(args)
    return candidate_eval(home, args.name, suite=args.suite, samples=args.samples, seed=args.seed,
                          output=args.output, size=args.size, profile=args.profile, base_model=args.base_model,
                          base_mmproj=args.base_mmproj, backend=args.backend, argv=args._argv,
                          progress=not args.quiet, dataset=args.dataset, apps=args.apps, bbox_format=args.bbox_format,
                          pool=pool_spec_of(args),
                          tasks={"suite": args.tasks, "cache": args.cache, "max_steps": args.max_steps,
                                 "screen": _screen(args.screen)})


def _screen(text: str) -> tuple[int, int]:
    from conway.evals.rollouts import parse_screen
    return parse_screen(text)


def do_promote(args) -> int:
    from conway.evals.candidates import promote, rollback
    home = _home(args)
    if args.rollback:
        if args.name:
            raise UserError("give either a candidate name or --rollback, not both")
        entry = rollback(home)
        print(f"rolled back: the policy before candidate {entry['candidate']!r} is configured again "
              f"({home.config})")
        return ExitCode.PASSED
    if not args.name:
        raise UserError("name the candidate to promote (see `conway candidates`), or pass --rollback")
    entry = promote(home, args.name, force=args.force)
    if entry.get("forced_past"):
        print("forced past the gate: " + "; ".join(entry["forced_past"]))
    print(f"promoted {args.name}: policy.model_path = {entry['new_policy'].get('model_path')}")
    print("the previous policy is recorded; `conway promote --rollback` restores it. "
          "A running agent picks the change up at its next start.")
    return ExitCode.PASSED


def do_rollouts(args) -> int:
    from conway.args.resolve import model_config_of
    from conway.cli.tasks import split_overrides
    from conway.evals.best_of_n import cost_args
    from conway.evals.pool import pool_of
    from conway.evals.rollouts import parse_screen, rollouts
    split_overrides(args)
    home = _home(args)
    if args.mock_script and args.mock_scripts:
        raise UserError("give --mock-script (one script for every task) or --mock-scripts (one per task), not both")
    args.mock = args.mock or bool(args.mock_script or args.mock_scripts)
    cfg = model_config_of(args, home)
    judge_cfg = None
    if args.judge_endpoint:  # another model judges: Conway's generic client to that endpoint
        extra = ["policy=generic", f"policy.endpoint={args.judge_endpoint}", "policy.structured_output=none"]
        judge_cfg = model_config_of(args, home, extra + ([f"policy.model={args.judge_model}"] if args.judge_model
                                                        else []))
    elif args.judge_model:
        raise UserError("--judge-model names the model of --judge-endpoint; give the endpoint too")
    elif args.judge:
        judge_cfg = cfg
    pool = pool_of(args, cfg, home)
    then = None
    if judge_cfg is not None:
        from conway.evals.judge.run import judge_pool, judge_set

        def then(out_dir):  # the set's narratives and a pick per task, on the rollouts' pool shape
            return judge_set(home, judge_cfg, out_dir, quiet=args.quiet, argv=args._argv,
                             pool=judge_pool(pool, home, judge_cfg, same=judge_cfg is cfg))
    return rollouts(home, cfg, args.suite, output=args.output, samples=args.samples, seed=args.seed,
                    temperature=args.temperature, cache=args.cache, mock_scripts=args.mock_scripts,
                    max_steps=args.max_steps, max_seconds=args.max_seconds, quiet=args.quiet, argv=args._argv,
                    pool=pool, screen=parse_screen(args.screen), then=then, **cost_args(args))


def do_replay(args) -> int:
    from conway.evals.replay import replay
    home = _home(args)
    extra = []
    if args.candidate:
        from conway.evals.candidates import candidate_policy, load_manifest
        pol = candidate_policy(home, args.candidate, load_manifest(home, args.candidate))
        extra = [f"policy.{k}={v}" for k, v in pol.items()] + ["policy.backend=llama_cpp"]
    cfg = _config(args, home, extra)
    return replay(home, cfg, args.trajectory, output=args.output, against=args.against,
                  tolerance_px=args.tolerance_px, limit=args.limit, skip_missing=args.skip_missing, argv=args._argv)


def do_sweep(args) -> int:
    from conway.evals.pool import pool_spec_of
    from conway.evals.sweep import run_cell_process, run_sweep
    pool_spec_of(args)  # bad pool flags are refused here (exit 1), not once per cell
    pool_args = ["--workers", str(args.workers)] if args.workers != 1 else []
    if args.ray:
        pool_args += ["--ray", args.ray]
    for e in args.pool_endpoint:
        pool_args += ["--pool-endpoint", e]
    home_args = ["--home", args.home] if getattr(args, "home", None) else []
    return run_sweep(args.file, args.output, pool_args=pool_args, argv=args._argv,
                     run=lambda argv: run_cell_process([*home_args, *argv]))


def do_report(args) -> int:
    from conway.evals.report_render import render_report
    print(render_report(args.file))
    return ExitCode.PASSED


def do_probe(args) -> int:
    from conway.errors import NotReady
    from conway.readiness.probe import probe_configured
    home = _home(args)
    cfg = _config(args, home)
    _require_model(args, home, cfg)
    report = probe_configured(cfg, home)
    from conway.redact import redact, redact_text  # the answer or an error can quote a key
    print(json.dumps(redact(report.to_dict()), indent=2, default=str) if args.json else redact_text(report.render()))
    if not report.ok:
        raise NotReady("probe failed: " + (report.error or "; ".join(report.problems) or "no valid action"))
    return ExitCode.PASSED


def do_models(args) -> int:
    from conway.policies.backends.discovery import models_report, render_models
    home = _home(args)
    if args.conformance:
        from conway.policies.conformance import conformance_report
        config = _config(args, home)
        lines, ok = conformance_report(config, args.screen)
        if args.check_server:
            if not config.policy.endpoint:
                raise UserError("--check-server asks a running server: give it --endpoint URL (or policy.endpoint)")
            from conway.policies.server_check import image_token_lines, template_line
            checked, same = image_token_lines(config)
            said, template_same = template_line(config)
            lines, ok = lines + checked + [said], ok and same and template_same
        print(json.dumps({"lines": lines, "fits": ok}, indent=2) if args.json else "\n".join(lines))
        return ExitCode.PASSED if ok else ExitCode.SETUP_ERROR
    report = models_report(_config(args, home))
    print(json.dumps(report, indent=2, default=str) if args.json else render_models(report))
    if report["problems"]:
        raise UserError("; ".join(report["problems"]))
    return ExitCode.PASSED


def do_skills(args) -> int:
    from conway.store.skills import find_skills, render_skills, skill_roots
    home = _home(args)
    cfg = _config(args, home)
    found = find_skills(home.root, cfg.skills)
    print(json.dumps(found.record(), indent=2) if args.json else render_skills(found, skill_roots(home.root, cfg.skills)))
    return ExitCode.PASSED


def do_mcp_serve(args) -> int:
    from conway.cli.mcp_serve import serve
    home = _home(args)
    return serve(home, lambda: _config(args, home), http_port=args.http,
                 model_config=lambda: _model_config(args, home))


def _tasks(args) -> int:
    from conway.cli.tasks import do_tasks  # the `tasks` group owns its subcommands
    return do_tasks(args)


COMMANDS: dict[str, Callable] = {
    "init": do_init, "doctor": do_doctor, "run": do_run, "start": do_start, "status": do_status,
    "pause": _control("pause"), "resume": _control("resume"), "stop": _control("stop"),
    "takeover": _control("takeover"), "handback": _control("handback"), "record": do_record,
    "rerun": do_rerun,
    "config": do_config, "export": do_export, "review": do_review, "view": do_view, "candidates": do_candidates,
    "candidate-eval": do_candidate_eval, "promote": do_promote, "rollouts": do_rollouts, "replay": do_replay,
    "tasks": _tasks, "report": do_report, "sweep": do_sweep, "probe": do_probe, "models": do_models, "skills": do_skills,
    "mcp-serve": do_mcp_serve,
}


def run_command(args: argparse.Namespace) -> int:
    """The command's function here, or the eval suite's own (`SuiteKind.command`, `conway.evals.suites`)."""
    if args.command in COMMANDS:
        return COMMANDS[args.command](args)
    from conway.evals.suites import having
    return next(k.command.run for k in having("command") if k.command and k.command.name == args.command)(args)
