"""The one eval runner: cases → policy → one result record per case → summary → report → exit code.

An eval command supplies a `Suite`: how one case is run and scored
(`run_case`, which returns the case's result record), the summary of the
records (`summarize`) and what that summary means (`verdict`: an `ExitCode`
and the report's status). How the cases are made is the command's own
business; it hands them to the runner as a list.

    with suite_policy(config, home, policy) as policy:
        result = run_suite(suite, policy, cases, report, parallel=k)
    return result.code

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
from conway.evals.report import INLINE_CASES_MAX, Report, cases_file_for, check_new_output
from conway.protocols import Policy, describe_causes
from conway.store.home import Home

Record = dict[str, Any]
POLL_S = 0.25
"""How often the thread that hands out parallel cases looks for a stop."""


class Suite(Protocol):
    """What one eval command supplies to the runner."""

    kind: str
    """The report's kind, e.g. "vision-check" (also the progress bar's label)."""

    def run_case(self, policy: Policy, case: Any) -> Record:
        """Run and score one case; a failure of the case is recorded in the record, never raised."""

    def summarize(self, records: list[Record], wall_s: float) -> dict[str, Any]:
        """The report's summary of every case's record (in case order)."""

    def verdict(self, records: list[Record], summary: dict[str, Any]) -> tuple[ExitCode, str]:
        """(exit code, report status) the summary means; may add the outcome's wording to the summary."""


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

    def __init__(self, reason: str, records: list[Record], wall_s: float):
        super().__init__(reason)
        self.reason, self.records, self.wall_s = reason, records, wall_s


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


def run_cases(suite: Suite, policy: Policy, cases: Sequence[Any], *, parallel: int = 1, progress: bool = True,
              on_record: Callable[[Record], None] | None = None) -> tuple[list[Record], float]:
    """Every case through `suite.run_case`; (records in case order, wall seconds).

    One case at a time runs in this thread; K > 1 run in K threads, and `on_record` sees each record as it
    is done (completion order). Ctrl+C or SIGTERM aborts the requests in flight (`conway.cancel`), drops
    the cases not done and raises `SuiteInterrupted` with the records of those that finished.
    """
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(cases), desc=suite.kind, unit="case", file=sys.stderr, leave=False)
    done: list[tuple[int, Record]] = []
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

    started = time.perf_counter()
    try:
        with stop_on_signals(token):
            if parallel <= 1:
                for position, case in enumerate(cases):
                    if token.is_set():
                        break
                    take(position, one(case))
            else:
                pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix=suite.kind)
                try:
                    pending = {pool.submit(one, case): position for position, case in enumerate(cases)}
                    while pending and not token.is_set():
                        finished, _ = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
                        for fut in finished:
                            take(pending.pop(fut), fut.result())
                    if pending:  # aborted: in flight ones get the grace to come back, queued ones never start
                        wait(pending, timeout=ABORT_GRACE_S)
                finally:
                    pool.shutdown(wait=not token.is_set(), cancel_futures=True)
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - started
    records = [r for _, r in sorted(done, key=lambda pr: pr[0])]
    if token.is_set():
        raise SuiteInterrupted(token.reason or "interrupted", records, wall)
    return records, wall


def run_suite(suite: Suite, policy: Policy, cases: Sequence[Any], report: Report, *, parallel: int = 1,
              progress: bool = True, extra: Callable[[SuiteResult], dict[str, Any]] | None = None) -> SuiteResult:
    """Run every case, summarise, judge and write the report; `extra(result)` adds fields to the report."""
    report.set_model(policy.model_id)
    streaming = report.cases_path is not None
    interrupted: SuiteInterrupted | None = None
    try:
        records, wall = run_cases(suite, policy, cases, parallel=parallel, progress=progress,
                                  on_record=report.add_case if streaming else None)
    except SuiteInterrupted as stop:  # the cases that finished make a partial report
        interrupted, records, wall = stop, stop.records, stop.wall_s
    except BaseException:
        report.abandon()  # a long suite's partial cases file stays for inspection
        raise
    summary = suite.summarize(records, wall)
    report.set_model_from_cases(records)
    code, status = suite.verdict(records, summary)
    if interrupted is not None:
        code, status = ExitCode.INTERRUPTED, "partial"
        summary["interrupted"] = f"{interrupted.reason}: {len(records)} of {len(cases)} case(s) finished"
    result = SuiteResult(records=records, summary=summary, code=code, status=status, wall_s=wall)
    fields = extra(result) if extra else {}
    if not streaming:
        for rec in records:
            report.add_case(rec)
    report.finish(status=status, exit_code=code, summary=summary, **fields)
    return result


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
def suite_policy(config: ConwayConfig, home: Home, policy: Policy | None = None) -> Iterator[Policy]:
    """The given policy, or the configured one built here and closed afterwards.

    Building it is where an unreachable or missing model is found: a UserError (exit 1) before any case.
    """
    if policy is not None:
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
