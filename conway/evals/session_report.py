"""`conway start --output REPORT`: the `session` report of one task's session (its criteria as cases, the
verdict), written by the command line around `conway.session.task_run.run_task_session`, which knows no report:
the session sits below the suites and reports (no import from `conway.session` up to `conway.evals`)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from conway.config import ConwayConfig
from conway.errors import ExitCode
from conway.evals.report import Report, check_new_output
from conway.store.home import Home
from conway.tasks.task_file import TaskSpec


class SessionReport:
    """Made before the session (a bad `--output` is refused before anything runs); finished after it."""

    def __init__(self, output: str, home: Home, config: ConwayConfig, task: str | None, spec: TaskSpec | None, *,
                 execute: bool, argv: list[str] | None):
        self.path: Path = check_new_output(output, home)
        self.report = Report("session", self.path, argv=argv, config=config, parameters={
            "execute": execute, "task_file": spec.source if spec else None,
            "task_sha256": spec.sha256 if spec else hashlib.sha256((task or "").encode()).hexdigest(),
            "criteria": [c.record() for c in spec.criteria] if spec else [],
            "max_steps": config.agent.max_steps, "max_seconds": config.agent.max_seconds})

    def on_desktop(self, facts: dict[str, Any]) -> None:
        """`start --desktop`: the task desktop the session ran on (its environment line, as `tasks run` says it)."""
        self.report.data["parameters"]["desktop"] = facts
        self.report.data["environment"] = {"desktop": facts.get("line") or facts.get("provider")}

    def finish(self, home: Home, run: Any, results: list[dict[str, Any]] | None, summary: dict[str, Any],
               code: ExitCode, prompt: str | None) -> None:
        """The session's model, its criteria's results as cases, its status and exit code."""
        self.report.set_model(*_model_of(home, run.session))
        for r in results or []:
            self.report.add_case(r)
        never = run.outcome.no_valid_decision and not run.outcome.uncertain
        status = "no valid decision" if never else \
            {True: "verified", False: "not verified", None: "unverified"}[summary["verified"]]
        self.report.finish(status=status, exit_code=code, summary=summary, task=prompt)


def _model_of(home: Home, session: str) -> tuple[str | None, None, dict[str, Any] | None]:
    """(model id, no endpoint change, what served it) as the session's state recorded them."""
    from conway.store.state import StateStore
    state, _ = StateStore(home.state, home.state_previous).load()
    if state.get("session") != session:
        return None, None, None
    served = state.get("served_by")
    return (str(state["model_id"]) if state.get("model_id") else None), None, \
        (served if isinstance(served, dict) else None)
