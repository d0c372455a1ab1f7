"""`conway tasks run SUITE --output REPORT`: each task on its own disposable desktop, through the real loop, scored.

For each task of the suite (`conway.tasks.task.load_suite`):

1. the runnable check (`conway.tasks.runnable`): a task that cannot run here is
   a `not-runnable` case with its reasons, never started and never scored;
2. a disposable desktop from the provider `tasks.desktop` names
   (`conway.desktops.open_desktop`; `local`, the default, is
   `conway.sandbox.desktop.DisposableDesktop`: private Xvfb, session bus,
   bubblewrap, a user home seen at /home/user; `osworld` is a machine running
   OSWorld's guest server);
3. the task's setup steps (the provider's `run_steps`), each bounded, then the
   runner protocol's wait after setup (`tasks.wait_after_setup_s`);
4. a fresh Conway home and one single session of the real loop
   (`conway.session.task_run.run_task`: a `finish` ends it; the budget is the
   command line's, else the task's, else `tasks.max_steps` / `DEFAULT_MAX_SECONDS`; OSWorld's pause after
   each action),
   observing and acting on the desktop's display, its shell and files in the
   desktop's sandbox, under a wall-clock limit (`conway.session.task_watchdog`:
   `--task-timeout-s`, default the time budget + 120 s): when it passes the
   loop is stopped as `conway stop` stops a run and the task is still scored
   (OSWorld scores whatever state the agent left), marked `timed_out`; a loop
   that does not end within a grace of the stop has its desktop torn down
   and is an `error`;
5. OSWorld's settle, then the task's own evaluator (`conway.tasks.evaluate`: postconfig first).

A task that fails anywhere (setup hangs, the application never opens its
window, the loop crashes, a checker raises) is one `error` case with one line
saying where and why, and the suite goes on. Ctrl+C ends the task in flight,
and the report of the tasks that finished is written, marked partial.

Each task's Conway home is kept beside the report (`<report>.tasks/NN-<id>/home`),
so `conway view` and `conway export --from-report` find its session; the
desktop (its user home, Xvfb, the sandbox) is gone after the task unless `--keep`.

This is the one module that runs a suite of tasks; around it: the task itself
(loading, runnability, setup's contract, scoring) in `conway.tasks`, one task's
session in `conway.session.task_run` and its wall-clock guard in
`conway.session.task_watchdog`, the report's numbers and text in
`conway.evals.tasks_summary`.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conway.config import ConwayConfig
from conway.errors import UserError
from conway.evals import tasks_summary
from conway.evals.pool import LOST, Pool
from conway.evals.report import Report
from conway.evals.runner import check_outputs, run_suite, suite_policy
from conway.evals.task_protocol import RunnerProtocol, deviations
from conway.protocols import Policy
from conway.session.acceptance import declared_record
from conway.session.task_watchdog import STOP_GRACE_S, TIMEOUT_MARGIN_S, TaskWatchdog, default_timeout
from conway.store.home import Home
from conway.text.error_line import error_line

DEFAULT_MAX_STEPS = 15
"""OSWorld's own default step budget per task."""
DEFAULT_MAX_SECONDS = 600.0
MOCK_SUFFIXES = (".yaml", ".yml", ".jsonl")
WINDOW_WAIT_S = 30.0
COMMAND_TIMEOUT_S = 60.0
MISSING = "result not found"
"""How the evaluator marks a result file the agent never made (an ordinary 0, not a checker's error)."""

INSTRUCTIONS = Path(__file__).resolve().parent.parent / "prompt" / "instructions"
CONSTITUTION_FILE = INSTRUCTIONS / "tasks_run_constitution.md"
"""The constitution each task's fresh home is given: one task on a disposable desktop, FAIL for an impossible one."""
GOALS_FILE = INSTRUCTIONS / "tasks_run_goals.md"


def _refuse_breaches(desk: Any, record: dict[str, Any]) -> None:
    """A step killed by a limit is a failed step, never a success: a task whose desktop hit one is not scored."""
    breaches = desk.breaches() if hasattr(desk, "breaches") else []
    if breaches:
        record["limits"] = breaches
        raise RuntimeError("the task's desktop hit its limits: " + "; ".join(breaches))


