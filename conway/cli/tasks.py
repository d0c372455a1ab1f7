"""The `conway tasks` command group, whole: its parsers (`add_parser`) and one function per subcommand (`list`,
`run`, `check`, `fetch`, `doctor`); the home, configuration and pool come from `conway.args.resolve` like every command's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable

from conway.args.pool import add_pool_args
from conway.errors import ExitCode, UserError
from conway.session.task_watchdog import STOP_GRACE_S, TIMEOUT_MARGIN_S

SUITE_HELP = ("a folder of task files (searched recursively; OSWorld's examples/<domain>/<id>.json gives the "
              "domain), task files (.json in OSWorld's format, .md in Conway's), or an OSWorld test_*.json index")
LIST_DESCRIPTION = f"""\
Load a suite and say, for each task, whether it can run on this machine and, when it cannot, every reason:
a setup step type, getter or metric not implemented, an application or an optional extra (gui, tasks) not
installed, a downloaded, cloud or cache file missing from the local cache (naming its URL), or a live URL
the task needs at run time. Files that
do not load (malformed JSON, an id an index lists but whose file is missing, a duplicate id) are listed
apart, one line each. Nothing here runs a task.

  conway tasks list evals/tasks
  conway tasks list ~/OSWorld/evaluation_examples/test_small.json --cache ~/OSWorld/cache --json

