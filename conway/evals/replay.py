"""Offline replay: recorded observations and contexts → a policy's decisions, scored, never executed.

    conway replay --trajectory traj.jsonl [--candidate NAME | --mock | policy.model_path=...] --output r.json

For each exported step the recorded image (archived screenshot, or the
regenerated vision-check case) and the context it was decided in go to the
policy's `decide()`; its first action is compared with the reference action:
a label's corrected action first, then the recorded action of a step labelled
correct, then (with `--against recorded`) whatever the model did at the time.
Nothing is dispatched: no tool is ever built.

Agreement: same action type and, for point actions, the point inside the
labelled target box when one is known, else within `--tolerance-px` of the
reference point (captured-screenshot pixels); other fields must be equal.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

from conway.actions import ActionProblem, _Action
from conway.errors import ExitCode, UserError
from conway.experience.conversation import step_context
from conway.experience.steps import read_records

POINT_TYPES = ("click", "double_click", "triple_click", "right_click", "move", "drag")


def reference_action(rec: dict[str, Any], against: str) -> tuple[dict[str, Any] | None, str]:
    labels = rec.get("labels") or {}
    if labels.get("corrected_action"):
        return labels["corrected_action"], "label"
    recorded = next((a for a in (rec.get("decision") or {}).get("actions") or []
                     if isinstance(a, dict) and "type" in a), None)
    if labels.get("verdict") == "correct" or labels.get("success") == "success":
        return recorded, "label"
    if against == "recorded":
        return recorded, "recorded"
    return None, "unlabelled"


def agree(proposed: dict[str, Any] | None, reference: dict[str, Any], box: list[float] | None,
          tolerance_px: float) -> tuple[bool, float | None]:
    """(agreement, distance in captured px for point actions)."""
    if proposed is None or proposed.get("type") != reference.get("type"):
        return False, None
    if reference.get("type") in POINT_TYPES and reference.get("x") is not None:
        x, y = float(proposed.get("x", math.nan)), float(proposed.get("y", math.nan))
        d = math.hypot(x - float(reference["x"]), y - float(reference["y"]))
        ok = (box[0] <= x <= box[2] and box[1] <= y <= box[3]) if box else d <= tolerance_px
        if reference.get("type") == "drag":
            ok = ok and math.hypot(float(proposed.get("to_x", math.nan)) - float(reference["to_x"]),
                                   float(proposed.get("to_y", math.nan)) - float(reference["to_y"])) <= tolerance_px
        return ok, round(d, 2) if math.isfinite(d) else None
    keys = set(reference) | set(proposed)
    return all(proposed.get(k) == reference.get(k) for k in keys if k not in ("x", "y")), None


def load_trajectory(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"trajectory {p} does not exist (write one with `conway export --output FILE`)")
    recs = read_records(p, "; a trajectory is a conway-traj/1 JSONL file")
    if not recs:
        raise UserError(f"trajectory {p} is empty")
    return recs


def replay(home: Any, config: Any, trajectory: str, *, output: str, against: str = "labels",
           tolerance_px: float = 20.0, limit: int | None = None, skip_missing: bool = False,
           policy: Any = None, argv: list[str] | None = None, say: Callable[[str], None] = print) -> int:
    """Replay a trajectory through a policy; write a report; exit 0 (all agree) / 2 (disagreements)."""
    began = time.time()  # the report is built at the end: its times start here
    from conway.evals.report import Report, check_new_output, served_by_of
    from conway.evals.stats import wilson
    from conway.experience.steps import check_screenshots

    if against not in ("labels", "recorded"):
        raise UserError(f"--against must be labels or recorded (got {against!r})")
    out = check_new_output(output, home)
    recs = load_trajectory(trajectory)
    recs, missing = check_screenshots(recs, home.root, skip_missing)
    todo = _with_references(recs, against, limit, trajectory)
    own = policy is None
    if policy is None:
        from conway.policies.factory import build_policy
        policy = build_policy(config, home)
    started = time.perf_counter()
    try:
        cases = [_replay_step(policy, config, home.root, rec, ref, source, tolerance_px) for rec, ref, source in todo]
    finally:
        if own:
            policy.close()
    n = len(cases)
    agreed = sum(1 for c in cases if c["agree"])
    lo, hi = wilson(agreed, n)
    summary = {"steps": n, "agree": agreed, "agreement": agreed / n, "agreement_ci95": [round(lo, 4), round(hi, 4)],
               # a step without its image is counted as a missing screenshot, not also as an error
               "errors": sum(1 for c in cases if c.get("error") and not c.get("missing_image")),
               "missing_screenshots": len(missing) + sum(1 for c in cases if c.get("missing_image")),
               "wall_s": round(time.perf_counter() - started, 3)}
    report = Report("replay", out, argv=argv, config=config, started=began, parameters={
        "trajectory": str(Path(trajectory).expanduser().resolve()), "against": against,
        "tolerance_px": tolerance_px, "executed": "nothing (decisions only)"})
    report.set_model(policy.model_id, served_by=served_by_of(policy))
    code = ExitCode.PASSED if agreed == n else ExitCode.NOT_PASSED
    report.finish(status="pass" if code == ExitCode.PASSED else "disagreements", exit_code=code, summary=summary,
                  cases_order=cases)
    say(f"replay: {agreed}/{n} steps agree ({summary['agreement']:.1%}, 95% CI {lo:.1%}–{hi:.1%}), "
        f"{summary['errors']} error(s), {summary['missing_screenshots']} missing screenshot(s); nothing was executed")
    say(f"report: {out}")
    return code


def _with_references(recs: list[dict[str, Any]], against: str, limit: int | None,
                     trajectory: str) -> list[tuple[dict[str, Any], dict[str, Any], str]]:
    """(step, its reference action, where the reference came from) of the steps that have one, at most `limit`."""
    todo = []
    for rec in recs:
        ref, source = reference_action(rec, against)
        if ref is not None:
            todo.append((rec, ref, source))
    if limit:
        todo = todo[:limit]
    if not todo:
        raise UserError(f"no step of {trajectory} has a reference action to compare with "
                        f"(--against {against}); label steps with `conway review` or use --against recorded")
    return todo


def _replay_step(policy: Any, config: Any, home_root: Path, rec: dict[str, Any], ref: dict[str, Any], source: str,
                 tolerance_px: float) -> dict[str, Any]:
    """One step decided again by `policy` (nothing dispatched): the case, agreeing with `ref` or not."""
    from conway.experience.steps import record_image

    png = record_image(rec, home_root)
    case: dict[str, Any] = {"session": rec["session"], "step": rec["step"], "reference": ref,
                            "reference_source": source}
    if png is None:
        case.update(agree=False, error="the step has no image to replay", missing_image=True)
        return case
    ctx = step_context(rec, png, config)
    try:
        decision = policy.decide(ctx)
    except Exception as exc:
        case.update(agree=False, error=f"{type(exc).__name__}: {exc}")
        return case
    first = decision.actions[0] if decision.actions else None
    proposed = first.model_dump() if isinstance(first, _Action) else None
    ok, dist = agree(proposed, ref, (rec.get("task") or {}).get("target_box"), tolerance_px)
    case.update(proposed=proposed, agree=ok, distance_px=dist, raw_output=(decision.raw_text or "")[:2000],
                model_id=decision.model_id,
                error=None if proposed is not None else (
                    (first.message if isinstance(first, ActionProblem) else None) or "no action"))
    return case