def box_limits(config: ConwayConfig) -> Any:
    """The desktop box's limits from `sandbox.*`."""
    from conway.sandbox.box import BoxLimits

    return BoxLimits(**config.sandbox.model_dump())


@dataclass
class TaskCase:
    """One entry of the suite, in the report's order: a task (with its reasons not to run), or a load problem."""

    index: int
    task: Any = None
    """A `conway.tasks.task.Task`, or None for a file that could not be read."""
    problem: Any = None
    """A `conway.tasks.task.Problem` (path + reason) when the file could not be read."""
    reasons: list[str] = field(default_factory=list)


def tasks_folder(report_path: Path) -> Path:
    """Where the tasks' Conway homes are kept: beside the report, named after it."""
    return report_path.with_name(report_path.stem + ".tasks")


def _task_home(home: Home) -> None:
    """A fresh Conway home for one task: its constitution and goals from the prompt files."""
    home.ensure_dirs()
    home.constitution.write_text(CONSTITUTION_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    home.goals.write_text(GOALS_FILE.read_text(encoding="utf-8"), encoding="utf-8")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80] or "task"


def budget(task: Any, max_steps: int | None, max_seconds: float | None,
           default_steps: int = DEFAULT_MAX_STEPS) -> tuple[int, float]:
    """The command line's budget, else the task's, else the defaults (`tasks.max_steps` for the steps)."""
    steps = max_steps or getattr(task, "max_steps", None) or default_steps
    seconds = max_seconds or getattr(task, "max_seconds", None) or DEFAULT_MAX_SECONDS
    return int(steps), float(seconds)


def task_timeout(task_timeout_s: float | None, seconds: float) -> float:
    """The wall-clock limit of one task's loop: the command line's, else its time budget + the margin."""
    return float(task_timeout_s) if task_timeout_s is not None else default_timeout(seconds)


def mock_script_for(folder: Path, task_id: str) -> Path | None:
    for suffix in MOCK_SUFFIXES:
        path = folder / f"{task_id}{suffix}"
        if path.is_file():
            return path
    return None


