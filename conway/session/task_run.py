"""One task through the real loop in its own home: a single session, its outcome and its record.

    run = run_task(home, config, "Write out/report.txt ...", max_steps=10, policy=policy)
    run.outcome.finish, run.outcome.steps, run.events()

Used by `conway start --task` / `--task-file` (`run_task_session` below: the
session on a copy of memory, then the task file's criteria verified, the
acceptance journaled and reported), by `conway acceptance-check` (each check in
a fresh temporary home), by `conway tasks run` (each task on its desktop,
`conway.evals.tasks_run`), and so by the demos that run tasks through
`conway start` (scripts/demos/board_runs.py).

Nothing process-wide changes: the home is passed explicitly, never through
`os.environ`, and the shell tool's commands get `CONWAY_HOME=<that home>` in
their own environment, so a nested `conway run` from the agent's shell meets
the lock this session holds and is refused (agents are never started
recursively).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from conway.config import ConwayConfig
from conway.errors import ExitCode
from conway.loop.control import Clock
from conway.loop.parts import RunOutcome
from conway.protocols import Actuator, Observer, Policy
from conway.session.acceptance import declared_record, record_in_journal, session_home, session_summary
from conway.session.app import RunRequest, console_say, run_agent
from conway.store.home import Home
from conway.tasks.task_file import TaskSpec, verify


@dataclass(frozen=True)
class TaskRun:
    outcome: RunOutcome
    session: str
    home: Home

    def events(self) -> list[dict[str, Any]]:
        """The home's journal: what the session recorded (results, errors, its finish)."""
        from conway.store.journal import read_journal
        return read_journal(self.home.journal_dir).events


def shell_env(home: Home) -> dict[str, str]:
    """What a task's shell commands are told on top of Conway's environment: the home the session holds."""
    return {"CONWAY_HOME": str(home.root)}


def with_budget(config: ConwayConfig, max_steps: int | None, max_seconds: float | None) -> ConwayConfig:
    """The config with the task's budgets (None: the config's own)."""
    agent = {k: v for k, v in (("max_steps", max_steps), ("max_seconds", max_seconds)) if v is not None}
    if not agent:
        return config
    data = config.model_dump()
    data["agent"].update(agent)
    return ConwayConfig.model_validate(data)


def no_desktop_toolbox(config: ConwayConfig, home: Home, workdir: Path) -> Actuator:
    """The configured non-GUI tools (files, shell) in `workdir`, without skills; the shell knows the home."""
    from conway.tools.registry import build_toolbox
    return build_toolbox(config.tools, workdir, gui=False, api_key_env=config.policy.api_key_env,
                         shell_env=shell_env(home))


def run_task(home: Home, config: ConwayConfig, task: str | None, *, execute: bool = True, quiet: bool = True,
             max_steps: int | None = None, max_seconds: float | None = None, policy: Policy | None = None,
             observer: Observer | None = None, toolbox: Actuator | None = None, clock: Clock | None = None,
             say: Callable[[str], None] = console_say, video: bool = False) -> TaskRun:
    """One single session of the loop on `home` (plan only unless `execute`); the lock is held throughout.

    Without `toolbox` the configured tools are built inside the lock, their shell told the home; a given
    toolbox is the caller's (`no_desktop_toolbox` tells its shell the home too).
    """
    config = with_budget(config, max_steps, max_seconds)
    outcome, session = run_agent(home, config, RunRequest(
        single_session=True, dry_run=not execute, quiet=quiet, task=task, policy=policy, observer=observer,
        toolbox=toolbox, clock=clock, shell_env=shell_env(home), video=video), say=say)
    return TaskRun(outcome=outcome, session=session, home=home)


# --- `conway start`: one session on a task, then its acceptance checked, journaled and reported ---------


class TaskDesktop(Protocol):
    """What `conway start --desktop` hands a session (a `conway.desktops.Desktop`, built by the command line at
    the seam's one construction point): the loop's parts on it, and where the task file's criteria are checked."""

    def observer(self, config: ConwayConfig, home: Home) -> Observer: ...

    def toolbox(self, config: ConwayConfig, home: Home) -> Actuator: ...

    def task_env(self) -> Any: ...

    def facts(self) -> dict[str, Any]: ...


class SessionReporter(Protocol):
    """What `conway start --output` writes around the session (`conway.evals.session_report.SessionReport`): made
    by the command line, handed in, so that the session knows no report format."""

    path: Path

    def finish(self, home: Home, run: TaskRun, results: list[dict[str, Any]] | None, summary: dict[str, Any],
               code: ExitCode, prompt: str | None) -> None: ...


