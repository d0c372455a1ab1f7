"""The figures of a rollout set: how often a task passed, whether the judge's pick did, and what a success cost.

From a rollout set's records (one per rollout: `task`, `sample`, `outcome`, `steps`, `cost`, as `conway rollouts`
writes them) and, when a judge has chosen, its picks (task → the sample it named):

    pass@1       the mean: passing rollouts over scored rollouts (Wilson over the rollouts)
    pass@k       a task passes when any of its rollouts passed (Wilson over the tasks)
    best-of-N    a task passes when the rollout the judge named passed (Wilson over the judged tasks)
    agreement    of the judged tasks where at least one rollout passed, how often the judge named a passing one:
                 the only tasks where a choice could be right or wrong

Only `pass` and `fail` rollouts are scored (as in every tasks report); a task with none scored is left out of
every rate. A judge's pick of an unscored rollout (an error) counts as not passed: it is the one Best-of-N would
have handed back.

The cost, per rollout and summed per task, is read from each rollout's own journal (`conway.experience.costs`,
already in its record): tokens in (prompt) and out (generated), model seconds, harness seconds (the session's wall
time less the model's: observing, acting, the loop), steps; money when prices per million tokens are given. A
success's cost divides the spend by the successes it bought: every rollout's spend by the passing rollouts
(pass@1), and every rollout's plus the judge's by the tasks Best-of-N passed.

A reference step count per task (OSWorld-Human's human trajectories, or any file the user provides: see
`load_reference`) adds steps against it and the Weighted Efficiency Score as OSWorld-Human defines it, per
rollout with r its score, e the reference steps, a the agent's steps and M the step limit:

    WES+ = r · e / a          WES- = -(1 - r) · a / M

each averaged over the tasks that have a reference (the paper averages over its task list).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from conway.errors import UserError
from conway.evals.stats import rate_record

SCORED = ("pass", "fail")
COST_KEYS = ("tokens_in", "tokens_out", "model_s", "harness_s", "steps")


# --- what one rollout cost ------------------------------------------------------------------------------------


def rollout_cost(record: dict[str, Any], prices: dict[str, float] | None = None) -> dict[str, Any]:
    """Tokens in and out, model and harness seconds, steps and (with prices) money of one rollout's record."""
    cost = record.get("cost") or {}
    model_s = _num(cost.get("model_s"))
    wall_s = _num(cost.get("wall_s"))
    out: dict[str, Any] = {"tokens_in": int(_num(cost.get("prompt_tokens"))),
                           "tokens_out": int(_num(cost.get("generated_tokens"))),
                           "model_s": round(model_s, 3),
                           "harness_s": round(max(0.0, wall_s - model_s), 3),  # the loop's time that was not the model's
                           "steps": int(_num(record.get("steps")))}
    if prices:
        out["money"] = money(out["tokens_in"], out["tokens_out"], prices)
    return out


def money(tokens_in: float, tokens_out: float, prices: dict[str, float]) -> float:
    """`prices`: {"in": per million prompt tokens, "out": per million generated tokens}, in one currency."""
    return round((tokens_in * prices.get("in", 0.0) + tokens_out * prices.get("out", 0.0)) / 1e6, 6)