@dataclass
class TasksSuite:
    """The runner's `CaseSuite` for task files: one disposable desktop and one session per task."""

    config: ConwayConfig
    folder: Path
    """`tasks_folder(report)`: the tasks' Conway homes."""
    report_dir: Path
    total: int
    cache: Path | None = None
    mock_scripts: Path | None = None
    keep: bool = False
    video: bool = False
    """`--video`: each task's screen recorded to its home's videos/<session>.mp4, linked from its case."""
    max_steps: int | None = None
    max_seconds: float | None = None
    task_timeout_s: float | None = None
    """The wall-clock limit of each task's loop (None: `task_timeout`'s default)."""
    stop_grace_s: float = STOP_GRACE_S
    """How long a timed-out loop has to end after its stop before its desktop is torn down."""
    quiet: bool = False
    say: Callable[[str], None] = print
    window_wait_s: float = WINDOW_WAIT_S
    """How long a launch/open step waits for its application's window (a loaded machine starts apps slowly)."""
    command_timeout_s: float = COMMAND_TIMEOUT_S
    """The bound on one execute/command setup step."""
    network: bool = False
    """`--network`: each task's desktop reaches the internet from a network of its own (slirp4netns), never this
    machine's loopback or its X servers (tasks that need the live web run)."""
    display_sizes: list[tuple[int, int]] = field(default_factory=list)
    screen: tuple[int, int] = (1280, 800)
    """The disposable desktop's screen size (OSWorld's 1280x800; `conway rollouts --screen` for small models)."""
    kind = "tasks"

    # -- one case ------------------------------------------------------------------

    def run_case(self, policy: Policy, case: TaskCase) -> dict[str, Any]:
        record = self._base(case)
        if case.problem is not None:
            record.update(outcome="malformed", error=case.problem.reason)
        elif case.reasons:
            record.update(outcome="not-runnable", reasons=list(case.reasons))
        else:
            started = time.monotonic()
            try:
                self._run(policy, case, record)
            except Exception as exc:  # anything a task does wrong is its own line; the suite goes on
                record.update(outcome="error", error=f"{record.get('phase', 'run')}: {error_line(exc, 2000)}")
            record["wall_s"] = round(time.monotonic() - started, 3)
        self._progress(case, record)
        return record

    def _progress(self, case: TaskCase, record: dict[str, Any]) -> None:
        """The task's line, as the report will count it: one that ends after Ctrl+C is not a result (the runner
        drops it, and `--resume` runs it again), so its outcome is not shown as one."""
        from conway.cancel import current_cancel

        token = current_cancel()
        if token is not None and token.is_set():
            if not self.quiet:
                self.say(f"[{case.index + 1}/{self.total}] {record['task']}: not counted — {token.reason} before "
                         "it finished (--resume runs it again)")
            return
        self._outcome_line(case, record)

    def _base(self, case: TaskCase) -> dict[str, Any]:
        task = case.task
        if task is None:
            return {"index": case.index, "task": Path(str(case.problem.path)).stem, "source": str(case.problem.path),
                    "domain": None, "related_apps": [], "instruction": None}
        return {"index": case.index, "task": task.id, "source": str(task.source), "format": task.format,
                "domain": task.domain, "related_apps": list(task.related_apps), "instruction": task.instruction,
                "raw": task.raw}

    def protocol(self) -> tuple[Any, list[str]]:
        """The runner protocol's settings (`tasks.*`, OSWorld's by default on every provider) and their
        deviations from OSWorld's runner."""
        return self.config.tasks, deviations(self.config.tasks)

    def _run(self, policy: Policy, case: TaskCase, record: dict[str, Any]) -> None:
        from conway.desktops import DesktopRequest, open_desktop

        task = case.task
        steps, seconds = budget(task, self.max_steps, self.max_seconds, self.config.tasks.max_steps)
        record["budget"] = {"max_steps": steps, "max_seconds": seconds,
                            "task_timeout_s": task_timeout(self.task_timeout_s, seconds)}
        record["phase"] = "policy"
        policy = self._policy_for(task.id, policy)
        root = _case_folder(self.folder / f"{case.index + 1:02d}-{_safe(task.id)}")
        home = Home(root / "home")
        record["phase"] = "desktop"
        request = DesktopRequest(task.id, cache_dir=self.cache, size=self.screen, network=self.network,
                                 keep=self.keep, lease_dir=self.folder / ".guests", limits=box_limits(self.config))
        with open_desktop(self.config.tasks, request) as desk:
            try:
                self._on_desktop(policy, case, record, desk, home, root, steps, seconds)
            finally:
                lost = None if record.get("torn_down") else desk.lost()  # the watchdog's teardown: not a loss
                if lost:  # not the task's doing: in a worker pool the case runs once more on a fresh desktop
                    record[LOST] = lost
        record.pop("phase", None)

    def _on_desktop(self, policy: Policy, case: TaskCase, record: dict[str, Any], desk: Any, home: Home, root: Path,
                    steps: int, seconds: float) -> None:
        from conway.cancel import current_cancel
        from conway.loop.ending import RunEnd
        from conway.session.task_run import run_task

        task = case.task
        limits = self._set_up(desk, task, record)
        protocol = RunnerProtocol(self.config.tasks, applies=task.format == "osworld")
        record["phase"] = "wait after setup"
        protocol.after_setup(desk.task_env())
        record["phase"] = "run"
        _task_home(home)
        cfg = self._task_config(desk)
        token = current_cancel()
        if token is not None and token.is_set():  # Ctrl+C during setup: the loop is not started (and
            raise RuntimeError(f"not started: {token.reason}")  # the runner drops this unfinished case)
        limit = task_timeout(self.task_timeout_s, seconds)
        dog = TaskWatchdog(home, limit, self.stop_grace_s, teardown=desk.kill)
        try:
            with dog:
                run = run_task(home, cfg, task.instruction, max_steps=steps, max_seconds=seconds, policy=policy,
                               observer=self._observer(cfg, home, desk),
                               toolbox=protocol.paced(self._toolbox(cfg, home, desk), desk.task_env()),
                               say=self.say, quiet=True, video=self.video)
        finally:  # also when the loop raised: a torn-down desktop is the watchdog's doing, not a lost one
            if dog.fired:
                record.update(timed_out=True, elapsed_s=dog.elapsed_s)
            if dog.torn_down:
                record["torn_down"] = True
        outcome = run.outcome
        if outcome.end in (RunEnd.INTERRUPTED, RunEnd.TERMINATED) and token is not None:
            token.set(outcome.reason)  # the suite stops: this task did not finish
        self._final_screen(record, desk, home, root, run.session)
        record.update(session=run.session, home=_relative(home.root, self.report_dir),
                      view=f"conway --home {shlex.quote(str(home.root))} view --session {run.session}",
                      steps=outcome.steps, stop_reason=(f"task timeout ({limit:g} s): " if dog.fired else "")
                      + outcome.reason,
                      declared=declared_record(outcome.finish), valid_decisions=outcome.valid_decisions,
                      model_errors=dict(outcome.model_errors), cost=_cost(home, run.session),
                      model_id=getattr(policy, "model_id", None))  # a pool's report has no policy of its own
        if dog.torn_down:  # the loop ignored the stop: the state it left is not the agent's to be scored
            raise RuntimeError(f"timed out after {limit:g} s and did not stop within {self.stop_grace_s:g} s of "
                               "the stop request; the desktop was torn down (its processes killed)"
                               + (f"; the teardown failed: {dog.teardown_error}" if dog.teardown_error else ""))
        if outcome.failed:  # the loop crashed (or the disk filled): no score means anything
            raise RuntimeError(outcome.reason)
        _refuse_breaches(desk.task_env(), record)
        self._settle_and_score(task, desk, outcome, protocol, limits, record)

    def _set_up(self, desk: Any, task: Any, record: dict[str, Any]) -> Any:
        """The desktop's facts into the case, then the task's setup steps; the limits they ran under (the
        postconfig runs under them too)."""
        from conway.desktops import StepLimits

        kept = desk.kept()
        if kept:
            record["kept"] = kept
        self.display_sizes.append(tuple(desk.size))
        record["display_size"] = list(desk.size)
        if desk.provider != "local":  # the local desktop's facts are the report's environment already
            record["desktop"] = desk.facts()
        record["phase"] = "setup"
        limits = StepLimits(window_wait_s=self.window_wait_s, command_timeout_s=self.command_timeout_s, notes=[])
        try:
            desk.run_steps(list(task.config), limits)
        finally:
            if limits.notes:  # what OSWorld's setup would only have logged
                record["setup_notes"] = list(limits.notes)
        if desk.provider != "local":  # again: what setup met on the guest (a step it refused that OSWorld lets pass)
            record["desktop"] = desk.facts()
        return limits

    def _settle_and_score(self, task: Any, desk: Any, outcome: Any, protocol: RunnerProtocol, limits: Any,
                          record: dict[str, Any]) -> None:
        """OSWorld's settle, then the task's evaluator on the desktop's TaskEnv (its postconfig through the
        desktop's steps)."""
        from conway.tasks.evaluate import evaluate

        record["phase"] = "settle before evaluation"
        protocol.before_evaluation(desk.task_env())
        if protocol.timings:
            record["protocol"] = dict(protocol.timings)
        record["phase"] = "evaluate"
        declared_fail = (outcome.finish or {}).get("status") == "FAIL"
        result = evaluate(task, desk.task_env(), declared_fail=declared_fail,
                          run_step=lambda step, env: desk.run_steps([step], limits))
        if limits.notes:  # the postconfig's too
            record["setup_notes"] = list(limits.notes)
        record.update(_scored(result))

    def _final_screen(self, record: dict[str, Any], desk: Any, home: Home, root: Path, session: str) -> None:
        """The desktop's last screen (and the run's video when asked) beside the report."""
        record["image"] = final_screen(desk, root / "final.png", self.report_dir)
        video = home.root / "videos" / f"{session}.mp4"
        if self.video and video.is_file():
            record["video"] = _relative(video, self.report_dir)

    # -- the parts of one task ---------------------------------------------------------

    def _policy_for(self, task_id: str, policy: Policy) -> Policy:
        """The policy for one task: its own mock script, or the shared mock restarted (each task starts a
        fresh script), or the model as given."""
        from conway.policies.mock import MockPolicy, load_script
        from conway.sandbox.setup import load_factor

        if self.mock_scripts is None:
            return policy.restarted() if isinstance(policy, MockPolicy) else policy
        path = mock_script_for(self.mock_scripts, task_id)
        if path is None:
            raise UserError(f"no mock script {self.mock_scripts / (task_id + '.yaml')}")
        return MockPolicy(load_script(path), wait_scale=load_factor)

    def _task_config(self, desk: Any) -> ConwayConfig:
        return desk.task_config(self.config)  # which tools act where is the desktop's to say

    def _observer(self, cfg: ConwayConfig, home: Home, desk: Any) -> Any:
        return desk.observer(cfg, home)

    def _toolbox(self, cfg: ConwayConfig, home: Home, desk: Any) -> Any:
        return desk.toolbox(cfg, home)

    def _outcome_line(self, case: TaskCase, record: dict[str, Any]) -> None:
        if self.quiet:
            return
        score = record.get("score")
        tail = record.get("error") or "; ".join(record.get("reasons") or []) or (
            f"score {score:g}, {record.get('steps', 0)} step(s), declared "
            f"{(record.get('declared') or {}).get('status') or 'nothing'}" if isinstance(score, (int, float)) else "")
        timed = f" (timed out after {record['elapsed_s']:g} s)" if record.get("timed_out") else ""
        self.say(f"[{case.index + 1}/{self.total}] {record['task']}: {record['outcome']}{timed}"
                 + (f" — {tail}" if tail else ""))

    # -- the runner's CaseSuite ---------------------------------------------------------------

    def rebase_kept(self, record: dict[str, Any], old_dir: Path) -> dict[str, Any]:
        """A case kept from a resumed report: its home and final screen, named from the old report's folder,
        named from this report's (the homes stay where the first run put them)."""
        out = dict(record)
        if isinstance(out.get("home"), str):
            out["home"] = _relative(old_dir / out["home"], self.report_dir)
        image = out.get("image")
        if isinstance(image, dict) and isinstance(image.get("path"), str):
            out["image"] = {**image, "path": _relative(old_dir / image["path"], self.report_dir)}
        return out

    def summarize(self, records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
        return tasks_summary.summarize(records, wall_s)

    def verdict(self, records: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[int, str]:
        return tasks_summary.verdict(records, summary)


def final_screen(desk: Any, path: Path, report_dir: Path) -> dict[str, Any] | None:
    """The desktop's screen when the session ended (what the checker is about to look at), kept beside the home."""
    import io

    from PIL import Image

    png = desk.screenshot()
    if not png:  # a lost display leaves the card without a picture; the score does not depend on it
        return None
    try:
        with Image.open(io.BytesIO(png)) as img:
            size = list(img.size)
        path.write_bytes(png)
    except Exception:
        return None
    return {"path": _relative(path, report_dir), "size": size}


def _relative(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def _cost(home: Home, session: str) -> dict[str, Any]:
    from conway.experience.costs import session_cost

    rec = session_cost(home.journal_dir, session).record()
    return {**rec["total"], "wall_s": rec["wall_s"], "models": sorted(rec["by_model"])}


def _scored(result: Any) -> dict[str, Any]:
    """The evaluator's result as the case's fields. A checker that raised, or a postconfig step that failed,
    makes the case an error (its score is kept, not counted); a result file the agent never made is a 0."""
    metrics = [m.record() for m in result.metrics]
    score = float(result.score)
    broken = [f"{m['func']}: {m['error']}" for m in metrics
              if m.get("error") and not str(m["error"]).startswith(MISSING)]
    broken = list(result.postconfig_errors) + broken
    out: dict[str, Any] = {"outcome": "error" if broken else ("pass" if score >= 1.0 else "fail"), "score": score,
                           "metrics": metrics, "verified": score >= 1.0}
    if result.note:
        out["note"] = result.note
    if broken:
        out["error"] = f"evaluate: {broken[0]}"
    return out


# --- the command -------------------------------------------------------------------------


def plan_cases(suite: Any, cache: Path | None, network: bool = False, desktop: str = "local") -> list[TaskCase]:
    """The suite's tasks with their reasons not to run on the `desktop` provider's desktops, then its load
    problems, in one list."""
    from conway.desktops import provider
    from conway.tasks.runnable import why_not_runnable

    here = provider(desktop).runnable(network)  # which setup steps it runs, what is looked for on this machine
    cases = [TaskCase(i, task=t, reasons=list(why_not_runnable(t, cache_dir=cache, **here)))
             for i, t in enumerate(suite.tasks)]
    cases += [TaskCase(len(cases) + i, problem=p) for i, p in enumerate(suite.problems)]
    return cases


def _check_folder(raw: str | None, what: str) -> Path | None:
    if raw is None:
        return None
    path = Path(raw).expanduser()
    if not path.exists():
        raise UserError(f"{what} {path} does not exist")
    if not path.is_dir():
        raise UserError(f"{what} {path} is not a folder")
    return path.resolve()


def tasks_run(home: Home, config: ConwayConfig, suite_source: str | list[str], *, output: str,
              cache: str | None = None, mock_scripts: str | None = None, keep: bool = False, video: bool = False,
              max_steps: int | None = None, max_seconds: float | None = None, task_timeout_s: float | None = None,
              quiet: bool = False, argv: list[str] | None = None, policy: Policy | None = None,
              say: Callable[[str], None] | None = None, window_wait_s: float = WINDOW_WAIT_S,
              command_timeout_s: float = COMMAND_TIMEOUT_S, stop_grace_s: float = STOP_GRACE_S,
              pool: Pool | None = None, resume: str | None = None, screen: tuple[int, int] = (1280, 800),
              network: bool = False) -> int:
    """The command; `window_wait_s` and `command_timeout_s` bound the setup steps, `stop_grace_s` how long a
    timed-out loop has to end after its stop (tests make them short).

    With `pool` each worker runs one task at a time (each on its own disposable desktop, its home under the
    report's tasks folder: on a Ray cluster that folder must be at the same path on every node)."""
    from conway.desktops import check_settings
    from conway.session.app import console_say
    from conway.tasks.task import load_suite

    say = say or console_say  # flushed: a line per task reaches a pipe as it happens
    _check_limits(max_steps, max_seconds, task_timeout_s)
    check_settings(config.tasks)  # a provider that cannot work as configured is said before any task starts
    cache_dir = _check_folder(cache, "--cache")
    scripts = _check_folder(mock_scripts, "--mock-scripts")
    suite = load_suite(suite_source)
    cases = plan_cases(suite, cache_dir, network, config.tasks.desktop)
    if not cases:
        raise UserError(f"suite {suite_source} holds no task files")
    config = config.for_task_formats({c.task.format for c in cases if c.task is not None})  # OSWorld's: its prompt
    out, _ = check_outputs(output, home, cases=len(cases))
    _check_outside(out, suite_source)
    folder = tasks_folder(out)
    if folder.exists() and folder != _resumed_folder(resume):
        raise UserError(f"{folder} (where the tasks' homes go) already exists; choose a new report name")
    runner = TasksSuite(config, folder, out.parent, len(cases), cache=cache_dir, mock_scripts=scripts, keep=keep,
                        video=video, max_steps=max_steps, max_seconds=max_seconds, task_timeout_s=task_timeout_s,
                        stop_grace_s=stop_grace_s, quiet=quiet, say=say, window_wait_s=window_wait_s,
                        command_timeout_s=command_timeout_s, screen=tuple(screen), network=network)
    report = Report("tasks", out, argv=argv, config=config, expected_cases=len(cases), parameters={
        "suite": suite_source, "cache": str(cache_dir) if cache_dir else None,
        "mock_scripts": str(scripts) if scripts else None, "keep": keep, "video": video, "max_steps": max_steps,
        "max_seconds": max_seconds, "task_timeout_s": task_timeout_s, "stop_grace_s": stop_grace_s,
        "tasks_folder": folder.name, "network": network, **_desktop_parameters(runner),
        "setup_limits": {"window_wait_s": window_wait_s, "command_timeout_s": command_timeout_s},
        "protocol": {**config.tasks.model_dump(), "deviations": deviations(config.tasks)},
        "defaults": {"max_steps": config.tasks.max_steps, "max_seconds": DEFAULT_MAX_SECONDS,
                     "task_timeout_s": f"max_seconds + {TIMEOUT_MARGIN_S:g}"}})
    if resume:  # a report that cannot be resumed is refused before anything is made or said
        from conway.evals.runner import resume_records
        resume_records(resume, report, len(cases))
    folder.mkdir(exist_ok=True)  # the resumed report's own folder (a sweep resumes a cell under its name)
    if not quiet:
        runnable = sum(1 for c in cases if c.task is not None and not c.reasons)
        say(f"tasks run: {len(cases)} task(s), {runnable} runnable here; homes in {folder}"
            + ("; each desktop reaches the internet from a network of its own (--network: slirp4netns), never "
               "this machine's loopback or X servers" if network else ""))
    with suite_policy(config, home, policy, pool) as pol:
        result = run_suite(runner, pol, cases, report, progress=False, pool=pool, resume=resume,
                           extra=lambda res: _extra(runner, cases, res.records))
    _say_result(result.summary, out, say)
    return result.code


def _resumed_folder(resume: str | None) -> Path | None:
    """The tasks folder of the report being resumed: a run that resumes into it (a sweep resumes a cut cell
    under the cell's report name, the partial one moved aside) adds its tasks beside the kept ones."""
    if not resume:
        return None
    from conway.evals.report import load_report

    name = (load_report(resume)[0].get("parameters") or {}).get("tasks_folder")
    return Path(resume).expanduser().resolve().parent / name if isinstance(name, str) and name else None


def _case_folder(root: Path) -> Path:
    """`root`, or beside it when a cut run of the resumed report left it (that run's home is kept as it was)."""
    n, path = 1, root
    while path.exists():
        path, n = root.with_name(f"{root.name}.{n}"), n + 1
    return path


def _check_limits(max_steps: int | None, max_seconds: float | None, task_timeout_s: float | None) -> None:
    if max_steps is not None and max_steps < 1:
        raise UserError(f"--max-steps must be at least 1 (got {max_steps})")
    if max_seconds is not None and max_seconds <= 0:
        raise UserError(f"--max-seconds must be positive (got {max_seconds})")
    if task_timeout_s is not None and task_timeout_s <= 0:
        raise UserError(f"--task-timeout-s must be positive (got {task_timeout_s})")


def _check_outside(out: Path, suite_source: str | list[str]) -> None:
    """The report goes outside the suite's folders: the tasks' homes beside it would be read as task files."""
    for source in [suite_source] if isinstance(suite_source, str) else suite_source:
        root = Path(source).expanduser().resolve()
        if root.is_dir() and out.parent.resolve().is_relative_to(root):
            raise UserError(f"the report {out} would lie inside the suite {root}: its tasks' homes beside it would "
                            "be read as task files next time; write it somewhere else")


def _desktop_parameters(runner: TasksSuite) -> dict[str, Any]:
    """The report's record of the desktop provider: absent for the local desktop (its reports stay as they
    were), else the provider, its address and its options."""
    settings = runner.config.tasks
    if settings.desktop == "local":  # the protocol is in the report's parameters for every provider
        return {}
    return {"desktop": {"provider": settings.desktop, "url": settings.desktop_url,
                        "options": dict(settings.desktop_options)}}


def _extra(runner: TasksSuite, cases: list[TaskCase], records: list[dict[str, Any]]) -> dict[str, Any]:
    from conway.tasks.facts import environment_facts, programs_of

    guest = next((r["desktop"] for r in records if isinstance(r.get("desktop"), dict)), None)
    if guest is not None or runner.config.tasks.desktop != "local":  # OSWorld's own machine: its facts, not ours
        return {"environment": {"desktop": (guest or {}).get("line") or runner.config.tasks.desktop,
                                "display_size": "x".join(map(str, guest["screen"])) if guest else None},
                "differences_from_osworld": [f"runner protocol: {d}" for d in deviations(runner.config.tasks)]}
    programs = {exe for c in cases if c.task is not None and not c.reasons for exe in programs_of(c.task)}
    sizes = runner.display_sizes or [tuple(r["display_size"]) for r in records if r.get("display_size")]
    size = sizes[0] if sizes else None  # a pool's workers report theirs in the records
    return {"environment": environment_facts(programs, size),
            "differences_from_osworld": tasks_summary.differences(network=runner.network)
            + deviations(runner.config.tasks)}


def _say_result(summary: dict[str, Any], out: Path, say: Callable[[str], None]) -> None:
    s = summary.get("success") or {}
    rate = f" = {s['hit_rate']:.1%}" if summary.get("scored") else ""
    say(f"tasks run: passed {summary['passed']}/{summary['scored']} scored{rate}; errors {summary['errors']}, "
        f"not runnable {summary['not_runnable']}, malformed {summary['malformed']}"
        + (f"; timed out {summary['timed_out']}" if summary.get("timed_out") else "")
        + (f"; {summary['interrupted']}" if summary.get("interrupted") else ""))
    say(f"report: {out} (conway view {out})")
