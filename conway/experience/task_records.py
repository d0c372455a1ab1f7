"""A `tasks` report (`conway tasks run`) → the steps of its task sessions, labelled by each task's checker.

Every task that ran to a score kept its Conway home beside the report; its
session's steps become `conway-traj/1` records (`conway.experience.steps`),
each labelled with the task's verified outcome (source `task-check`, scope
`session`): success when the checker scored 1, failure otherwise. The
model's own finish is in the record as it said it, never as the label.
Tasks that never ran (not runnable, malformed) or could not be scored
(an error) give no records; the export says how many were left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.experience.steps import steps_from_events
from conway.store.journal import read_journal


def records_from_tasks(report_path: Path, data: dict[str, Any], cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    folder = report_path.expanduser().resolve().parent
    out: list[dict[str, Any]] = []
    for c in cases:
        if c.get("outcome") not in ("pass", "fail") or not c.get("session") or not c.get("home"):
            continue
        home = Path(str(c["home"]))
        home = home if home.is_absolute() else folder / home
        journal = home / "journal"
        if not journal.is_dir():
            raise UserError(f"task {c.get('task')}: its home {home} (named in {report_path}) has no journal; "
                            "the report's tasks folder must stay beside the report")
        events = [e for e in read_journal(journal).events if e.get("session") == c["session"]]
        label = {"success": "success" if c.get("verified") else "failure", "source": "task-check",
                 "scope": "session", "report": report_path.name, "score": c.get("score"), "hindsight": False}
        for rec in steps_from_events(events):
            shot = (rec.get("observation") or {}).get("screenshot")
            if shot and not Path(shot).is_absolute():  # the record names its file wherever it is read
                rec["observation"] = {**rec["observation"], "screenshot": str(home / shot)}
            rec["labels"] = dict(label)
            rec["task"] = {"kind": "tasks", "id": c.get("task"), "domain": c.get("domain"),
                           "source": c.get("source"), "score": c.get("score"), "metrics": c.get("metrics"),
                           "declared": c.get("declared")}
            out.append(rec)
    if not out:
        raise UserError(f"nothing to export: no task in {report_path} ran to a score (not runnable, malformed "
                        "and error tasks have no verified label)")
    return out
