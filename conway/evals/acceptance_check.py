"""`conway acceptance-check`: does the real configured model get simple work done?

Two disposable tasks, each one single session of the real loop with the
configured policy, a restricted tool set (files + shell; no GUI, no browser),
a synthetic observation (no desktop) and a fresh temporary home and working
directory:

1. `file_roundtrip`: create a file with given content, read it back.
2. `program_launch`: copy a small program the checker generated, launch the
   copy; the copy leaves a marker naming its own path.

Each is verified **independently** (the file's bytes and a successful read in
the session's own record; the copy's bytes and the marker), never by the
model's `finish`. The report lists each check with the observed outcome and,
separately, what the model declared. Agents are never started recursively:
the loop runs in this process (`conway.session.task_run`), and the shell's
commands get CONWAY_HOME pointing at the task's temporary home, whose lock the
session holds (a nested `conway run` from the shell is refused); this
process's own environment is never changed.

Exit codes (`conway.errors.ExitCode`): 0 every check verified; 2 any not
verified; 3 the model never produced a valid decision in any task; 1 setup
errors.
"""

from __future__ import annotations

import random
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from conway.args.command import CommandPiece, Subparsers, add_model_args, add_overrides, cmd
from conway.args.pool import add_pool_args
from conway.args.resolve import home_of, model_config_of
from conway.config import ConwayConfig
from conway.errors import ExitCode, UserError, exit_codes_text
from conway.evals.pool import Pool, pool_of
from conway.evals.report import Report, check_new_output
from conway.evals.runner import resumed_seed, run_suite, suite_policy
from conway.protocols import Policy, describe_causes
from conway.session.acceptance import declared_record
from conway.store.home import Home

INSTRUCTIONS = Path(__file__).resolve().parent.parent / "prompt" / "instructions"
CONSTITUTION_FILE = INSTRUCTIONS / "acceptance_check_constitution.md"
"""The constitution of each task's fresh home: simple disposable work, checked by Conway, DONE or FAIL."""
GOALS_FILE = INSTRUCTIONS / "acceptance_check_goals.md"
WORDS = ("amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
         "kestrel", "lagoon", "meadow", "nectar", "orbit", "pepper", "quartz", "raven", "saffron", "tundra")

PROGRAM = '''\
# Conway acceptance-check program {token}: leaves a marker next to wherever it runs from.
import os

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "marker-{token}.txt"), "w", encoding="utf-8") as fh:
    fh.write("{nonce} " + os.path.abspath(__file__) + "\\n")
print("marker written")
'''


@dataclass(frozen=True)
class AcceptanceTasks:
    seed: int
    note_name: str
    note_content: str
    program_token: str
    program_nonce: str
    python: str

    @property
    def program_source(self) -> str:
        return f"source/beacon_{self.program_token}.py"

    @property
    def program_copy(self) -> str:
        return f"beacon_{self.program_token}.py"

    @property
    def marker(self) -> str:
        return f"marker-{self.program_token}.txt"

    def file_task(self) -> str:
        return (f"Create a new file named `{self.note_name}` in the working directory whose whole content is "
                f"exactly this one line of text (without the backticks): `{self.note_content}`\n"
                f"Then read the file back to check its content, and finish with DONE if it is exactly that text.")

    def program_task(self) -> str:
        return (f"The working directory holds a small Python program at `{self.program_source}`. Copy it, "
                f"unchanged, to `{self.program_copy}` in the working directory (do not modify or move the "
                f"original). Then launch the copy with this shell command: "
                f"`{shlex.quote(self.python)} {self.program_copy}`\n"
                f"It writes a marker file next to itself. Finish with DONE once the copy has run.")


def make_tasks(seed: int, python: str | None = None) -> AcceptanceTasks:
    """The two tasks for a seed: names and contents are reproducible from the seed alone."""
    rng = random.Random(f"conway-acceptance/1:{seed}")
    token = "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(6))
    words = rng.sample(WORDS, 3)
    return AcceptanceTasks(
        seed=seed, note_name=f"note-{token}.txt",
        note_content=f"conway acceptance {token}: {rng.randint(100, 999)} {' '.join(words)}",
        program_token="".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(6)),
        program_nonce=f"{rng.getrandbits(64):016x}", python=python or sys.executable)


# --- the checks (Conway's own observations) ------------------------------------------


def _results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e.get("payload") or {} for e in events if e.get("kind") in ("result", "error")]