def add_costs(costs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {k: 0 for k in COST_KEYS}
    for c in costs:
        for k, v in c.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                total[k] = total.get(k, 0) + v
    for k in ("model_s", "harness_s"):
        total[k] = round(total[k], 3)
    if "money" in total:
        total["money"] = round(total["money"], 6)
    return total


def per_success(total: dict[str, Any], successes: int) -> dict[str, Any] | None:
    """A spend divided by the successes it bought (None when nothing passed: a success that never came cost
    everything, which no number says)."""
    if successes <= 0:
        return None
    return {k: round(v / successes, 3 if k != "money" else 6) for k, v in total.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


# --- the reference steps ----------------------------------------------------------------------------------------


def load_reference(path: str | Path) -> dict[str, int]:
    """Reference steps per task id from `path`: a JSON object {task id: steps}, or a folder of OSWorld-Human's
    task files (`<app>/<id>.json` with `human-ground-truth.single-action`, its list of single actions)."""
    p = Path(path).expanduser()
    if p.is_dir():
        out: dict[str, int] = {}
        for f in sorted(p.rglob("*.json")):
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
                out[str(data["id"])] = len(data["human-ground-truth"]["single-action"])
            except (OSError, ValueError, KeyError, TypeError):
                continue  # not one of OSWorld-Human's task files
        if not out:
            raise UserError(f"--reference-steps {p}: no OSWorld-Human task file (id, human-ground-truth) in it")
        return out
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"--reference-steps {p} does not exist") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"--reference-steps {p} is not a JSON file ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                             for v in data.values()):
        raise UserError(f"--reference-steps {p} must be a JSON object of task id → a positive step count")
    return {str(k): int(v) for k, v in data.items()}


def wes(score: float, steps: int, reference: int, max_steps: int) -> dict[str, float]:
    """OSWorld-Human's per-task Weighted Efficiency Score halves for one trajectory."""
    a = max(steps, 1)  # a rollout that took no step: the ratio is taken over one
    return {"wes_plus": round(score * reference / a, 4),
            "wes_minus": round(-(1.0 - score) * a / max(max_steps, 1), 4)}


# --- the figures ------------------------------------------------------------------------------------------------


def figures(records: list[dict[str, Any]], picks: dict[str, Any] | None = None, *,
            prices: dict[str, float] | None = None, reference: dict[str, int] | None = None,
            max_steps: int | None = None, judge_costs: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per task and overall: pass@1, pass@k, best-of-N (with `picks`), agreement, costs, efficiency.

    `picks`: task → the sample the judge named (None: it named none); `judge_costs`: task → the judge's spend
    on that task (its narratives and its comparison), in `rollout_cost`'s keys."""
    picks = picks or {}
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: (str(r.get("task")), r.get("sample") or 0)):
        by_task.setdefault(str(r.get("task")), []).append(r)
    # M, the step limit: the run's, else each rollout's budget, never below a step a rollout took
    limit = max([max_steps or 0] + [int(_num(r.get("steps"))) for r in records]
                + [int(_num((r.get("budget") or {}).get("max_steps"))) for r in records])
    tasks: dict[str, dict[str, Any]] = {}
    for task, recs in by_task.items():
        tasks[task] = _task(task, recs, picks, prices, reference, limit, (judge_costs or {}).get(task))
    return {"tasks": tasks, "overall": _overall(tasks, prices, reference is not None), **(
        {"prices": prices} if prices else {})}


def _task(task: str, recs: list[dict[str, Any]], picks: dict[str, Any], prices: dict[str, float] | None,
          reference: dict[str, int] | None, limit: int, judge_cost: dict[str, Any] | None) -> dict[str, Any]:
    scored = [r for r in recs if r.get("outcome") in SCORED]
    passed = [r for r in scored if r.get("outcome") == "pass"]
    rollouts = []
    for r in recs:
        row: dict[str, Any] = {"sample": r.get("sample"), "outcome": r.get("outcome"), "score": r.get("score"),
                               **rollout_cost(r, prices)}
        if reference and task in reference and r.get("outcome") in SCORED:
            row.update(wes(float(r.get("score") or 0.0), row["steps"], reference[task], limit))
        rollouts.append(row)
    out: dict[str, Any] = {"rollouts": rollouts, "scored": len(scored), "passed": len(passed),
                           "pass1": round(len(passed) / len(scored), 4) if scored else None,
                           "passk": bool(passed) if scored else None}
    if task in picks:
        pick = picks[task]
        chosen = next((r for r in recs if r.get("sample") == pick), None) if pick is not None else None
        out["pick"] = pick
        out["best"] = bool(chosen is not None and chosen.get("outcome") == "pass")
        if passed:  # the judge could have been right or wrong only where a passing rollout existed
            out["agrees"] = out["best"]
    spend = add_costs(rollouts_cost(rollouts))
    out["cost"] = spend
    if judge_cost:
        out["judge_cost"] = judge_cost
    if reference and task in reference:
        ref = reference[task]
        with_wes = [x for x in rollouts if "wes_plus" in x]
        out["reference_steps"] = ref
        out["steps_vs_reference"] = round(sum(x["steps"] for x in with_wes) / len(with_wes) / ref, 3) if with_wes else None
        out["wes_plus"] = _mean([x["wes_plus"] for x in with_wes])
        out["wes_minus"] = _mean([x["wes_minus"] for x in with_wes])
    return out


def rollouts_cost(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k in (*COST_KEYS, "money")} for row in rows]


def _overall(tasks: dict[str, dict[str, Any]], prices: dict[str, float] | None, referenced: bool) -> dict[str, Any]:
    scored_tasks = [t for t in tasks.values() if t["scored"]]
    rollouts_n = sum(t["scored"] for t in scored_tasks)
    passes = sum(t["passed"] for t in scored_tasks)
    judged = [t for t in scored_tasks if "pick" in t]
    agreeable = [t for t in judged if "agrees" in t]
    spend = add_costs(t["cost"] for t in tasks.values())
    judge_spend = add_costs(t["judge_cost"] for t in tasks.values() if t.get("judge_cost"))
    best = sum(1 for t in judged if t["best"])
    out: dict[str, Any] = {
        "tasks": len(scored_tasks), "rollouts": rollouts_n,
        "pass1": _rate(passes, rollouts_n),
        "passk": _rate(sum(1 for t in scored_tasks if t["passk"]), len(scored_tasks)),
        "cost": spend, "cost_per_success": {"pass1": per_success(spend, passes)},
    }
    if judged:
        out["best_of_n"] = _rate(best, len(judged))
        out["agreement"] = _rate(sum(1 for t in agreeable if t["agrees"]), len(agreeable))
        out["judge_cost"] = judge_spend
        out["cost_per_success"]["best_of_n"] = per_success(add_costs([spend, judge_spend]), best)
    if referenced:
        with_ref = [t for t in tasks.values() if "reference_steps" in t and t.get("wes_plus") is not None]
        out["efficiency"] = {"tasks": len(with_ref), "wes_plus": _mean([t["wes_plus"] for t in with_ref]),
                             "wes_minus": _mean([t["wes_minus"] for t in with_ref]),
                             "steps_vs_reference": _mean([t["steps_vs_reference"] for t in with_ref
                                                          if t["steps_vs_reference"] is not None])}
    return out


