"""`conway report`'s text for the kinds Conway ships: one function per kind, `(report, cases, max rows) -> lines`.

Registered with their kinds in `conway.evals.suites`; the header every report shares is
`conway.evals.report_render`'s.
"""

from __future__ import annotations

from typing import Any

from conway.evals.text import _fmt_box, _fmt_point, _short, _yn, table


def render_vision(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    summary = data.get("summary") or {}
    out = []
    cases = sorted(cases, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0)
    n = summary.get("cases", len(cases))
    ci = summary.get("hit_rate_ci95") or [None, None]
    rate = summary.get("hit_rate")
    if rate is not None:
        out.append(f"hits {summary.get('hits')}/{n} = {rate:.1%} (95% Wilson interval {ci[0]:.1%}–{ci[1]:.1%}); "
                   f"misses {summary.get('misses')}, errors {summary.get('errors')}")
    lat = summary.get("latency_s") or {}
    if lat.get("p50") is not None:
        out.append(f"latency p50 {lat['p50']:.3f} s, p95 {lat['p95']:.3f} s over {lat.get('n')} answered case(s)")
    pattern = summary.get("pattern") or {}
    if pattern.get("verdict"):
        out.append(f"pattern: {pattern['verdict']}")
    out += _model_error_lines(summary)
    out.append("")
    rows = []
    for c in cases[:max_rows]:
        t = c.get("target") or {}
        rows.append([c.get("index"), "hit" if c.get("hit") else ("error" if c.get("error") else "miss"),
                     f"{t.get('colour', '?')} {t.get('shape', '?')}", _fmt_box(t.get("box")),
                     _fmt_point(c.get("predicted")),
                     f"{c['distance_px']:.0f}" if c.get("distance_px") is not None else "-",
                     f"{c['latency_s']:.3f}" if c.get("latency_s") is not None else "-",
                     _short(c.get("error") or c.get("raw_output"), 40)])
    out.append(table(["#", "result", "target", "box (inclusive)", "predicted", "dist px", "latency s", "output / error"],
                     rows))
    if len(cases) > max_rows:
        out.append(f"... {len(cases) - max_rows} more case(s) in the report")
    return out


def _fmt_action(action: Any) -> str:
    """`click (318, 203)`, `append_file`: an action's type and its point, if it has one."""
    if not isinstance(action, dict):
        return "-"
    x, y = action.get("x"), action.get("y")
    point = f" ({x:.0f}, {y:.0f})" if isinstance(x, (int, float)) and isinstance(y, (int, float)) else ""
    return f"{action.get('type', '?')}{point}"


def _rate_line(hits: Any, n: Any, rate: Any, ci: Any, what: str) -> str:
    if not isinstance(rate, (int, float)) or not isinstance(ci, list) or len(ci) != 2:
        return f"{what} {hits}/{n}"
    return f"{what} {hits}/{n} = {rate:.1%} (95% Wilson interval {ci[0]:.1%}–{ci[1]:.1%})"


def render_replay(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    summary = data.get("summary") or {}
    out = [_rate_line(summary.get("agree"), summary.get("steps"), summary.get("agreement"),
                      summary.get("agreement_ci95"), "agree") + f"; errors {summary.get('errors', 0)}, "
           f"missing screenshots {summary.get('missing_screenshots', 0)}; nothing was executed", ""]
    rows = [[c.get("session"), c.get("step"), _yn(c.get("agree")), _fmt_action(c.get("reference")),
             c.get("reference_source"), _fmt_action(c.get("proposed")),
             f"{c['distance_px']:.0f}" if isinstance(c.get("distance_px"), (int, float)) else "-",
             _short(c.get("error"), 40)] for c in cases[:max_rows]]
    out.append(table(["session", "step", "agree", "reference", "from", "proposed", "dist px", "error"], rows))
    if len(cases) > max_rows:
        out.append(f"... {len(cases) - max_rows} more step(s) in the report")
    return out


def render_candidate_eval(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    summary = data.get("summary") or {}
    n = summary.get("cases", len(cases))
    out = []
    for side in ("base", "candidate"):
        s = summary.get(side) or {}
        out.append(_rate_line(s.get("hits"), n, s.get("hit_rate"), s.get("hit_rate_ci95"), f"{side:<9} hits")
                   + f"; errors {s.get('errors', 0)}  [{s.get('model_id', '?')}]")
    diff, ci = summary.get("difference"), summary.get("difference_ci95") or [None, None]
    if isinstance(diff, (int, float)) and None not in ci:
        out.append(f"difference {diff:+.1%} (95% CI {ci[0]:+.1%} to {ci[1]:+.1%}); intervals "
                   f"{'do not overlap' if summary.get('intervals_separated') else 'overlap'}")
    paired = summary.get("paired") or {}
    if paired:
        out.append(f"paired: both hit {paired.get('both_hit')}, only base {paired.get('only_base_hit')}, "
                   f"only candidate {paired.get('only_candidate_hit')}")
    out.append("")
    rows = []
    for c in cases[:max_rows]:
        b, k = c.get("base") or {}, c.get("candidate") or {}
        rows.append([c.get("index"), _short(c.get("instruction") or _fmt_box((c.get("target") or {}).get("box")), 40),
                     "hit" if b.get("hit") else ("error" if b.get("error") else "miss"), _fmt_point(b.get("predicted")),
                     "hit" if k.get("hit") else ("error" if k.get("error") else "miss"), _fmt_point(k.get("predicted"))])
    out.append(table(["#", "target", "base", "base point", "candidate", "candidate point"], rows))
    if len(cases) > max_rows:
        out.append(f"... {len(cases) - max_rows} more case(s) in the report")
    return out


def _model_error_lines(summary: dict[str, Any]) -> list[str]:
    """Model errors by cause, and the "no valid decision" outcome, when the report has them."""
    from conway.protocols import describe_causes

    out = []
    causes = summary.get("model_errors")
    if isinstance(causes, dict) and causes:
        out.append(f"model errors:          {describe_causes(causes)}")
    if summary.get("no_valid_decision"):
        out.append(f"outcome:               {summary['no_valid_decision']}")
    return out


def render_checks(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    """Every check of a preflight (all of them: a preflight has a handful)."""
    rows = [[c.get("check"), c.get("status"), _short(c.get("detail"), 100)] for c in cases]
    return [table(["check", "status", "detail"], rows)]


def render_session(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    """One session: the model's single finish, then each criterion Conway checked."""
    summary = data.get("summary") or {}
    declared = summary.get("declared")
    said = (f"{declared.get('status')}" + (f" ({declared['message']})" if declared.get("message") else "")
            if isinstance(declared, dict) else "nothing (no finish)")
    verdict = {True: "all criteria passed", False: "NOT verified", None: "not verified"}[summary.get("verified")]
    out = [f"declared by the model: {said}",
           f"verified by Conway:    {verdict} ({summary.get('verified_passed', 0)} passed, "
           f"{summary.get('verified_failed', 0)} failed); {summary.get('note', '')}",
           f"session:               {summary.get('session', '-')}, {summary.get('steps', '?')} step(s), "
           f"stopped: {summary.get('stop_reason', '?')}", *_model_error_lines(summary), ""]
    rows = [[c.get("check"), _short(c.get("criterion"), 50), _yn(c.get("verified")), _short(c.get("observed"), 80)]
            for c in cases]
    out.append(table(["check", "criterion", "verified", "observed"], rows) if rows else "(no criteria)")
    return out


def render_acceptance(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    """Each task's criterion: what the model declared beside what Conway verified."""
    summary = data.get("summary") or {}
    out = []
    declared = summary.get("declared")
    if isinstance(declared, dict):
        out.append("declared by the model: " + ", ".join(f"{k} {v}" for k, v in declared.items()))
    out.append(f"verified by Conway:    {summary.get('verified_passed', 0)} passed, "
               f"{summary.get('verified_failed', 0)} failed")
    out += _model_error_lines(summary)
    out.append("")
    rows = []
    for c in cases:
        said = c.get("declared")
        if isinstance(said, dict):
            said = f"{said.get('status')}" + (f": {_short(said.get('message'), 30)}" if said.get("message") else "")
        rows.append([c.get("check"), _short(c.get("criterion") or c.get("task"), 50), _yn(c.get("verified")),
                     said or "(nothing)", _short(c.get("observed"), 70)])
    out.append(table(["check", "criterion", "verified", "declared", "observed"], rows))
    return out
