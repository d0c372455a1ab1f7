"""HTML for reports: vision-check, grounding-check and candidate-eval cases with the target box and the click;
tasks reports (`conway tasks run`: `conway.view.report_tasks`) with each task's last screen and scores.

Vision-check images are not in a report; they are regenerated from the
generator, seed, size and index it records (and checked against the recorded
sha256), so such a report renders on any machine that has the same Conway.
Grounding-check cases name their screenshot file.

What differs between kinds (outcomes, filters) is the `ReportView` of each
kind's record (`conway.evals.suites`); how a card and the summary rows are
drawn is the `Layout` it names in `LAYOUTS` (click, pair, task, cell, judged, curve). A new
report kind is one registration there, drawn by one of these layouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from conway.errors import UserError
from conway.evals.kinds import ReportView
from conway.evals.suites import having, suite_kind
from conway.view import report_curve, report_judged, report_tasks
from conway.view.overlay import crosshair, target_box
from conway.view.overlay import frame as _frame
from conway.view.page import esc, facts_table, pager, shell
from conway.view.render import TEXT_MAX, pages_of, toolbar

CaseImage = Callable[[dict[str, Any]], tuple[str | None, str]]
"""case -> (image url, why not)."""


def view_of(kind: str) -> ReportView:
    """The registered `ReportView` of a kind `check_kind` let through."""
    found = suite_kind(kind)
    assert found is not None and found.view is not None, kind
    return found.view


def check_kind(data: dict[str, Any], path: Any) -> str:
    kind = str(data.get("kind"))
    found = suite_kind(kind)
    if found is None:
        raise UserError(f"{path} is a report of kind {kind!r}, which this Conway does not know (it draws "
                        f"{', '.join(k.name for k in having('view'))} reports)")
    if found.view is None:
        raise UserError(f"{path} is a {kind!r} report; `conway view` draws "
                        f"{', '.join(k.name for k in having('view'))} reports "
                        f"(use `conway report {path}` for this one)")
    return kind


def _click(pred: Any, size: tuple[int, int], hit: bool) -> str:
    try:
        x, y = float(pred[0]), float(pred[1])
    except (TypeError, ValueError, IndexError):
        return ""
    return (f'<g class="mark click {"hit" if hit else "miss"}" data-x="{x:g}" data-y="{y:g}">'
            f"{crosshair(x, y, max(size) / 70)}</g>")


def _answer_lines(who: str, a: dict[str, Any]) -> str:
    pred = a.get("predicted")
    where = f"({pred[0]:g}, {pred[1]:g})" if isinstance(pred, list) and len(pred) == 2 else "no click"
    lines = [f'<div class="line"><span class="k">{esc(who)}</span>{"hit" if a.get("hit") else "miss"} at {esc(where)}'
             + (f' · {a["distance_px"]:g} px from the centre' if isinstance(a.get("distance_px"), (int, float)) else "")
             + (f' · {a["latency_s"]:.3f} s' if isinstance(a.get("latency_s"), (int, float)) else "") + "</div>"]
    if a.get("error"):
        lines.append(f'<div class="line err"><span class="k">error</span>{esc(a["error"])}</div>')
    if a.get("raw_output") is not None:
        lines.append(f'<details class="raw"><summary>{esc(who)} raw output</summary>'
                     f'<pre class="text">{esc(str(a["raw_output"])[:TEXT_MAX])}</pre></details>')
    return "".join(lines)


def case_size(c: dict[str, Any], default: tuple[int, int]) -> tuple[int, int]:
    size = (c.get("image") or {}).get("size")
    try:
        return (int(size[0]), int(size[1])) if size else default
    except (TypeError, ValueError, IndexError):
        return default


def case_card(kind: str, pos: int, c: dict[str, Any], size: tuple[int, int], image: CaseImage) -> str:
    r = view_of(kind)
    t = c.get("target") or {}
    size = case_size(c, size)
    outcome = r.outcome(c)
    url, why = image(c)
    box = target_box(t.get("box"), pixels=r.pixel_boxes)
    pics, lines = LAYOUTS[r.layout].card(r, c, size, url, why, box)
    head = (f'<header><a class="step" href="#s={esc(c.get("index"))}">case {esc(c.get("index"))}</a>'
            f'<span class="badge outcome">{esc(outcome)}</span>'
            f'<span>{esc(c.get("instruction") or "")}</span></header>')
    name = f"{t.get('colour')} {t.get('shape')} · " if t.get("colour") else ""
    target = (f'<div class="line"><span class="k">target</span>{esc(name)}box {esc(t.get("box"))} (inclusive) · '
              f'centre {esc(t.get("centre"))}</div>') if t else ""  # a task case has no click target
    body_cls = "body big" if r.big else "body"
    return (f'<article class="card o-{esc(outcome)}{" big" if r.big else ""}" id="step-{esc(c.get("index"))}" '
            f'data-step="{esc(c.get("index"))}" data-index="{pos}" data-outcome="{esc(outcome)}">{head}'
            f'<div class="{body_cls}">{pics}<div class="facts-col">{target}{lines}</div></div></article>')


def _pct(v: Any) -> str:
    return f"{v:.1%}" if isinstance(v, (int, float)) else "—"


def _ci(v: Any) -> str:
    return f"{_pct(v[0])}–{_pct(v[1])}" if isinstance(v, list) and len(v) == 2 else "—"


def report_summary(kind: str, data: dict[str, Any]) -> str:
    rows: list[tuple[str, str]] = [("status", esc(f"{data.get('status')} (exit {data.get('exit_code')})")),
                                   ("command", f"<code>{esc((data.get('command') or {}).get('line'))}</code>"),
                                   ("model", esc(data.get("model_id") or "—")),
                                   ("revision", esc(((data.get("conway") or {}).get("git_revision") or "not recorded")[:12])),
                                   ("seed", esc(data.get("seed")))]
    if (data.get("parameters") or {}).get("size"):
        rows.append(("image size", esc(data["parameters"]["size"])))
    rows += LAYOUTS[view_of(kind).layout].rows(data)
    return f'<section class="summary"><details open><summary>{esc(kind)} report</summary>{facts_table(rows)}</details></section>'


def report_data(kind: str, cases: list[dict[str, Any]], page_size: int) -> dict[str, Any]:
    r = view_of(kind)
    text = []
    for c in cases:
        parts = [str(c.get("task") or ""), c.get("instruction") or ""] + [str((c.get(w) or {}).get("raw_output") or "") for w in ("base", "candidate")]
        text.append(" ".join(parts + [str(c.get("raw_output") or ""), str(c.get("error") or "")])[:600])
    return {"title": kind, "page_size": page_size, "pages": pages_of(len(cases), page_size),
            "steps": [c.get("index", i) for i, c in enumerate(cases)],
            "outcome": [r.outcome(c) for c in cases],
            "kind": [r.sort_value(c) for c in cases],
            "text": text, "label": ["" for _ in cases], "outcomes": list(r.outcomes),
            "error_outcomes": list(r.error_outcomes)}


def report_page(kind: str, data: dict[str, Any], cases: list[dict[str, Any]], page: int, page_size: int,
                image: CaseImage, source: str) -> str:
    size_raw = (data.get("parameters") or {}).get("size") or [1920, 1080]
    size = (int(size_raw[0]), int(size_raw[1]))
    pages = pages_of(len(cases), page_size)
    chunk = cases[(page - 1) * page_size: page * page_size]
    d = report_data(kind, cases, page_size)
    colours = sorted(set(d["kind"]) - {""})
    outcomes = [o for o in d["outcomes"] if o in d["outcome"]]
    cards = "\n".join(case_card(kind, (page - 1) * page_size + i, c, size, image) for i, c in enumerate(chunk))
    r = view_of(kind)
    bar = toolbar(colours, outcomes, "search outputs").replace("<kbd>e</kbd> next error",
                                                               f"<kbd>e</kbd> next {r.next_error}")
    bar = bar.replace("<label>kind ", f"<label>{r.sort_label} ")
    body = (f'<header class="top"><h1>{esc(kind)} report <span class="crumb">{esc(source)}</span></h1>{bar}</header>'
            f"{report_summary(kind, data)}{pager(page, pages, 'page')}<main id=\"steps\">"
            f"{cards or '<div class=empty>The report has no cases.</div>'}</main>{pager(page, pages, 'page')}")
    return shell(f"{kind} report — Conway", body, data_src="data.js",
                 body_attrs={"view": "report", "page": page, "pages": pages, "mode": "static"})


# --- the layouts: how a case's card and the summary rows are drawn ---------------------------------


def _click_card(view: ReportView, c: dict[str, Any], size: tuple[int, int], url: str | None, why: str,
                box: str) -> tuple[str, str]:
    """One model's answer on one image, captioned by the kind's `caption`."""
    t = c.get("target") or {}
    caption = view.caption(c) if view.caption is not None else ""
    pics = _frame(url, why, size, box + _click(c.get("predicted"), size, bool(c.get("hit"))),
                  f"{caption}, box {t.get('box')}")
    return pics, _answer_lines("model", c)


def _pair_card(view: ReportView, c: dict[str, Any], size: tuple[int, int], url: str | None, why: str,
               box: str) -> tuple[str, str]:
    """The base's and the candidate's answers side by side on the same image."""
    sides = [(who, c.get(who) or {}) for who in ("base", "candidate")]
    figs = "".join(_frame(url, why, size, box + _click(a.get("predicted"), size, bool(a.get("hit"))), who)
                   for who, a in sides)
    return f'<div class="pair">{figs}</div>', "".join(_answer_lines(who, a) for who, a in sides)


def _task_card(view: ReportView, c: dict[str, Any], size: tuple[int, int], url: str | None, why: str,
               box: str) -> tuple[str, str]:
    return report_tasks.card_body(c, size, url, why, box)


def _judged_card(view: ReportView, c: dict[str, Any], size: tuple[int, int], url: str | None, why: str,
                 box: str) -> tuple[str, str]:
    return report_judged.card_body(c)


def _cell_card(view: ReportView, c: dict[str, Any], size: tuple[int, int], url: str | None, why: str,
               box: str) -> tuple[str, str]:
    """A sweep's cell: its settings, its rate and interval, and its own report (open it with `conway view`)."""
    settings = ", ".join(f"{k}={v}" for k, v in (c.get("settings") or {}).items())
    lines = [("settings", settings), ("rate", f"{c.get('successes')}/{c.get('cases')} = {_pct(c.get('rate'))} "
                                              f"(95% CI {_ci(c.get('ci95'))})"),
             ("model", str(c.get("model_id") or "—")), ("status", f"{c.get('status')} (exit {c.get('exit_code')})"),
             ("report", f"{c.get('report')} — conway view {c.get('report')}")]
    more = [f"{name} {_pct(c[k])}" for k, name in (("pass1", "pass@1"), ("passk", "pass@k"), ("best_of_n", "best-of-N"))
            if isinstance(c.get(k), (int, float))]
    if more:  # a rollout set's or a judge's cell (`conway.evals.best_of_n`)
        lines.insert(2, ("best of N", ", ".join(more)))
    return "", "".join(f'<div class="line"><span class="k">{esc(k)}</span>{esc(v)}</div>' for k, v in lines)


