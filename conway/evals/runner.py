"""The one eval runner: cases → policy → one result record per case → summary → report → exit code.

An eval command supplies a `CaseSuite`: how one case is run and scored
(`run_case`, which returns the case's result record), the summary of the
records (`summarize`) and what that summary means (`verdict`: an `ExitCode`
and the report's status). How the cases are made is the command's own
business; it hands them to the runner as a list.

    with suite_policy(config, home, policy, pool) as policy:
        result = run_suite(suite, policy, cases, report, parallel=k, pool=pool, resume=partial_report)
    return result.code

What every command shares around the cases is the runner's: a pool's workers
build their own policies (so `suite_policy` builds none here), the report
records how the cases were spread (`pool_record`), and `--resume` keeps a
partial report's finished cases (`resume_records`, refused before any case).

The runner hands the cases out (`run_cases`: one at a time in this thread, or
K at a time in threads), streams each record to the report as it arrives
(long suites keep their cases in a JSONL file beside the report), puts the
records back in case order, summarises, and writes the report last. It keeps
no state of its own between runs, so the same suite object can be run more
than once (candidate-eval runs it for two models on the same cases).
"""

from __future__ import annotations

import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from conway.cancel import ABORT_GRACE_S, Cancel, cancel_scope
from conway.config import ConwayConfig
from conway.errors import ExitCode, UserError
from conway.evals.pool import Pool, ServedBy, pool_record
from conway.evals.report import (
    INLINE_CASES_MAX,
    Report,
    cases_file_for,
    check_new_output,
    load_report,
    served_by_of,
)
from conway.protocols import Policy, describe_causes
from conway.store.home import Home

Record = dict[str, Any]
POLL_S = 0.25
"""How often the thread that hands out parallel cases looks for a stop."""


class CaseSuite(Protocol):
    """What one eval command supplies to the runner."""

    kind: str
    """The report's kind, e.g. "vision-check" (also the progress bar's label)."""

    def run_case(self, policy: Policy, case: Any) -> Record:
        """Run and score one case; a failure of the case is recorded in the record, never raised."""

    def summarize(self, records: list[Record], wall_s: float) -> dict[str, Any]:
        """The report's summary of every case's record (in case order)."""

    def verdict(self, records: list[Record], summary: dict[str, Any]) -> tuple[ExitCode, str]:
        """(exit code, report status) the summary means; may add the outcome's wording to the summary."""

    # Optional: `rebase_kept(record, old_report_dir) -> record`, for a suite whose records name files relative
    # to their report (a resumed run's report may lie in another folder).


@dataclass
class SuiteResult:
    records: list[Record]
    """One per case, in case order."""
    summary: dict[str, Any]
    code: ExitCode
    status: str
    wall_s: float


class SuiteInterrupted(KeyboardInterrupt):
    """Ctrl+C or SIGTERM ended the cases early: `records` are those that finished (case order)."""

    def __init__(self, reason: str, records: list[Record], wall_s: float, positions: list[int] | None = None):
        super().__init__(reason)
        self.reason, self.records, self.wall_s = reason, records, wall_s
        self.positions = positions if positions is not None else list(range(len(records)))
        """Each record's case position (a case order with gaps when cases ran in parallel)."""


@contextmanager
def stop_on_signals(token: Cancel) -> Iterator[None]:
    """SIGINT and SIGTERM set `token` (aborting the requests in flight); a second Ctrl+C interrupts at once."""
    def handler(signum, frame):
        if token.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        token.set("interrupted (Ctrl+C)" if signum == signal.SIGINT else "terminated (SIGTERM)")

    old: dict[int, Any] = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: the caller handles signals
        pass
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def run_cases(suite: CaseSuite, policy: Policy | None, cases: Sequence[Any], *, parallel: int = 1, progress: bool = True,
              on_record: Callable[[Record], None] | None = None, pool: Pool | None = None,
              skip: dict[int, Record] | None = None, served: ServedBy | None = None) -> tuple[list[Record], float]:
    """Every case through `suite.run_case`; (records in case order, wall seconds).

    One case at a time runs in this thread; K > 1 run in K threads; with `pool` in worker processes or Ray
    actors that build their own policies (`conway.evals.pool`). `on_record` sees each record as it is done
    (completion order). `skip`: records of cases already finished (a resumed run), by position, kept as
    they are. Ctrl+C or SIGTERM aborts the requests in flight (`conway.cancel`), drops the cases not done
    and raises `SuiteInterrupted` with the records of those that finished. `served` gathers what served the
    pool workers' models (their policies stay in the workers).
    """
    skip = skip or {}
    bar = _progress_bar(suite.kind, len(cases), len(skip)) if progress else None
    done: list[tuple[int, Record]] = list(skip.items())
    todo = [(position, case) for position, case in enumerate(cases) if position not in skip]
    token = Cancel()

    def take(position: int, record: Record) -> None:
        if token.is_set():  # finished by the abort: not a result of the case
            return
        done.append((position, record))
        if on_record:
            on_record(record)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(hits=sum(1 for _, r in done if r.get("hit")), refresh=False)

    def one(case: Any) -> Record:
        with cancel_scope(token):  # the policy's request finds the token and aborts when it is set
            return suite.run_case(policy, case)

    def states(by_worker: dict[str, str]) -> None:
        if bar is not None:
            busy = sum(1 for v in by_worker.values() if v != "idle")
            bar.set_postfix(workers=f"{busy}/{len(by_worker)} busy",
                            hits=sum(1 for _, r in done if r.get("hit")), refresh=False)

    started = time.perf_counter()
    try:
        with stop_on_signals(token):
            if pool is not None:
                _run_in_pool(suite, pool, todo, take, token, states, served)
            elif parallel <= 1:
                for position, case in todo:
                    if token.is_set():
                        break
                    take(position, one(case))
            else:
                _run_in_threads(one, todo, take, token, parallel, suite.kind)
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - started
    ordered = sorted(done, key=lambda pr: pr[0])
    records = [r for _, r in ordered]
    if token.is_set():
        raise SuiteInterrupted(token.reason or "interrupted", records, wall, [p for p, _ in ordered])
    return records, wall


