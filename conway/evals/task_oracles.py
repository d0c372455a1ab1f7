"""`conway tasks check SUITE --oracles DIR --output FILE`: is each runnable task passable here, proved by its
oracle pair.

As cua-bench keeps a task's `solve` apart from its `evaluate`, each task may have two scripts for the scripted
policy (the form `--mock-scripts` reads), acting as an agent would (keys, clicks, the terminal, the task's own
application): `DIR/solve/<id>.yaml` must score 1 (for an infeasible task: declare FAIL), `DIR/idle/<id>.yaml`
must score 0 (`pass/` and `fail/` are read as the same two). The suite runs twice through `conway tasks run`
(its reports beside FILE: `<FILE>.solve.json`, `<FILE>.idle.json`, each with the tasks' homes), and each task
gets one verdict:

- `passable here`: solved scored 1 and idle scored 0, on this machine with its desktop;
- `not proved`: anything else (which run scored what, or broke, and why);
- `not runnable`: the reasons `tasks list` gives; `no oracle`: a runnable task without its pair.

`conway tasks list --verified FILE` then says "verified passable" for those tasks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from conway.errors import ExitCode, UserError

SCHEMA = "conway-task-check/1"
PASSABLE = "passable here"
ROLES = {"solve": ("solve", "pass"), "idle": ("idle", "fail")}
"""Each script's role → the folder names it is read from, first found wins."""


def oracle_folders(root: Path) -> dict[str, Path]:
    """{"solve": folder, "idle": folder}; UserError naming what is missing."""
    if not root.is_dir():
        raise UserError(f"--oracles {root} is not a folder (it holds solve/ and idle/, one script per task id)")
    found = {}
    for role, names in ROLES.items():
        folder = next((root / n for n in names if (root / n).is_dir()), None)
        if folder is None:
            raise UserError(f"--oracles {root} has no {' or '.join(names)}/ folder of {role} scripts")
        found[role] = folder
    return found


def _script(folder: Path, task_id: str) -> Path | None:
    from conway.evals.tasks_run import mock_script_for

    return mock_script_for(folder, task_id)


def verdict(solve: dict[str, Any] | None, idle: dict[str, Any] | None) -> str:
    """One task's verdict from its case in each run."""
    if solve is None or idle is None:
        return "not proved: a run did not reach it (interrupted)"
    if solve.get("outcome") == "pass" and idle.get("outcome") == "fail":
        return PASSABLE

    def said(name: str, case: dict[str, Any]) -> str:
        score = case.get("score")
        tail = case.get("error") or "; ".join(case.get("reasons") or [])
        return f"{name} {case.get('outcome')}" + (f" (score {score:g})" if isinstance(score, (int, float)) else "") \
            + (f": {tail}" if tail else "")
    return f"not proved: {said('solve', solve)}; {said('idle', idle)}"


def check(sources: list[str], oracles: Path, output: Path,
          run: Callable[[list[str], Path, Path], int], plan: Callable[[list[str]], list[Any]],
          say: Callable[[str], None] = print) -> int:
    """The command's work: `plan(sources)` gives the suite's cases (`tasks_run.plan_cases`), `run(files,
    scripts, report)` runs `conway tasks run` on the task files with those scripts (the caller's policy and
    settings). Writes FILE and returns the exit code."""
    folders = oracle_folders(oracles)
    if output.exists():
        raise UserError(f"{output} already exists; choose a new report name")
    cases = plan(sources)
    rows: dict[str, dict[str, Any]] = {}
    paired = []
    for case in cases:
        task = case.task
        if task is None:
            continue
        row = rows.setdefault(task.id, {"id": task.id, "domain": task.domain, "source": str(task.source)})
        if case.reasons:
            row.update(verdict="not runnable", reasons=list(case.reasons))
        elif not all(_script(folders[r], task.id) for r in ROLES):
            row["verdict"] = "no oracle"
            row["missing"] = [r for r in ROLES if not _script(folders[r], task.id)]
        else:
            paired.append(task)
    reports = {role: output.with_name(f"{output.stem}.{role}.json") for role in ROLES}
    results: dict[str, dict[str, dict[str, Any]]] = {}
    if paired:
        for role in ROLES:
            say(f"tasks check: {len(paired)} task(s) with their {role} scripts")
            run([str(t.source) for t in paired], folders[role], reports[role])
            data = json.loads(reports[role].read_text(encoding="utf-8")) if reports[role].is_file() else {}
            results[role] = {c["task"]: c for c in data.get("cases", [])}
    for task in paired:
        rows[task.id]["verdict"] = verdict(results.get("solve", {}).get(task.id), results.get("idle", {}).get(task.id))
    passable = sorted(t for t, r in rows.items() if r["verdict"] == PASSABLE)
    record = {"schema": SCHEMA, "suite": sources, "oracles": str(oracles),
              "reports": {role: str(p) for role, p in reports.items() if p.is_file()},
              "tasks": list(rows.values()), "passable": passable,
              "counts": _counts(list(rows.values()))}
    output.write_text(json.dumps(record, indent=2), encoding="utf-8")
    for row in rows.values():
        if row["verdict"] != PASSABLE and row["verdict"] != "not runnable":
            say(f"  {row['domain'] or '-'}/{row['id']}: {row['verdict']}")
    c = record["counts"]
    say(f"tasks check: {c['passable']} of {c['with_oracle']} runnable task(s) with an oracle pair passable here; "
        f"{c['no_oracle']} runnable without one, {c['not_runnable']} not runnable; {output}")
    return int(ExitCode.PASSED if c["passable"] == c["with_oracle"] and c["with_oracle"] else ExitCode.NOT_PASSED)


def _counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_domain: dict[str, dict[str, int]] = {}
    for row in rows:
        d = by_domain.setdefault(row["domain"] or "-", {"runnable": 0, "with_oracle": 0, "passable": 0})
        if row["verdict"] != "not runnable":
            d["runnable"] += 1
        if row["verdict"] not in ("not runnable", "no oracle"):
            d["with_oracle"] += 1
        if row["verdict"] == PASSABLE:
            d["passable"] += 1
    total = {k: sum(d[k] for d in by_domain.values()) for k in ("runnable", "with_oracle", "passable")}
    return {**total, "no_oracle": sum(1 for r in rows if r["verdict"] == "no oracle"),
            "not_runnable": sum(1 for r in rows if r["verdict"] == "not runnable"), "by_domain": by_domain}


def verified_tasks(path: str | Path) -> set[str]:
    """The ids a check record (`--output` of `tasks check`) proved passable; UserError for a file that is not one."""
    p = Path(path).expanduser()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read {p}: {exc.strerror or exc}") from None
    except ValueError:
        raise UserError(f"{p} is not JSON (give the --output of conway tasks check)") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UserError(f"{p} is not a tasks check record ({SCHEMA})")
    return {str(t) for t in data.get("passable", [])}