def _click_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    s = data.get("summary") or {}
    pat = s.get("pattern") or {}
    lat = s.get("latency_s") or {}
    rows = [("hits", esc(f"{s.get('hits')}/{s.get('cases')} = {_pct(s.get('hit_rate'))} "
                         f"(95% CI {_ci(s.get('hit_rate_ci95'))}); misses {s.get('misses')}, errors {s.get('errors')}")),
            ("latency", esc(f"p50 {lat.get('p50')} s, p95 {lat.get('p95')} s")),
            ("miss pattern", esc(pat.get("verdict") or "—")),
            ("pattern numbers", esc(", ".join(f"{k} {v}" for k, v in pat.items() if k != "verdict")))]
    for key in ("by_type", "by_source", "by_size"):
        groups = s.get(key) or {}
        if groups:
            rows.append((key.replace("_", " "), esc("; ".join(
                f"{name} {g.get('hits')}/{g.get('n')} ({_pct(g.get('hit_rate'))})" for name, g in groups.items()))))
    return rows


def _pair_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    s = data.get("summary") or {}
    rows = []
    for who in ("base", "candidate"):
        x = s.get(who) or {}
        rows.append((who, esc(f"{x.get('hits')}/{s.get('cases')} = {_pct(x.get('hit_rate'))} (95% CI "
                              f"{_ci(x.get('hit_rate_ci95'))}) · {x.get('model_id')}")))
    d = s.get("difference_ci95")
    rows += [("difference", esc(f"{s.get('difference')} (95% CI {d}); intervals "
                                f"{'separated' if s.get('intervals_separated') else 'overlap'}")),
             ("paired", esc(", ".join(f"{k} {v}" for k, v in (s.get("paired") or {}).items())))]
    return rows