def _action_log(events: list[dict[str, Any]], limit: int = 40) -> list[str]:
    log = []
    for p in _results(events):
        action = p.get("action") or {}
        if not action:
            continue
        args = ", ".join(f"{k}={str(v)[:80]!r}" for k, v in action.items() if k != "type")
        ok = "ok" if p.get("ok") else f"error: {str(p.get('error'))[:80]}"
        log.append(f"{action.get('type')}({args}) → {ok}")
    return log[-limit:]


def verify_file_roundtrip(tasks: AcceptanceTasks, workdir: Path, events: list[dict[str, Any]]) -> tuple[bool, str, dict]:
    path = workdir / tasks.note_name
    want = tasks.note_content.encode("utf-8")
    details: dict[str, Any] = {"path": str(path), "expected_bytes": len(want)}
    if not path.is_file():
        content_ok, observed = False, f"{tasks.note_name} does not exist"
    else:
        data = path.read_bytes()
        details["actual_bytes"] = len(data)
        details["exact"] = data == want
        content_ok = data in (want, want + b"\n")  # one trailing newline is how editors end a line
        observed = (f"{tasks.note_name} holds the expected text" + ("" if data == want else " plus a final newline")
                    if content_ok else f"{tasks.note_name} holds {data[:120]!r}, not the expected text")
    read_back = False
    for p in _results(events):
        action = p.get("action") or {}
        output = str(p.get("output") or "")
        if not p.get("ok") or tasks.note_content not in output:
            continue
        if action.get("type") == "read_file" and Path(str(action.get("path", ""))).name == tasks.note_name:
            read_back = True
        elif action.get("type") == "shell" and tasks.note_name in str(action.get("command", "")):
            read_back = True
    details["read_back_in_record"] = read_back
    observed += "; the session's record shows it read back" if read_back else \
        "; the session's record shows no successful read of it"
    return content_ok and read_back, observed, details


def verify_program_launch(tasks: AcceptanceTasks, workdir: Path, original: bytes) -> tuple[bool, str, dict]:
    src = workdir / tasks.program_source
    copy = workdir / tasks.program_copy
    marker = workdir / tasks.marker
    details: dict[str, Any] = {"copy": str(copy), "marker": str(marker)}
    problems = []
    if not src.is_file() or src.read_bytes() != original:
        problems.append("the original program was changed or removed")
    if not copy.is_file():
        problems.append(f"no copy at {tasks.program_copy}")
    elif copy.read_bytes() != original:
        problems.append(f"{tasks.program_copy} is not an unchanged copy")
    if not marker.is_file():
        stray = workdir / "source" / tasks.marker
        problems.append("no marker next to the copy" + (" (the original was run instead)" if stray.exists() else
                                                         ": the copy was not launched"))
    else:
        text = marker.read_text(encoding="utf-8", errors="replace").strip()
        nonce, _, ran = text.partition(" ")
        details["marker_content"] = text[:300]
        if nonce != tasks.program_nonce:
            problems.append("the marker does not carry the program's nonce (not written by the program)")
        elif Path(ran).resolve() != copy.resolve():
            problems.append(f"the marker says {ran} ran, not the copy")
    if problems:
        return False, "; ".join(problems), details
    return True, "the copy is identical to the original and its marker names the copy as the program that ran", \
        details


# --- the suite ------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One disposable task and how Conway verifies it."""

    number: int
    name: str
    title: str
    task: str
    criterion: str
    prepare: Callable[[Path], None]
    """Puts what the task needs into the fresh working directory."""
    verify: Callable[[Path, list[dict[str, Any]]], tuple[bool, str, dict]]
    """(verified, observed, details) from the working directory and the session's journal."""


def _nothing_to_prepare(work: Path) -> None:
    pass


def _put_program(tasks: AcceptanceTasks, program: bytes, work: Path) -> None:
    (work / "source").mkdir()
    (work / tasks.program_source).write_bytes(program)


def _verify_launch(tasks: AcceptanceTasks, program: bytes, work: Path, _events: list[dict[str, Any]]) -> tuple[bool, str, dict]:
    return verify_program_launch(tasks, work, program)