Exit {ExitCode.PASSED:d} every task can run here, {ExitCode.NOT_PASSED:d} some cannot (or some files did not load), \
{ExitCode.SETUP_ERROR:d} bad input (a missing suite or cache, nothing loadable)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `tasks` group under the main parser's subcommands; each subcommand adds its own parser here."""
    p = sub.add_parser("tasks", help="task suites in OSWorld's format or Conway's: which can run here (list), fetch their "
                       "files (fetch), run and score them (run), prove them passable (check), the applications "
                       "they use (doctor)",
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
    lp.add_argument("--verified", metavar="FILE", help="a record of `conway tasks check` (its --output): the tasks "
                    "it proved passable here are listed as verified passable")
    _add_run(group)
    _add_check(group)
    dp = group.add_parser("doctor", help="the applications OSWorld's tasks use: installed here or not, their versions, "
                          "and how OSWorld's VM differs", description=DOCTOR_DESCRIPTION,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    dp.add_argument("--json", action="store_true", help="print the record as JSON (conway-tasks-doctor/1)")
    _add_fetch(group)


DOCTOR_DESCRIPTION = f"""\
Say, for each application OSWorld's tasks use (Chrome, LibreOffice, GIMP, VLC, Thunderbird, VS Code, the file
manager, the terminal, socat, Python with PyAutoGUI), whether it is installed on this machine, the program
and version found (from the Debian package that installed it), the version OSWorld's VM (Ubuntu 22.04) has,
and how running it here differs. A task whose application is missing is not runnable (`conway tasks list`
names it); scores measured here are local and not comparable with OSWorld's leaderboard.

  conway tasks doctor
  conway tasks doctor --json

Exit {ExitCode.PASSED:d} every application is installed, {ExitCode.NOT_PASSED:d} some are not."""


FETCH_DESCRIPTION = f"""\
Download every file a suite's tasks name into the local cache, in OSWorld's layout, so that `tasks list` and
`tasks run` find them there (neither ever downloads). The files are those the tasks' `download` steps copy
into the home (kept as <DIR>/<task id>/<uuid5 of the URL>_<file name>) and their `cloud_file` getters
compare against (<DIR>/<task id>/<dest>): OSWorld's DesktopEnv(cache_dir=DIR) reads the same folder.

A URL several tasks name is downloaded once. Each download goes to <file>.part first and, when interrupted
(Ctrl+C, a broken connection), resumes from there on the next run (an HTTP Range request). A file is
verified before it takes its name: its length against what the server announced, its SHA-256 against the
one the server states (a 64-digit ETag, as large-file stores give), and, when it was fetched here before,
against the SHA-256 recorded then in <DIR>/conway-fetch.json (a file changed since is fetched again). A file
already there that this command did not fetch (OSWorld's own cache) is kept as it is. Each file that fails
(HTTP 404, a checksum mismatch, a folder where the file belongs …) is one line; the rest go on.

  conway tasks fetch ~/OSWorld/evaluation_examples/test_all.json --cache ~/osworld-cache
  conway tasks list ~/OSWorld/evaluation_examples/test_all.json --cache ~/osworld-cache

Exit {ExitCode.PASSED:d} every file is in the cache, {ExitCode.NOT_PASSED:d} some failed, \
{ExitCode.SETUP_ERROR:d} bad input (no suite, a cache path that is a file), {ExitCode.INTERRUPTED:d} Ctrl+C \
(run again to resume)."""


def _add_fetch(group: argparse._SubParsersAction) -> None:
    fp = group.add_parser("fetch", help="download every file a suite's tasks name into the local cache (resumable)",
                          description=FETCH_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    fp.add_argument("suite", nargs="+", metavar="SUITE", help=SUITE_HELP)
    fp.add_argument("--cache", required=True, metavar="DIR", help="the cache folder to fill (created if missing), "
                    "in OSWorld's layout: <DIR>/<task id>/…")
    fp.add_argument("--quiet", action="store_true", help="only the failures and the summary")


RUN_DESCRIPTION = f"""\
Run each task of a suite through the real loop, one task at a time, each on its own disposable desktop: a
private X display with a session bus, the task's setup steps (launch, open, execute, download from the
local cache …), a fresh Conway home and a user home the task sees at /home/user, inside bubblewrap (the
real home is not visible, the network is off unless --network). Nothing is downloaded: conway tasks fetch
fills the cache first. A finish ends the task; then the task's own checker scores
it (OSWorld's rules: postconfig first, metrics combined by conj). A task that cannot run here is reported
with its reasons and never scored; one that breaks (setup hangs, its application never opens, a checker
raises) is one line in the report, and the suite goes on. A task whose loop outlasts --task-timeout-s is
stopped and still scored (OSWorld scores what the agent left), counted as timed out. Ctrl+C writes the
report of the tasks that finished, marked partial.

  conway tasks run evals/osworld_local --cache evals/osworld_local/cache --output tasks.json
  conway tasks run evals/osworld_local --cache evals/osworld_local/cache --output mock.json \\
      --mock-scripts evals/osworld_local/mock/pass
  conway view tasks.json     conway report tasks.json     conway export --from-report tasks.json --output data.jsonl

Each task's Conway home (its journal and screenshots) is kept beside the report in REPORT's name + .tasks/.
Configuration overrides (key=value) may follow the suite or the options. Exit {ExitCode.PASSED:d} every runnable task passed, \
{ExitCode.NOT_PASSED:d} a task failed or broke (or none could run), {ExitCode.SETUP_ERROR:d} bad input, \
{ExitCode.INTERRUPTED:d} Ctrl+C (a partial report)."""


def _add_run(group: argparse._SubParsersAction) -> None:
    rp = group.add_parser("run", help="run each task on a disposable desktop through the real loop, then score it",
                          description=RUN_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    rp.add_argument("suite", nargs="+", metavar="SUITE", help=SUITE_HELP + "; then any key=value overrides")
    rp.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in "
                    "the home); the tasks' homes go beside it")
    rp.add_argument("--cache", metavar="DIR", help="the local cache in OSWorld's layout (<DIR>/<task id>/…)")
    rp.add_argument("--mock", action="store_true", help="the offline scripted mock policy instead of a model")
    rp.add_argument("--mock-scripts", metavar="DIR", help="drive each task with the mock script DIR/<task id>.yaml "
                    "(the form --mock-script reads; implies --mock)")
    rp.add_argument("--endpoint", metavar="URL", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    rp.add_argument("--model", metavar="ID", help="served model id (required when the endpoint serves several)")
    rp.add_argument("--max-steps", type=int, metavar="N", help="decisions per task (default: the task's, else 15)")
    rp.add_argument("--max-seconds", type=float, metavar="S", help="time per task (default: the task's, else 600)")
    rp.add_argument("--task-timeout-s", type=float, metavar="S", help="wall-clock limit of each task's loop, which "
                    "--max-seconds (checked between steps) cannot give when a step blocks: once it passes the loop "
                    "is stopped as `conway stop` does and the task is scored as the agent left it, marked timed "
                    f"out; a loop that does not stop within {STOP_GRACE_S:g} s is an error and its desktop is torn "
                    f"down (default: the task's time, --max-seconds, + {TIMEOUT_MARGIN_S:g})")
    rp.add_argument("--keep", action="store_true", help="keep each task's desktop folder (its user home) afterwards")
    rp.add_argument("--network", action="store_true", help="let each task's sandbox share this machine's network, "
                    "so tasks that need the live web run (without it they are not runnable); the report says so. "
                    "Files still come only from --cache (conway tasks fetch fills it)")
    rp.add_argument("--desktop-url", metavar="URL", help="run each task on the machine whose OSWorld guest server "
                    "answers at URL (http://HOST:PORT; OSWorld's own VM) instead of a local disposable desktop: "
                    "tasks.desktop=osworld with tasks.desktop_url=URL")
    rp.add_argument("--quiet", action="store_true", help="no line per task")
    rp.add_argument("--video", action="store_true",
                    help="record each task's screen to a video in its home (videos/<session>.mp4, ffmpeg x11grab, "
                         "at most 200 MB), linked from the report and the viewer; off by default")
    add_pool_args(rp)  # each worker runs its tasks one at a time, each on its own disposable desktop


CHECK_DESCRIPTION = f"""\
Prove which runnable tasks of a suite can be passed here: each task's oracle pair, scripts for the scripted
policy kept apart from the task (DIR/solve/<id>.yaml acts as an agent would and must score 1, or declare FAIL
for an infeasible task; DIR/idle/<id>.yaml must score 0; pass/ and fail/ are read as the same), run through
`conway tasks run` on the task's disposable desktop. A task is "passable here" when both score as they must;
every other outcome is said, with the run's reason. The two runs' reports (and the tasks' homes) are kept
beside FILE: FILE's name + .solve.json and .idle.json. `conway tasks list --verified FILE` marks the tasks
proved passable.

  conway tasks check tests/data/osworld_real/examples --oracles tests/data/osworld_real/mock --output check.json
  conway tasks list tests/data/osworld_real/examples --verified check.json

Configuration overrides (key=value, e.g. tasks.waits=measured) may follow the suite. Exit {ExitCode.PASSED:d} every \
runnable task with an oracle pair is passable here, {ExitCode.NOT_PASSED:d} some are not (or none has a pair), \
{ExitCode.SETUP_ERROR:d} bad input."""


def _add_check(group: argparse._SubParsersAction) -> None:
    cp = group.add_parser("check", help="prove each runnable task passable here with its oracle pair (solve scores "
                          "1, idle scores 0)", description=CHECK_DESCRIPTION,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    cp.add_argument("suite", nargs="+", metavar="SUITE", help=SUITE_HELP + "; then any key=value overrides")
    cp.add_argument("--oracles", required=True, metavar="DIR", help="the oracle scripts: DIR/solve/<id>.yaml and "
                    "DIR/idle/<id>.yaml")
    cp.add_argument("--output", required=True, metavar="FILE", help="new check record (conway-task-check/1); the "
                    "two runs' reports go beside it")
    cp.add_argument("--cache", metavar="DIR", help="the local cache in OSWorld's layout (<DIR>/<task id>/…)")
    cp.add_argument("--network", action="store_true", help="let each task's sandbox share this machine's network")
    cp.add_argument("--quiet", action="store_true", help="no line per task of the runs")


from conway.args.command import OVERRIDE  # noqa: E402  (the commands' one pattern)


def split_overrides(args: argparse.Namespace) -> None:
    """`tasks run SUITE… key=value…`: argparse cannot tell the two lists apart, so a word shaped like an
    override that is not an existing path is one."""
    words = list(args.suite)
    args.overrides = [w for w in words if OVERRIDE.match(w) and not Path(w).exists()]
    args.suite = [w for w in words if w not in args.overrides]
    if not args.suite:
        raise UserError("name the suite to run (a folder, task files or an OSWorld test_*.json index)")


def step_types() -> frozenset[str]:
    from conway.sandbox.setup import STEP_TYPES  # the setup steps the disposable desktop runs
    return STEP_TYPES


def do_list(args: argparse.Namespace) -> int:
    from conway.evals.task_oracles import verified_tasks
    from conway.tasks.listing import exit_code, list_suite, render_listing
    verified = verified_tasks(args.verified) if args.verified else set()
    record = list_suite(args.suite, cache=args.cache, step_types=step_types(), verified=verified)
    print(json.dumps(record, indent=2) if args.json else render_listing(record))
    return exit_code(record)


def do_run(args: argparse.Namespace) -> int:
    from conway.args.resolve import home_of, model_config_of
    from conway.evals.pool import pool_of
    from conway.evals.tasks_run import tasks_run
    split_overrides(args)
    home = home_of(args)
    args.mock = args.mock or bool(args.mock_scripts)  # scripts are the mock's
    args.mock_script = None  # one script per task (--mock-scripts), never one for all
    cfg = with_desktop_url(model_config_of(args, home), args.desktop_url)
    return tasks_run(home, cfg, args.suite, output=args.output, cache=args.cache, mock_scripts=args.mock_scripts,
                     keep=args.keep, video=args.video, max_steps=args.max_steps, max_seconds=args.max_seconds,
                     task_timeout_s=args.task_timeout_s, quiet=args.quiet, argv=args._argv,
                     pool=pool_of(args, cfg, home), resume=args.resume, network=args.network)


def do_check(args: argparse.Namespace) -> int:
    from conway.args.resolve import home_of, model_config_of
    from conway.evals.task_oracles import check
    from conway.evals.tasks_run import _check_folder, plan_cases, tasks_run
    from conway.tasks.task import load_suite
    split_overrides(args)
    home = home_of(args)
    args.mock, args.mock_script, args.endpoint, args.model = True, None, None, None  # the oracles are scripts
    cfg = model_config_of(args, home)
    cache = _check_folder(args.cache, "--cache")
    out = Path(args.output).expanduser().resolve()

    def run(files: list[str], scripts: Path, report: Path) -> int:
        return tasks_run(home, cfg, files, output=str(report), cache=args.cache, mock_scripts=str(scripts),
                         quiet=args.quiet, argv=args._argv, network=args.network)
    return check(args.suite, Path(args.oracles).expanduser().resolve(), out, run,
                 lambda sources: plan_cases(load_suite(sources), cache, args.network))


def with_desktop_url(cfg: Any, url: str | None) -> Any:
    """`--desktop-url URL`: the osworld provider at URL (a provider other than local that was named stays)."""
    return with_desktop(cfg, None, url)


def with_desktop(cfg: Any, name: str | None, url: str | None) -> Any:
    """`--desktop NAME` / `--desktop-url URL` into `tasks.*`: the provider by name; a URL alone means osworld
    (a provider other than local that was named stays); a one-line UserError for a bad URL."""
    if not (name or url):
        return cfg
    from conway.config import TasksConfig

    desktop = name or ("osworld" if cfg.tasks.desktop == "local" else cfg.tasks.desktop)
    given = {"desktop": desktop, **({"desktop_url": url} if url else {})}
    try:
        tasks = TasksConfig.model_validate({**cfg.tasks.model_dump(), **given})
    except ValueError:
        if url:
            raise UserError(f"--desktop-url must be http(s)://HOST:PORT (got {url!r})") from None
        raise UserError(f"--desktop {name!r} is not a provider's short name") from None
    return cfg.model_copy(update={"tasks": tasks})


def do_doctor(args: argparse.Namespace) -> int:
    from conway.desktops.qemu import machine_record, render_machine
    from conway.tasks.facts import doctor, doctor_passed, render_doctor
    record = doctor()
    record["qemu"] = machine_record()  # what the machine has for OSWorld's own VM (tasks.desktop=qemu)
    print(json.dumps(record, indent=2) if args.json else "\n".join([render_doctor(record),
                                                                    *render_machine(record["qemu"])]))
    return int(ExitCode.PASSED if doctor_passed(record) else ExitCode.NOT_PASSED)


def do_fetch(args: argparse.Namespace) -> int:
    from conway.tasks.fetch import fetch_suite
    return fetch_suite(args.suite, args.cache, quiet=args.quiet)


SUBCOMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"list": do_list, "run": do_run, "fetch": do_fetch,
                                                            "doctor": do_doctor, "check": do_check}


def do_tasks(args: argparse.Namespace) -> int:
    return SUBCOMMANDS[args.tasks_command](args)
