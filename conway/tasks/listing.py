"""`conway tasks list`: which tasks of a suite can run here, each reason for those that cannot, and counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Collection, Sequence

from conway.errors import ExitCode, UserError
from conway.tasks.runnable import why_not_runnable
from conway.tasks.task import load_suite

SCHEMA = "conway-task-list/1"


def check_cache(cache: str | Path | None) -> Path | None:
    if cache is None:
        return None
    path = Path(cache).expanduser()
    if not path.exists():
        raise UserError(f"cache folder {path} does not exist (give the folder OSWorld's DesktopEnv(cache_dir=…) "
                        "filled, or leave --cache out)")
    if not path.is_dir():
        raise UserError(f"--cache {path} is a file; give the cache folder (it holds one folder per task id)")
    return path


def list_suite(sources: str | Path | Sequence[str | Path], *, cache: str | Path | None,
               step_types: Collection[str], installed: Callable[[str], bool] | None = None,
               verified: Collection[str] = ()) -> dict[str, Any]:
    """The listing as a record (`--json` prints it as is). UserError when nothing at all could be loaded.
    `verified`: the ids an oracle pair proved passable here (`conway tasks check`)."""
    cache_dir = check_cache(cache)
    suite = load_suite(sources)
    if not suite.tasks and suite.problems:
        if len(suite.problems) == 1:
            raise UserError(suite.problems[0].line())
        shown = "; ".join(p.line() for p in suite.problems[:3])
        raise UserError(f"no task could be loaded ({len(suite.problems)} problems): {shown}"
                        + (" …" if len(suite.problems) > 3 else ""))
    if not suite.tasks:
        raise UserError("the suite holds no task files (.json in OSWorld's format, .md in Conway's)")
    rows = []
    for task in suite.tasks:
        kw = {"installed": installed} if installed is not None else {}
        reasons = why_not_runnable(task, cache_dir=cache_dir, step_types=step_types, **kw)
        rows.append({"id": task.id, "source": str(task.source), "format": task.format, "domain": task.domain,
                     "related_apps": list(task.related_apps), "runnable": not reasons, "reasons": reasons,
                     "verified_passable": not reasons and task.id in verified})
    runnable = sum(1 for r in rows if r["runnable"])
    names = [str(s) for s in ([sources] if isinstance(sources, (str, Path)) else sources)]
    return {"schema": SCHEMA, "suite": names, "cache": str(cache_dir) if cache_dir else None, "tasks": rows,
            "problems": [p.line() for p in suite.problems],
            "counts": {"tasks": len(rows), "runnable": runnable, "not_runnable": len(rows) - runnable,
                       "verified_passable": sum(1 for r in rows if r["verified_passable"]),
                       "problems": len(suite.problems)}}


def exit_code(record: dict[str, Any]) -> int:
    c = record["counts"]
    return int(ExitCode.PASSED if not c["not_runnable"] and not c["problems"] else ExitCode.NOT_PASSED)


def render_listing(record: dict[str, Any]) -> str:
    lines = []
    for row in record["tasks"]:
        where = f"{row['domain']}/" if row["domain"] else ""
        state = "runnable" if row["runnable"] else "not runnable"
        proved = "  (verified passable)" if row.get("verified_passable") else ""
        lines.append(f"{state:<13} {where}{row['id']}  ({row['format']}: {row['source']}){proved}")
        lines += [f"    - {reason}" for reason in row["reasons"]]
    if record["problems"]:
        lines.append("")
        lines.append(f"not loaded ({len(record['problems'])}):")
        lines += [f"    - {p}" for p in record["problems"]]
    c = record["counts"]
    lines.append("")
    lines.append(f"{c['tasks']} task(s): {c['runnable']} runnable"
                 + (f" ({c['verified_passable']} verified passable)" if c.get("verified_passable") else "")
                 + f", {c['not_runnable']} not runnable"
                 + (f"; {c['problems']} file(s) not loaded" if c["problems"] else "")
                 + ("" if record["cache"] else " (no --cache given)"))
    return "\n".join(lines)