def _progress_bar(name: str, total: int, initial: int) -> Any:
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=name, unit="case", file=sys.stderr, leave=False)


def _run_in_pool(suite: CaseSuite, pool: Pool, todo: list[tuple[int, Any]], take: Callable[[int, Record], None],
                 token: Cancel, states: Callable[[dict[str, str]], None], served: ServedBy | None) -> None:
    """The cases in the pool's workers, which build their own policies (`conway.evals.pool`)."""
    from conway.evals.pool import run_pooled
    positions = [p for p, _ in todo]
    run_pooled(suite, pool.recipe, [c for _, c in todo], pool.spec, token=token, on_state=states, served=served,
               take=lambda i, record: take(positions[i], record))


def _run_in_threads(one: Callable[[Any], Record], todo: list[tuple[int, Any]],
                    take: Callable[[int, Record], None], token: Cancel, parallel: int, name: str) -> None:
    """`parallel` cases at once in threads, until all are done or `token` is set."""
    threads = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix=name)
    try:
        pending = {threads.submit(one, case): position for position, case in todo}
        while pending and not token.is_set():
            finished, _ = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for fut in finished:
                take(pending.pop(fut), fut.result())
        if pending:  # aborted: in flight ones get the grace to come back, queued ones never start
            wait(pending, timeout=ABORT_GRACE_S)
    finally:
        threads.shutdown(wait=not token.is_set(), cancel_futures=True)


def run_suite(suite: CaseSuite, policy: Policy | None, cases: Sequence[Any], report: Report, *, parallel: int = 1,
              progress: bool = True, extra: Callable[[SuiteResult], dict[str, Any]] | None = None,
              pool: Pool | None = None, resume: str | None = None) -> SuiteResult:
    """Run every case, summarise, judge and write the report; `extra(result)` adds fields to the report.

    `pool`: the cases run in its workers (each builds its own policy; `policy` may then be None); the report's
    `pool` records it (or `parallel`). `resume`: the path of a partial report of the same command whose
    finished cases are kept, not run again (`resume_records`: a UserError before any case when it does not fit).
    """
    report.data["pool"] = pool_record(pool, parallel)
    kept = resume_records(resume, report, len(cases)) if resume else None
    rebase = getattr(suite, "rebase_kept", None)  # a suite whose records name files beside the old report
    if kept and rebase is not None:
        kept = {pos: rebase(rec, Path(str(resume)).expanduser().resolve().parent) for pos, rec in kept.items()}
    if policy is not None:
        report.set_model(policy.model_id, served_by=served_by_of(policy))
    served = ServedBy() if pool is not None else None
    streaming = report.cases_path is not None
    interrupted: SuiteInterrupted | None = None
    if streaming:
        for _, rec in sorted((kept or {}).items()):
            report.add_case(rec)
    try:
        records, wall = run_cases(suite, policy, cases, parallel=parallel, progress=progress,
                                  on_record=report.add_case if streaming else None, pool=pool, skip=kept,
                                  served=served)
    except SuiteInterrupted as stop:  # the cases that finished make a partial report
        interrupted, records, wall = stop, stop.records, stop.wall_s
    except BaseException:
        report.abandon()  # a long suite's partial cases file stays for inspection
        raise
    summary = suite.summarize(records, wall)
    report.set_model_from_cases(records)
    if served is not None:
        report.set_served_by(served.record())
    code, status = suite.verdict(records, summary)
    fields = {}
    if interrupted is not None:
        code, status = ExitCode.INTERRUPTED, "partial"
        summary["interrupted"] = f"{interrupted.reason}: {len(records)} of {len(cases)} case(s) finished"
        fields["case_positions"] = interrupted.positions  # what `--resume` keeps
    if kept:
        summary["resumed"] = f"{len(kept)} case(s) kept from the resumed report"
    result = SuiteResult(records=records, summary=summary, code=code, status=status, wall_s=wall)
    fields.update(extra(result) if extra else {})
    if not streaming:
        for rec in records:
            report.add_case(rec)
    report.finish(status=status, exit_code=code, summary=summary, **fields)
    return result