def run_task_session(home: Home, config: ConwayConfig, *, task: str | None, spec: TaskSpec | None, execute: bool,
                     quiet: bool, report: SessionReporter | None = None, say: Callable[[str], None] = print,
                     policy: Policy | None = None, toolbox: Actuator | None = None,
                     desktop: TaskDesktop | None = None) -> int:
    """`conway start`: one session (memory isolated), then verification, journal record and `report`.

    `policy` and `toolbox` replace the configured ones (a scripted session); on a `desktop` the session looks at
    and acts on it, and the criteria are checked there."""
    from conway.session.app import new_session_id

    out = report.path if report is not None else None
    shome = session_home(home, "task-" + new_session_id())
    prompt = spec.prompt() if spec else task
    observer = None
    if desktop is not None:
        if not quiet:
            say(f"desktop: {desktop.facts().get('line') or desktop.facts().get('provider')}")
        observer, toolbox = desktop.observer(config, shome), toolbox or desktop.toolbox(config, shome)
    run = run_task(shome, config, prompt, execute=execute, quiet=quiet, say=say, policy=policy, toolbox=toolbox,
                   observer=observer)
    outcome = run.outcome
    results = _verified(home, config, spec, desktop) if execute else None
    summary = _session_summary(shome, run, spec, results, executed=execute)
    code = session_exit_code(outcome, summary["verified"])
    if report is not None:
        report.finish(home, run, results, summary, code, prompt)
    recorded = record_in_journal(home, run.session, outcome.steps, summary, str(out) if out else None,
                                 config.journal)
    _say_session(say, summary, results, executed=execute, recorded=recorded, report=out)
    # a crash, a full disk, or a model server that kept failing in a way no retry cures: exit 1 and an error line
    if _broke(outcome):
        sys.stderr.write(f"conway: error: the session ended: {outcome.reason} (journal: {outcome.journal})\n")
    return code


def _verified(home: Home, config: ConwayConfig, spec: TaskSpec | None,
              desktop: TaskDesktop | None = None) -> list[dict[str, Any]] | None:
    """The task file's criteria checked in the tools' working directory (on a desktop: there, as `tasks run`
    checks a Conway task); None when it declares none."""
    from conway.session.app import workdir_for

    if not (spec and spec.criteria):
        return None
    if desktop is not None:
        from conway.tasks.evaluate import verify_on
        return verify_on(spec.criteria, desktop.task_env())
    return verify(spec.criteria, workdir_for(config, home))


def _session_summary(shome: Home, run: TaskRun, spec: TaskSpec | None, results: list[dict[str, Any]] | None, *,
                     executed: bool) -> dict[str, Any]:
    from conway.experience.costs import session_cost

    outcome = run.outcome
    summary = session_summary(spec, results, declared_record(outcome.finish), executed=executed,
                              steps=outcome.steps, reason=outcome.reason)
    summary["session"] = run.session
    summary["session_memory"] = str(shome.memory)
    summary["valid_decisions"] = outcome.valid_decisions
    summary["model_errors"] = dict(outcome.model_errors)
    summary["cost"] = session_cost(shome.journal_dir, run.session).record()
    if outcome.no_valid_decision:
        summary["no_valid_decision"] = outcome.no_valid_decision
    return summary


def _broke(outcome: RunOutcome) -> bool:
    """The session ended in a crash, a full disk, or a model server that kept failing in a way no retry cures
    (its setup is wrong, whether or not a valid decision came first)."""
    return bool(outcome.failed or outcome.setup_failed)


def session_exit_code(outcome: RunOutcome, verified: bool | None) -> ExitCode:
    """An uncertain or broken session is a setup error; no valid decision says so; then what Conway verified."""
    if outcome.uncertain or _broke(outcome):
        return ExitCode.SETUP_ERROR
    if outcome.no_valid_decision:
        return ExitCode.NO_VALID_DECISION
    return ExitCode.NOT_PASSED if verified is False else ExitCode.PASSED


def _say_session(say: Callable[[str], None], summary: dict[str, Any], results: list[dict[str, Any]] | None, *,
                 executed: bool, recorded: bool, report: Path | None) -> None:
    declared = summary["declared"]
    if not executed:
        say("plan only: nothing was dispatched (add --execute to act)")
    d = f"{declared['status']}" + (f" ({declared['message']})" if declared and declared.get("message") else "") \
        if declared else "nothing (no finish)"
    say(f"declared by the model: {d}")
    if results is not None:
        for r in results:
            say(f"  {'PASS' if r['verified'] else 'FAIL'}  {r['criterion']}: {r['observed']}")
        say(f"verified by Conway: {summary['verified_passed']}/{len(results)} criteria passed")
    else:
        say(f"verified by Conway: - ({summary['note']})")
    if summary.get("no_valid_decision"):
        say(summary["no_valid_decision"])
    if not recorded:
        say("note: another agent holds this home's lock; the acceptance record was not journaled")
    if report is not None:
        say(f"report: {report}")
