"""`conway export --from-report`: a report's records, built by its kind's `records` (`conway.evals.suites`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.evals.report import load_report
from conway.evals.suites import having, suite_kind


def records_from_report(path: Path) -> list[dict[str, Any]]:
    """The report's records (a tasks report: its sessions labelled by their checkers; a click check: its cases)."""
    data, cases = load_report(path)
    kind = suite_kind(data.get("kind"))
    if kind is None or kind.records is None:
        names = [k.name for k in having("records")]
        raise UserError(f"{path} is a {data.get('kind')!r} report; --from-report takes a "
                        f"{', '.join(names[:-1])} or {names[-1]} report")
    return kind.records(path, data, cases)
