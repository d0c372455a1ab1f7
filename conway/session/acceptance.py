"""A task session's acceptance record: what the model declared beside what Conway verified, kept apart.

`conway start` runs its session on a copy of memory.md (`session_home`: the
standing memory stays intact), checks the task file's criteria
(`conway.tasks.task_file.verify`), summarises both (`session_summary`) and
appends the summary to the journal (`record_in_journal`); `conway status`
counts the journaled records (`acceptance_counts`, `render_counts`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from conway.errors import UserError
from conway.store.home import Home
from conway.tasks.task_file import TaskSpec


@dataclass(frozen=True)
class SessionHome(Home):
    """The real home, except that memory.md is a session copy: the standing memory stays intact."""

    session_dir: Path = Path(".")

    @property
    def memory(self) -> Path: return self.session_dir / "memory.md"
    @property
    def memory_previous(self) -> Path: return self.session_dir / "memory.previous.md"


def session_home(home: Home, name: str) -> SessionHome:
    folder = home.root / "sessions" / name
    folder.mkdir(parents=True, exist_ok=True)
    if home.memory.exists():
        shutil.copyfile(home.memory, folder / "memory.md")
    return SessionHome(root=home.root, session_dir=folder)


def declared_record(finish: dict[str, Any] | None) -> dict[str, Any] | None:
    if not finish:
        return None
    return {"status": finish.get("status"), "message": finish.get("message", ""), "by": "model"}


def session_summary(spec: TaskSpec | None, results: list[dict[str, Any]] | None, declared: dict[str, Any] | None,
                    *, executed: bool, steps: int, reason: str) -> dict[str, Any]:
    criteria = len(spec.criteria) if spec else 0
    if not executed:
        verified: bool | None = None
        note = "plan only: nothing was dispatched, so nothing was verified"
    elif not criteria:
        verified = None
        note = "the task declared no acceptance criteria; nothing to verify"
    else:
        verified = all(r["verified"] for r in results or [])
        note = "verified by Conway's own checks, not by the model's finish"
    passed = sum(1 for r in results or [] if r["verified"])
    return {"declared": declared, "verified": verified, "criteria": criteria, "verified_passed": passed,
            "verified_failed": len(results or []) - passed, "executed": executed, "steps": steps,
            "stop_reason": reason, "note": note}


def record_in_journal(home: Home, session: str, steps: int, summary: dict[str, Any], report: str | None,
                      journal_cfg: Any) -> bool:
    """Append the acceptance outcome to the journal (holding the lock); False when another agent holds it."""
    from conway.store.events import Acceptance
    from conway.store.journal import Journal, make_event
    from conway.store.state import InstanceLock

    lock = InstanceLock(home.lock)
    try:
        lock.acquire()
    except UserError:
        return False
    try:
        journal = Journal(home.journal_dir, journal_cfg.max_file_bytes, journal_cfg.max_total_bytes,
                          journal_cfg.fsync)
        try:
            journal.append(make_event(session, steps, "session", Acceptance(
                summary["declared"], summary["verified"], summary["criteria"], summary["verified_passed"],
                summary["verified_failed"], summary["executed"], report).to_payload()), sync=True)
        finally:
            journal.close()
    finally:
        lock.release()
    return True


def acceptance_counts(home: Home, events: Iterable[dict[str, Any] | None] | None = None) -> dict[str, int]:
    """Single sessions counted apart: what the model declared vs what Conway verified. `events`: the journal's,
    when the caller reads it anyway (default: read here)."""
    from conway.store.events import Acceptance
    from conway.store.journal import iter_journal

    counts = {"sessions": 0, "declared_done": 0, "declared_fail": 0, "declared_nothing": 0,
              "verified_passed": 0, "verified_failed": 0, "not_verified": 0}
    if events is None:
        events = (event for event, _ in iter_journal(home.journal_dir))
    for event in events:
        acceptance = Acceptance.of(event)
        if acceptance is None:
            continue
        counts["sessions"] += 1
        key = {"DONE": "declared_done", "FAIL": "declared_fail"}.get(acceptance.declared_status, "declared_nothing")
        counts[key] += 1
        v = acceptance.verified
        counts["verified_passed" if v is True else "verified_failed" if v is False else "not_verified"] += 1
    return counts

def render_counts(counts: dict[str, int]) -> str:
    return (f"{counts['sessions']} task session(s): declared DONE {counts['declared_done']}, "
            f"FAIL {counts['declared_fail']}, nothing {counts['declared_nothing']} · verified "
            f"{counts['verified_passed']} passed, {counts['verified_failed']} failed, "
            f"{counts['not_verified']} not verified")