def make_checks(tasks: AcceptanceTasks) -> list[Check]:
    """The checks, picklable (partials of module-level functions): a worker of the pool gets them whole."""
    program = PROGRAM.format(token=tasks.program_token, nonce=tasks.program_nonce).encode("utf-8")
    return [
        Check(1, "file_roundtrip", "file round trip", tasks.file_task(),
              f"{tasks.note_name} holds exactly the given text and the session read it back",
              _nothing_to_prepare, partial(verify_file_roundtrip, tasks)),
        Check(2, "program_launch", "program copy + launch", tasks.program_task(),
              f"{tasks.program_copy} is an unchanged copy and launching it left {tasks.marker}",
              partial(_put_program, tasks, program), partial(_verify_launch, tasks, program)),
    ]


def _task_config(config: ConwayConfig, workdir: Path) -> ConwayConfig:
    data = config.model_dump()
    data["tools"].update(enabled=["files", "shell"], workdir=str(workdir), mcp_servers=[])  # restricted: no MCP
    data["observe"].update(source="synthetic", accessibility=False, keep_screenshots=0)
    return ConwayConfig.model_validate(data)


@dataclass
class AcceptanceSuite:
    """Each check one single session of the real loop in its own temporary home and working directory."""

    config: ConwayConfig
    base: Path
    """The temporary folder the checks' homes and working directories go in."""
    max_steps: int
    max_seconds: float
    total: int
    say: Callable[[str], None]
    clock: Any = None
    kind = "acceptance-check"

    def run_case(self, policy: Policy, check: Check) -> dict[str, Any]:
        from conway.cancel import current_cancel
        from conway.loop.ending import RunEnd
        from conway.observe.synthetic import SyntheticObserver
        from conway.session.task_run import no_desktop_toolbox, run_task

        root = self.base / check.name
        work = root / "work"
        work.mkdir(parents=True)
        check.prepare(work)
        cfg = _task_config(self.config, work)
        self.say(f"acceptance-check {check.number}/{self.total}: {check.title} in {work}")
        home = Home(root / "home")
        home.ensure_dirs()
        home.constitution.write_text(CONSTITUTION_FILE.read_text(encoding="utf-8"), encoding="utf-8")
        home.goals.write_text(GOALS_FILE.read_text(encoding="utf-8"), encoding="utf-8")
        run = run_task(home, cfg, check.task, max_steps=self.max_steps, max_seconds=self.max_seconds,
                       policy=policy, observer=SyntheticObserver(), toolbox=no_desktop_toolbox(cfg, home, work),
                       clock=self.clock, say=self.say)
        token = current_cancel()
        if run.outcome.end in (RunEnd.INTERRUPTED, RunEnd.TERMINATED) and token is not None:
            token.set(run.outcome.reason)  # the loop took the Ctrl+C: the suite stops, this check did not finish
        events = run.events()
        ok, observed, details = check.verify(work, events)
        return _case(check.name, check.task, check.criterion, run.outcome, ok, observed, details, events)

    def summarize(self, cases: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
        verified = sum(1 for c in cases if c["verified"])
        declared_done = sum(1 for c in cases if (c["declared"] or {}).get("status") == "DONE")
        declared_fail = sum(1 for c in cases if (c["declared"] or {}).get("status") == "FAIL")
        causes: dict[str, int] = {}
        for c in cases:
            for cause, n in c["model_errors"].items():
                causes[cause] = causes.get(cause, 0) + n
        return {"checks": len(cases), "verified_passed": verified, "verified_failed": len(cases) - verified,
                "declared": {"DONE": declared_done, "FAIL": declared_fail,
                             "nothing": len(cases) - declared_done - declared_fail},
                "declared_done_but_not_verified": sum(1 for c in cases if not c["verified"] and
                                                      (c["declared"] or {}).get("status") == "DONE"),
                "note": "verified = Conway's own checks of files and markers; declared = the model's finish",
                "valid_decisions": sum(c["valid_decisions"] for c in cases), "model_errors": causes}

    def verdict(self, cases: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[ExitCode, str]:
        if cases and all(c.get("no_valid_decision") for c in cases):
            summary["no_valid_decision"] = (f"no valid decision in {sum(c['steps'] for c in cases)} step(s) over "
                                            f"{len(cases)} task(s): {describe_causes(summary['model_errors'])}")
            return ExitCode.NO_VALID_DECISION, "no valid decision"
        if summary["verified_passed"] == len(cases):
            return ExitCode.PASSED, "pass"
        return ExitCode.NOT_PASSED, "fail"


def acceptance_check(home: Home, config: ConwayConfig, *, output: str, max_steps: int = 10,
                     max_seconds: float = 600.0, seed: int | None = None, keep: bool = False,
                     argv: list[str] | None = None, policy: Policy | None = None, clock: Any = None,
                     say: Callable[[str], None] = print, pool: Pool | None = None, resume: str | None = None) -> int:
    """`pool`: each check runs in a worker that builds its own policy; the workers' lines go to their standard
    output through `print` (a caller's `say` need not cross a process). `resume`: a partial report's finished
    checks are kept (its seed is used when none is given)."""
    if max_steps < 1:
        raise UserError(f"--max-steps must be at least 1 (got {max_steps})")
    if max_seconds <= 0:
        raise UserError(f"--max-seconds must be positive (got {max_seconds})")
    out = check_new_output(output, home)
    if seed is None and resume:
        seed = resumed_seed(resume)
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    tasks = make_tasks(seed)
    checks = make_checks(tasks)
    with suite_policy(config, home, policy, pool) as policy:
        base = Path(tempfile.mkdtemp(prefix="conway-acceptance-"))
        try:
            report = Report("acceptance-check", out, argv=argv, config=config, seed=seed, parameters={
                "max_steps": max_steps, "max_seconds": max_seconds, "tools": ["files", "shell"], "desktop": False,
                "observation": "synthetic", "python": tasks.python, "kept_tempdir": str(base) if keep else None})
            suite = AcceptanceSuite(config, base, max_steps, max_seconds, len(checks), print if pool else say, clock)
            result = run_suite(suite, policy, checks, report, progress=False, pool=pool, resume=resume)
        finally:
            if not keep:
                shutil.rmtree(base, ignore_errors=True)
    cases, summary = result.records, result.summary
    for c in cases:
        d = c["declared"]
        say(f"  {c['check']:15} verified: {'yes' if c['verified'] else 'NO '}  declared: "
            f"{d['status'] if d else 'nothing'}  — {c['observed']}")
    say(f"acceptance-check: {summary['verified_passed']}/{len(cases)} verified; the model declared DONE on "
        f"{summary['declared']['DONE']}")
    if summary["model_errors"]:
        say(f"model errors: {describe_causes(summary['model_errors'])}")
    if summary.get("no_valid_decision"):
        say(summary["no_valid_decision"])
    if summary.get("interrupted"):
        say(f"{summary['interrupted']}: the report is partial; --resume it to run the rest")
    say(f"report: {out}" + (f" (working files kept in {base})" if keep else ""))
    return result.code


def _case(name: str, task: str, criterion: str, outcome: Any, ok: bool, observed: str, details: dict[str, Any],
          events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"check": name, "task": task, "criterion": criterion, "verified": ok, "observed": observed,
            "declared": declared_record(outcome.finish), "steps": outcome.steps, "stop_reason": outcome.reason,
            "valid_decisions": outcome.valid_decisions, "model_errors": dict(outcome.model_errors),
            "no_valid_decision": outcome.no_valid_decision,
            "actions": _action_log(events), "details": details}


# --- its command, `conway acceptance-check` (registered with its kind in conway.evals.suites) ---


def _add_parser(sub: Subparsers) -> None:
    p = cmd(sub, "acceptance-check", "real-model file and program tasks, verified by Conway, not by the model",
            "Run the configured model through the loop (files + shell only, no desktop) on two disposable\n"
            "tasks in a temporary directory and verify each independently.\n"
            + exit_codes_text("all verified", "any not verified"))
    add_model_args(p)
    p.add_argument("--max-steps", type=int, default=10, metavar="N",
                   help="decisions the model may make per task (default 10; rate limits and failed requests "
                        "do not count)")
    p.add_argument("--max-seconds", type=float, default=600.0, metavar="S", help="time budget per task (default 600)")
    p.add_argument("--seed", type=int, metavar="S", help="seed of the task names and contents (default: random, recorded)")
    p.add_argument("--keep", action="store_true", help="keep the temporary working directories")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    add_pool_args(p)  # each check one session in a worker that builds its own policy
    add_overrides(p)


def _run_command(args) -> int:
    home = home_of(args)
    cfg = model_config_of(args, home)
    return acceptance_check(home, cfg, output=args.output, max_steps=args.max_steps, max_seconds=args.max_seconds,
                            seed=args.seed, keep=args.keep, argv=args._argv, pool=pool_of(args, cfg, home),
                            resume=args.resume)


COMMAND = CommandPiece("acceptance-check", _add_parser, _run_command, after="grounding-check")
