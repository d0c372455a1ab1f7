"""The numbers of a `tasks` report: per suite, per domain and per related app; the environment it ran in.

A task's case record has an `outcome`:

    pass          scored 1 by the task's own checker
    fail          scored below 1 (a partial score stays a failure; the score is kept)
    error         the task could not be run or scored (setup failed or hung, the application never opened
                  its window, the loop crashed, a checker raised): one line says why
    not-runnable  never started: the reasons (`conway tasks list` gives the same ones)
    malformed     the task file could not be read as a task

Only pass and fail are scored. The success rate (with its 95% Wilson
interval) is over the scored tasks; errors, not-runnable and malformed tasks
are counted apart and never enter a rate, so a broken environment does not
read as a weak model. `chance` is the suite's chance level when its tasks
declare one (conway.evals.chance) and whether the success interval lies above,
at or below it.

A task whose loop outlasted `--task-timeout-s` has `timed_out: true` and its
`elapsed_s`: stopped, then scored as the agent left it (OSWorld's rule at
its step limit), so it is a pass or a fail like any other; one whose loop
ignored the stop is an error (its desktop torn down). `timed_out` counts
them all, whatever their outcome.
"""

from __future__ import annotations

from typing import Any, Iterable

from conway.evals import chance as chance_level
from conway.evals.stats import rate_record

SCORED = ("pass", "fail")
OUTCOMES = ("error", "fail", "pass", "not-runnable", "malformed")
"""Every outcome, in the viewer's filter order."""

DIFFERENCES_FROM_OSWORLD = (
    "a disposable desktop on this machine (private Xvfb display, session bus, bubblewrap sandbox), "
    "not OSWorld's Ubuntu virtual machine",
    "no desktop environment or window manager: no GNOME shell, panels, settings daemon or dock; "
    "tasks about GNOME settings cannot run",
    "the applications and their versions are this machine's Debian packages (listed above), not the "
    "VM image's, and their default settings differ",
    "the user's home is an empty disposable folder seen at /home/user; nothing from OSWorld's VM snapshot "
    "(files, browser profile, application settings) is in it",
    "files come only from the local cache (--cache, OSWorld's layout); nothing is downloaded, so a task "
    "whose file is not cached is not runnable",
    "the network is off inside the sandbox unless a task declares local URLs; live web sites are never "
    "reached",
    "the screen size is the private display's, which may differ from the VM's 1920x1080",
    "the agent acts through Conway's loop and tools (including a shell and file tools inside the sandbox), "
    "not OSWorld's pyautogui action space",
    "scores are local measurements: they are not comparable with OSWorld leaderboard numbers",
)
"""How a local run differs from OSWorld's VM, in every report (a fixed list: the same for every run but for the
network's line under `--network`)."""
NO_APPS = "none (no task of this run names an application)"
"""The environment's apps when the tasks use none: a dash read as "not recorded" beside "(listed above)"."""
NETWORK_SHARED = ("the sandbox shared this machine's network (--network): tasks reached live web sites as they "
                  "were at run time, through this machine's connection, not OSWorld's proxy")


def differences(*, network: bool = False) -> list[str]:
    """DIFFERENCES_FROM_OSWORLD, with the network's line saying so when the run shared the network."""
    return [NETWORK_SHARED if network and line.startswith("the network is off") else line
            for line in DIFFERENCES_FROM_OSWORLD]