WHERE_NOT_WHAT = frozenset({"parallel", "tasks_folder"})
"""Parameters a resumed run may change: how the cases are spread and where their outputs go (a new --output
names a new tasks folder), never what the cases are."""


def resume_records(path: str, report: Report, cases: int) -> dict[int, Record]:
    """The finished cases of a partial report of the same command and parameters, by position.

    Refused (UserError) when the report is not partial, is of another kind, or was made with other
    parameters, seed or case count: its records would not be the cases this run would run.
    """
    old, records = load_report(path)
    if old.get("kind") != report.data["kind"]:
        raise UserError(f"--resume {path}: a {old.get('kind')} report, not {report.data['kind']}")
    if old.get("status") != "partial" or "case_positions" not in old:
        raise UserError(f"--resume {path}: the report is complete ({old.get('status')}); nothing to resume")
    def same(key: str) -> bool:  # how the cases were spread, and where the outputs go, do not change what they are
        a, b = old.get(key), report.data.get(key)
        if key == "parameters" and isinstance(a, dict) and isinstance(b, dict):
            a, b = ({k: v for k, v in d.items() if k not in WHERE_NOT_WHAT} for d in (a, b))
        return a == b

    for key in ("parameters", "seed", "config_digest"):
        if not same(key):
            raise UserError(f"--resume {path}: it was made with another {key.replace('_', ' ')}; resume with the "
                            "same command line and config")
    positions = old["case_positions"]
    if len(positions) != len(records) or any(not isinstance(p, int) or not 0 <= p < cases for p in positions):
        raise UserError(f"--resume {path}: its case positions do not fit {cases} case(s)")
    return dict(zip(positions, records))


def resumed_seed(path: str) -> int | None:
    """The seed a partial report was made with: a command whose seed defaults to a random one resumes with it."""
    seed = load_report(path)[0].get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


# --- what the commands share around a run ---------------------------------------------


def check_parallel(parallel: int) -> None:
    if parallel < 1:
        raise UserError(f"--parallel must be at least 1 (got {parallel})")


def check_outputs(output: str, home: Home, sheet: str | None = None,
                  cases: int | None = None) -> tuple[Path, Path | None]:
    """(report path, sheet path or None), refused before anything runs; `cases`: how many, when known."""
    out = check_new_output(output, home)
    sheet_path = check_new_output(sheet, home, "contact sheet") if sheet else None
    if sheet_path is not None and sheet_path == out:
        raise UserError("--sheet and --output must be different files")
    if (cases is None or cases > INLINE_CASES_MAX) and cases_file_for(out).exists():
        raise UserError(f"{cases_file_for(out)} (where the cases of a long run go) already exists; "
                        "choose a new report name")
    return out, sheet_path


@contextmanager
def suite_policy(config: ConwayConfig, home: Home, policy: Policy | None = None,
                 pool: Pool | None = None) -> Iterator[Policy | None]:
    """The given policy, or the configured one built here and closed afterwards; with `pool` and no policy
    given, None (each of the pool's workers builds its own).

    Building it is where an unreachable or missing model is found: a UserError (exit 1) before any case.
    """
    if policy is not None or pool is not None:
        yield policy
        return
    from conway.policies.factory import build_policy
    built = build_policy(config, home)
    try:
        yield built
    finally:
        built.close()


def click_verdict(records: list[Record], summary: dict[str, Any], causes: dict[str, int]) -> tuple[ExitCode, str]:
    """Click suites: every case hit passes; a model that never gave a valid decision is its own outcome.

    Only cases the model was asked count (a case whose image could not be read never reached it).
    `causes`: why the answers were unusable, by cause, for the outcome's wording.
    """
    asked = [r for r in records if r.get("latency_s") is not None]
    if asked and not any(r.get("action") is not None for r in asked):
        summary["no_valid_decision"] = (f"no valid decision in {len(records)} case(s): "
                                        f"{describe_causes(causes) or 'no action proposed'}")
        return ExitCode.NO_VALID_DECISION, "no valid decision"
    if summary["hits"] == len(records):
        return ExitCode.PASSED, "pass"
    return ExitCode.NOT_PASSED, "fail"