def _rate(hits: int, n: int) -> dict[str, Any]:
    r = rate_record(hits, n)
    return {"hits": hits, "n": n, "rate": r["hit_rate"] if n else None, "ci95": r["hit_rate_ci95"]}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0


# --- text -------------------------------------------------------------------------------------------------------


def render_figures(fig: dict[str, Any], max_rows: int = 200) -> list[str]:
    """The figures as `conway report` prints them: the overall lines, then a row per task."""
    from conway.evals.text import table

    o = fig.get("overall") or {}
    out = []
    for key, what in (("pass1", "pass@1 (mean over rollouts)"), ("passk", "pass@k (any rollout passed)"),
                      ("best_of_n", "best-of-N (the judged rollout passed)"),
                      ("agreement", "judge agrees with the checker (picked a passing rollout where one existed)")):
        if key in o:
            out.append(f"{what}: {_rate_text(o[key])}")
    cost = o.get("cost") or {}
    out.append("cost: " + _cost_text(cost) + (f"; the judge: {_cost_text(o['judge_cost'])}" if o.get("judge_cost")
                                              else ""))
    for key, what in (("pass1", "per passing rollout"), ("best_of_n", "per best-of-N success")):
        each = (o.get("cost_per_success") or {}).get(key, False)
        if each is not False:
            out.append(f"cost {what}: " + (_cost_text(each) if each else "nothing passed"))
    eff = o.get("efficiency")
    if eff:
        out.append(f"efficiency against the reference steps ({eff['tasks']} task(s)): steps {_x(eff['steps_vs_reference'])}"
                   f" the reference; WES+ {_f(eff['wes_plus'])}, WES- {_f(eff['wes_minus'])} (OSWorld-Human's)")
    rows = []
    for task, t in list((fig.get("tasks") or {}).items())[:max_rows]:
        outcomes = " ".join("P" if r["outcome"] == "pass" else "f" if r["outcome"] == "fail" else "e"
                            for r in t["rollouts"])
        c = t["cost"]
        rows.append([task, outcomes, _f(t["pass1"]), _yn(t["passk"]),
                     "-" if "pick" not in t else ("none" if t["pick"] is None else f"{t['pick']}"
                                                  + (" P" if t["best"] else " f")),
                     f"{c['tokens_in']:,}/{c['tokens_out']:,}", f"{c['model_s']:g}", f"{c['harness_s']:g}",
                     c["steps"], f"{c['money']:.4f}" if "money" in c else "-",
                     _x(t.get("steps_vs_reference")) if "reference_steps" in t else "-"])
    out.append(table(["task", "rollouts", "pass@1", "pass@k", "pick", "tokens in/out", "model s", "harness s",
                      "steps", "money", "steps/ref"], rows))
    return out


def _rate_text(r: dict[str, Any]) -> str:
    if not r.get("n"):
        return "- (none)"
    lo, hi = r["ci95"]
    return f"{r['hits']}/{r['n']} = {r['rate']:.1%} (95% Wilson interval {lo:.1%}–{hi:.1%})"


def _cost_text(c: dict[str, Any]) -> str:
    text = (f"{c.get('tokens_in', 0):,} tokens in, {c.get('tokens_out', 0):,} out; model {c.get('model_s', 0):g} s, "
            f"harness {c.get('harness_s', 0):g} s; {c.get('steps', 0):g} step(s)")
    return text + (f"; money {c['money']:.4f}" if "money" in c else "")


def _f(v: Any) -> str:
    return "-" if v is None else f"{v:g}"


def _x(v: Any) -> str:
    return "-" if v is None else f"{v:g}x"


def _yn(v: Any) -> str:
    return "-" if v is None else ("yes" if v else "no")


def cost_args(args: Any) -> dict[str, Any]:
    """The cost flags a command was given (`conway.args.costs.add_cost_args`): {"prices": {"in", "out"} per
    million tokens or None, "reference": {task: steps} or None}."""
    prices = None
    given = [x for x in (args.price_in, args.price_out) if x is not None]
    if given:
        if min(given) < 0:
            raise UserError("--price-in and --price-out must not be negative")
        prices = {"in": args.price_in or 0.0, "out": args.price_out or 0.0}
    return {"prices": prices, "reference": load_reference(args.reference_steps) if args.reference_steps else None}