def group_rates(records: Iterable[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """Success rate and mean score of the scored tasks, grouped by `key` (a string or a list field)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        if rec.get("outcome") not in SCORED:
            continue
        names = rec.get(key)
        for name in (names if isinstance(names, list) else [names]) or ["(none)"]:
            groups.setdefault(str(name or "(none)"), []).append(rec)
    return {name: _rate(recs) for name, recs in sorted(groups.items())}


def _rate(recs: list[dict[str, Any]]) -> dict[str, Any]:
    passed = sum(1 for r in recs if r.get("outcome") == "pass")
    scores = [float(r.get("score") or 0.0) for r in recs]
    return {**rate_record(passed, len(recs)), "mean_score": round(sum(scores) / len(scores), 4) if scores else None}


def _chance(scored: list[dict[str, Any]]) -> dict[str, Any]:
    """The suite's chance level (the scored tasks' declared chances) and where the success rate stands against it
    (conway.evals.chance); {"chance": None, ...} when a task declares none."""
    level = chance_level.suite_chance(scored)
    passed = sum(1 for r in scored if r.get("outcome") == "pass")
    return chance_level.against(rate_record(passed, len(scored)), level)


def cost_totals(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The suite's cost: each task's cost (from its journal) summed."""
    keys = ("decisions", "summaries", "prompt_tokens", "cached_tokens", "generated_tokens", "model_s", "wall_s")
    total: dict[str, Any] = {k: 0 for k in keys}
    for rec in records:
        cost = rec.get("cost") or {}
        for k in keys:
            value = cost.get(k)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[k] += value
    total["model_s"] = round(total["model_s"], 3)
    total["wall_s"] = round(total["wall_s"], 3)
    return total


def summarize(records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    count = {o: sum(1 for r in records if r.get("outcome") == o) for o in OUTCOMES}
    scored = [r for r in records if r.get("outcome") in SCORED]
    declared = {"DONE": 0, "FAIL": 0, "nothing": 0}
    for r in scored:
        status = (r.get("declared") or {}).get("status")
        declared[status if status in ("DONE", "FAIL") else "nothing"] += 1
    return {
        "tasks": len(records), "scored": len(scored), "passed": count["pass"], "failed": count["fail"],
        "errors": count["error"], "not_runnable": count["not-runnable"], "malformed": count["malformed"],
        "timed_out": sum(1 for r in records if r.get("timed_out")),
        "success": _rate(scored),
        "chance": _chance(scored),
        "by_domain": group_rates(records, "domain"), "by_app": group_rates(records, "related_apps"),
        "declared": declared,
        "declared_done_but_failed": sum(1 for r in scored if r.get("outcome") == "fail"
                                        and (r.get("declared") or {}).get("status") == "DONE"),
        "cost": cost_totals(records), "wall_s": round(wall_s, 3),
        "note": "verified = the task's own checker; declared = the model's finish. Errors, not-runnable and "
                "malformed tasks are counted apart and are not in the rate.",
    }


def verdict(records: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[int, str]:
    """(exit code, status): pass only when tasks were scored and every runnable one passed without errors."""
    from conway.errors import ExitCode

    if not summary["scored"] and not summary["errors"]:
        summary["outcome"] = "no task ran: every task was not runnable or malformed"
        return ExitCode.NOT_PASSED, "nothing ran"
    if summary["failed"] or summary["errors"]:
        return ExitCode.NOT_PASSED, "fail"
    return ExitCode.PASSED, "pass"


# --- `conway report` text ---------------------------------------------------------------


def render_tasks(summary: dict[str, Any], cases: list[dict[str, Any]], data: dict[str, Any],
                 max_rows: int = 200) -> list[str]:
    from conway.evals.text import _short, table

    s = summary.get("success") or {}
    ci = s.get("hit_rate_ci95") or [0.0, 1.0]
    out = [f"passed {summary.get('passed', 0)}/{summary.get('scored', 0)} scored task(s)"
           + (f" = {s['hit_rate']:.1%} (95% Wilson interval {ci[0]:.1%}–{ci[1]:.1%}), mean score "
              f"{s.get('mean_score')}" if summary.get("scored") else "")
           + f"; errors {summary.get('errors', 0)}, not runnable {summary.get('not_runnable', 0)}, "
           f"malformed {summary.get('malformed', 0)} (counted apart)"]
    d = summary.get("declared") or {}
    out.append(f"declared by the model: DONE {d.get('DONE', 0)}, FAIL {d.get('FAIL', 0)}, nothing "
               f"{d.get('nothing', 0)}; DONE but not verified: {summary.get('declared_done_but_failed', 0)}")
    cost = summary.get("cost") or {}
    out.append(f"cost: {cost.get('decisions', 0)} decision(s), {cost.get('prompt_tokens', 0):,} prompt tokens "
               f"({cost.get('cached_tokens', 0):,} cached), {cost.get('generated_tokens', 0):,} generated; "
               f"model {cost.get('model_s', 0)} s, wall {cost.get('wall_s', 0)} s")
    for key, what in (("by_domain", "domain"), ("by_app", "app")):
        groups = summary.get(key) or {}
        if groups:
            out.append(f"by {what}: " + "; ".join(f"{n} {g['hits']}/{g['n']}" for n, g in groups.items()))
    if "timed_out" in summary:  # reports from before the task timeout have no such count
        out.append(f"timed out: {summary['timed_out']} task(s) (stopped at --task-timeout-s, then scored as left; "
                   "one that ignored the stop is an error)")
    if summary.get("interrupted"):
        out.append(f"interrupted: {summary['interrupted']}")
    out += _environment_lines(data.get("environment") or {})
    out += _rollout_lines(data, max_rows)
    out.append("")
    rows = []
    for c in cases[:max_rows]:
        said = (c.get("declared") or {}).get("status") or "-"
        score = c.get("score")
        why = c.get("error") or "; ".join(c.get("reasons") or []) or _metric_line(c)
        if c.get("timed_out"):
            why = f"timed out after {c.get('elapsed_s') or 0:g} s; {why}"
        cost = c.get("cost") or {}
        rows.append([c.get("task"), c.get("domain") or "-", c.get("outcome"),
                     f"{score:g}" if isinstance(score, (int, float)) else "-", said,
                     c.get("steps", "-"), f"{c['wall_s']:.1f}" if isinstance(c.get("wall_s"), (int, float)) else "-",
                     f"{cost.get('prompt_tokens', 0):,}/{cost.get('generated_tokens', 0):,}" if cost else "-",
                     f"{cost.get('model_s', 0):.1f}" if cost else "-", _short(why, 120)])
    out.append(table(["task", "domain", "outcome", "score", "declared", "steps", "time s", "tokens in/out",
                      "model s", "metrics / why"], rows))
    if len(cases) > max_rows:
        out.append(f"... {len(cases) - max_rows} more task(s) in the report")
    videos = [f"  {c.get('task')}: {c['video']}" for c in cases[:max_rows] if c.get("video")]
    if videos:
        out += ["", "videos (relative to the report):"] + videos
    diffs = data.get("differences_from_osworld") or []
    if diffs:
        out += ["", "how this environment differs from OSWorld's VM:"] + [f"  - {line}" for line in diffs]
    return out


def _environment_lines(env: dict[str, Any]) -> list[str]:
    """The report's environment line: the local desktop's display and applications, or what a provider's machine
    (OSWorld's guest server) said of itself."""
    if not env:
        return []
    if env.get("desktop"):
        return [f"environment: {env['desktop']}"]
    apps = ", ".join(f"{a['name']} {a.get('version') or '(version unknown)'}"
                     + (f" [OSWorld's VM: {a['osworld_vm']}]" if a.get("osworld_vm") else "")
                     for a in env.get("apps", []))
    return [f"environment: display {env.get('display_size') or '?'}; apps: {apps or NO_APPS}"
            + (f"; OSWorld's VM: {env['osworld_vm']}" if env.get("osworld_vm") else "")]


def _rollout_lines(data: dict[str, Any], max_rows: int) -> list[str]:
    """A rollout set's figures (`conway rollouts`): pass@1, pass@k and each task's cost; none for a tasks run."""
    figures = (data.get("rollouts") or {}).get("figures")
    if not figures:
        return []
    from conway.evals.best_of_n import render_figures

    return ["", *render_figures(figures, max_rows)]


def _metric_line(case: dict[str, Any]) -> str:
    parts = []
    for m in case.get("metrics") or []:
        score = m.get("score")
        text = f"{m.get('func')} {score:g}" if isinstance(score, (int, float)) else f"{m.get('func')} -"
        if m.get("error"):
            text += f" ({m['error']})"
        parts.append(text)
    return ", ".join(parts)