def _task_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    return (report_tasks.rollout_rows(data) + report_tasks.summary_rows(data.get("summary") or {})
            + report_tasks.environment_rows(data))


def _cell_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    s = data.get("summary") or {}
    return [("cells", esc(f"{s.get('finished')}/{s.get('cells')} finished")),
            ("best", esc(f"{s.get('best')} at {_pct(s.get('best_rate'))} (95% CI {_ci(s.get('best_ci95'))})")),
            ("clearly below the best", esc(", ".join(s.get("clearly_below_best") or []) or "none"))]


def _curve_card(view: ReportView, c: dict[str, Any], size: tuple[int, int], url: str | None, why: str,
                box: str) -> tuple[str, str]:
    """A learning curve's round: its held-out and train success, where it stands against chance, reward, KL."""
    return "", report_curve.card_lines(c)


def _curve_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    return report_curve.summary_rows(data, data.get("cases") or [])


@dataclass(frozen=True)
class Layout:
    """How the viewer draws a kind's cases and summary; a kind names its layout in its `ReportView`."""

    card: Callable[..., tuple[str, str]]
    """(view, case, size, image url, why not, target box svg) -> (pictures, answer lines)."""
    rows: Callable[[dict[str, Any]], list[tuple[str, str]]]
    """report -> the summary's rows (HTML values)."""


LAYOUTS: dict[str, Layout] = {
    "click": Layout(_click_card, _click_rows),
    "pair": Layout(_pair_card, _pair_rows),
    "task": Layout(_task_card, _task_rows),
    "cell": Layout(_cell_card, _cell_rows),
    "judged": Layout(_judged_card, report_judged.summary_rows),
    "curve": Layout(_curve_card, _curve_rows),
}
"""Layout name -> how its cards and summary are drawn."""
