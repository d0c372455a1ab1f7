"""One task through the real loop in its own home: a single session, its outcome and its record.

    run = run_task(home, config, "Write out/report.txt ...", max_steps=10, policy=policy)
    run.outcome.finish, run.outcome.steps, run.events()

Used by `conway start --task` / `--task-file` (conway.evals.task_files), by
`conway acceptance-check` (each check in a fresh temporary home), and so by the
demos that run tasks through `conway start` (scripts/demos/board_runs.py).

Nothing process-wide changes: the home is passed explicitly, never through
`os.environ`, and the shell tool's commands get `CONWAY_HOME=<that home>` in
their own environment, so a nested `conway run` from the agent's shell meets
the lock this session holds and is refused (agents are never started
recursively).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from conway.config import ConwayConfig
from conway.loop.control import Clock
from conway.loop.parts import RunOutcome
from conway.protocols import Actuator, Observer, Policy
from conway.session.app import RunRequest, console_say, run_agent
from conway.store.home import Home


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
             say: Callable[[str], None] = console_say) -> TaskRun:
    """One single session of the loop on `home` (plan only unless `execute`); the lock is held throughout.

    Without `toolbox` the configured tools are built inside the lock, their shell told the home; a given
    toolbox is the caller's (`no_desktop_toolbox` tells its shell the home too).
    """
    config = with_budget(config, max_steps, max_seconds)
    outcome, session = run_agent(home, config, RunRequest(
        single_session=True, dry_run=not execute, quiet=quiet, task=task, policy=policy, observer=observer,
        toolbox=toolbox, clock=clock, shell_env=shell_env(home)), say=say)
    return TaskRun(outcome=outcome, session=session, home=home)
