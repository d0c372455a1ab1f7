"""What a report's case is called in the viewer's filters: its outcome, what it sorts by, its image's caption.

Plain functions of a case record, used by the kinds' `ReportView` records in `conway.evals.suites`.
"""

from __future__ import annotations

from typing import Any

Case = dict[str, Any]

CLICK_OUTCOMES = ("error", "miss", "hit")
PAIR_OUTCOMES = ("neither", "only-base", "only-candidate", "both")
TASK_OUTCOMES = ("error", "fail", "pass", "not-runnable", "malformed")
CELL_OUTCOMES = ("unfinished", "below", "within", "best")


def click_outcome(c: Case) -> str:
    return "hit" if c.get("hit") else "error" if c.get("error") else "miss"


def pair_outcome(c: Case) -> str:
    b, k = bool((c.get("base") or {}).get("hit")), bool((c.get("candidate") or {}).get("hit"))
    return "both" if b and k else "only-base" if b else "only-candidate" if k else "neither"


def task_outcome(c: Case) -> str:
    return str(c.get("outcome") or "error")


def cell_outcome(c: Case) -> str:
    if c.get("status") in ("partial", "missing"):
        return "unfinished"
    return "best" if c.get("best") else "below" if c.get("below_best") else "within"


def target_colour(c: Case) -> str:
    return str((c.get("target") or {}).get("colour", ""))


def target_type(c: Case) -> str:
    return str(c.get("type") or c.get("source") or "")


def task_domain(c: Case) -> str:
    return str(c.get("domain") or "")


def cell_preset(c: Case) -> str:
    return str((c.get("settings") or {}).get("policy") or "")


def shape_caption(c: Case) -> str:
    return f"{(c.get('target') or {}).get('colour', '?')} {(c.get('target') or {}).get('shape', '?')}"


def grounding_caption(c: Case) -> str:
    return f"{c.get('type') or '?'} · {c.get('source') or '?'} · {c.get('size_bucket') or ''}"
