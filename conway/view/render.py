"""HTML for sessions: the index of all sessions, and a session's pages of step cards."""

from __future__ import annotations

import json
from typing import Any, Callable

from conway.experience.costs import render_record
from conway.view.overlay import POINT_TYPES, action_mark, caption, summary, svg
from conway.view.page import esc, facts_table, pager, shell
from conway.view.sessions import SessionView, StepView

TEXT_MAX = 20_000
"""Longest thought / raw output / result shown in a card (the rest is cut, and says so)."""
SEARCH_MAX = 600
"""Characters of each thought the page's search sees across the whole session."""
CORRECTABLE = ("click", "double_click", "triple_click", "right_click", "move", "scroll", "type", "key", "hotkey")
"""Corrected-action types the review form builds from a point and/or one text field (anything else: JSON)."""

ImageRef = Callable[[StepView], tuple[str | None, str | None, str]]
"""step -> (thumbnail url, full-size url, state: ok | missing | none | outside)."""


def _cut(text: Any, n: int = TEXT_MAX) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= n else s[:n] + f"\n… ({len(s) - n} more characters not shown)"


def _dur(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"


def _size(v: Any) -> str:
    return f"{v[0]}×{v[1]}" if isinstance(v, (list, tuple)) and len(v) == 2 else "—"


def _frame(step: StepView, images: ImageRef) -> str:
    size = step.size
    thumb, full, state = images(step)
    marks = "".join(action_mark(a, size, n=i + 1) for i, a in enumerate(step.actions)) if size else ""
    corrected = (step.record.get("labels") or {}).get("corrected_action")
    if size and isinstance(corrected, dict):
        marks += action_mark(corrected, size, "corrected")
    ratio = f' style="aspect-ratio:{size[0]}/{size[1]}"' if size else ""
    shot = (step.record.get("observation") or {}).get("screenshot")
    if state == "ok" and thumb:
        pic = (f'<img loading="lazy" src="{esc(thumb)}" data-full="{esc(full)}" data-thumb="{esc(thumb)}" '
               f'alt="screenshot of step {step.step}">')
    else:
        why = {"missing": f"screenshot rotated away ({shot})", "outside": f"screenshot outside the home, not shown ({shot})",
               "none": "no screenshot archived for this step"}.get(state, "no screenshot")
        if not (step.record.get("observation") or {}):
            why = "no observation recorded for this step"
        pic = f'<div class="why">{esc(why)}</div>'
    words = [caption(a) for a in step.actions if a.get("type") not in POINT_TYPES or a.get("type") == "scroll"]
    cap = f"<figcaption>{esc('; '.join(words))}</figcaption>" if words else ""
    data = f' data-w="{size[0]}" data-h="{size[1]}"' if size else ""
    return (f'<figure class="shot"><div class="frame"{ratio}{data}>{pic}{svg(size, marks) if size else ""}</div>'
            f"{cap}</figure>")


def _outcome_lines(rec: dict[str, Any]) -> list[str]:
    out = []
    for a in rec.get("actions") or []:
        act = a.get("action") or {}
        what = summary(act) if act else ""
        kind = a.get("kind")
        if kind == "error" or a.get("ok") is False:
            out.append(f'<div class="line err"><span class="k">error</span>{esc(what)} → {esc(_cut(a.get("error"), 2000))}</div>')
        elif kind == "suppressed":
            out.append(f'<div class="line"><span class="k">suppressed</span>{esc(what)} (already done '
                       f'{esc(a.get("times"))} times in a row)</div>')
        elif kind == "uncertain":
            out.append(f'<div class="line err"><span class="k">uncertain</span>{esc(what)}: {esc(a.get("detail"))}</div>')
        else:
            detail = a.get("detail") or a.get("output") or ""
            if a.get("idle_wait_s") is not None:
                detail = f"waited {a['idle_wait_s']:g} s"
            ok = "planned only" if a.get("dry_run") else "ok"
            out.append(f'<div class="line"><span class="k">{esc(ok)}</span>{esc(_cut(detail, 2000) or what)}</div>')
    for e in rec.get("errors") or []:
        bits = []
        if e.get("rate_limited"):
            bits.append(f"rate limited, retry after {e.get('retry_after_s')} s")
        if e.get("consecutive"):
            bits.append(f"{e['consecutive']} in a row")
        if e.get("backoff_s"):
            bits.append(f"backoff {e['backoff_s']:g} s")
        extra = f" ({', '.join(bits)})" if bits else ""
        out.append(f'<div class="line err"><span class="k">error</span>{esc(e.get("stage") or "")} '
                   f'{esc(_cut(e.get("error"), 2000))}{esc(extra)}</div>')
    fin = rec.get("finish")
    if fin:
        out.append(f'<div class="line"><span class="k">finish</span>{esc(fin.get("status"))}: {esc(fin.get("message"))} '
                   '<span class="muted">(the model\'s own report, not verified)</span></div>')
    return out


def _screen_line(obs: dict[str, Any]) -> list[str]:
    """What the observer said about the screen (its words can hold window titles: escaped like the rest)."""
    bits = [f"{obs['source']}" if obs.get("source") else ""]
    bits += [f"{k} {_cut(obs[k], 300)}" for k in ("change", "accessibility", "screenshot_error") if obs.get(k)]
    bits = [b for b in bits if b]
    return [f'<div class="line"><span class="k">screen</span>{esc(" · ".join(bits))}</div>'] if bits else []


def _label_line(labels: dict[str, Any]) -> str:
    if not labels.get("source"):
        return '<div class="line label-line"><span class="k">label</span><span class="muted">none</span></div>'
    bits = [labels.get("verdict") or labels.get("success"), f"source {labels.get('source')}"]
    if labels.get("hindsight"):
        bits.append("hindsight")
    if labels.get("corrected_action"):
        bits.append("corrected: " + summary(labels["corrected_action"]))
    if labels.get("note"):
        bits.append(f"note: {labels['note']}")
    return f'<div class="line label-line"><span class="k">label</span>{esc("; ".join(str(b) for b in bits if b))}</div>'


def _review(step: StepView) -> str:
    first = step.actions[0] if step.actions else {}
    kind = first.get("type") if first.get("type") in CORRECTABLE else "click"
    opts = "".join(f'<option{" selected" if t == kind else ""}>{t}</option>' for t in CORRECTABLE)
    return ('<div class="review">'
            '<button type="button" data-verdict="correct">correct</button>'
            '<button type="button" data-verdict="wrong">wrong</button>'
            '<button type="button" data-verdict="redundant">redundant</button>'
            '<span class="status" role="status"></span>'
            '<div class="correction" hidden>'
            '<div class="muted">Click the screenshot to set the corrected point (screen pixels); for type, key, '
            'hotkey (ctrl+s) and scroll (wheel clicks, + is up) fill the text field; or write any action as JSON.</div>'
            f'<div class="row"><select class="c-type">{opts}</select>'
            '<label>x <input class="c-x" type="number" step="1" min="0"></label>'
            '<label>y <input class="c-y" type="number" step="1" min="0"></label>'
            '<label>text <input class="c-text" type="text" maxlength="10000"></label></div>'
            '<textarea class="c-json" placeholder=\'or JSON: {"type": "open_browser", "url": "https://example.org"}\'></textarea>'
            '<input class="c-note" type="text" maxlength="4000" placeholder="note (optional)">'
            '<div class="row"><button type="button" class="c-save">save “wrong”</button>'
            '<button type="button" class="c-cancel">cancel</button></div></div></div>')


def step_card(step: StepView, images: ImageRef, review: bool) -> str:
    rec = step.record
    dec = step.decision
    geo = rec.get("geometry") or {}
    labels = rec.get("labels") or {}
    flags = "".join(f'<span class="badge flag">{esc(f)}</span>' for f in step.flags)
    lab = (f'<span class="badge label">{esc(labels.get("verdict") or labels.get("success"))} '
           f'({esc(labels.get("source"))})</span>' if labels.get("source") else "")
    head = (f'<header><a class="step" href="#s={step.step}">step {step.step}</a>'
            f'<span class="badge outcome">{esc(step.outcome)}</span>{flags}{lab}'
            f'<span class="when">{esc(rec.get("t_start"))}</span></header>')
    acts = [f'<div class="line"><span class="k">action {i + 1}</span><code>{esc(summary(a))}</code></div>'
            for i, a in enumerate(step.actions)]
    acts += [f'<div class="line err"><span class="k">unparsed</span>{esc(a.get("problem"))}</div>'
             for a in dec.get("actions") or [] if isinstance(a, dict) and "problem" in a]
    if not dec:
        acts.append('<div class="line muted">no decision recorded</div>')
    t = step.timings
    geo_bits = [f"captured {_size(geo.get('captured_size'))}", f"sent {_size(geo.get('sent_size'))}",
                f"convention {geo.get('convention') or '—'}"] + ([f"resize {geo['resize_rule']}"] if geo.get("resize_rule") else [])
    facts = [
        *acts, *_outcome_lines(rec),
        f'<div class="line"><span class="k">time</span>observe {_dur(t["observe_s"])} · decide {_dur(t["decide_s"])} · '
        f'dispatch {_dur(t["dispatch_s"])}</div>',
        f'<div class="line"><span class="k">geometry</span>{esc(" · ".join(geo_bits))}</div>',
        *_screen_line(rec.get("observation") or {}),
        f'<div class="line"><span class="k">model</span>{esc(rec.get("model_id") or "—")}'
        + (f' <span class="muted">{esc(json.dumps(dec["usage"]))}</span>' if dec.get("usage") else "") + "</div>",
        *[f'<div class="line"><span class="k">recovery</span>{esc(r)}</div>' for r in step.recoveries],
        _label_line(labels),
    ]
    texts = ""
    if dec.get("thought"):
        texts += f'<details class="thought" open><summary>thought</summary><pre class="text">{esc(_cut(dec["thought"]))}</pre></details>'
    if dec.get("reasoning"):
        texts += f'<details class="reasoning"><summary>reasoning</summary><pre class="text">{esc(_cut(dec["reasoning"]))}</pre></details>'
    if dec.get("raw_text") is not None:
        texts += f'<details class="raw"><summary>raw output</summary><pre class="text">{esc(_cut(dec["raw_text"]))}</pre></details>'
    cls = f"card o-{step.outcome}"
    return (f'<article class="{cls}" id="step-{step.step}" data-step="{step.step}" data-index="{step.index}" '
            f'data-kind="{esc(step.kind)}" data-outcome="{esc(step.outcome)}" data-session="{esc(rec["session"])}">'
            f'{head}<div class="body">{_frame(step, images)}<div class="facts-col">{"".join(facts)}{texts}'
            f'{_review(step) if review else ""}</div></div></article>')


def session_data(sv: SessionView, page_size: int) -> dict[str, Any]:
    """What the page script needs about every step of the session (timeline, filters, paging)."""
    return {
        "title": sv.id, "page_size": page_size, "pages": pages_of(len(sv.steps), page_size),
        "steps": [s.step for s in sv.steps], "outcome": [s.outcome for s in sv.steps],
        "kind": [s.kind for s in sv.steps],
        "text": [str(s.decision.get("thought") or "")[:SEARCH_MAX] for s in sv.steps],
        "label": [(s.record.get("labels") or {}).get("verdict") or "" for s in sv.steps],
        "outcomes": ["error", "uncertain", "suppressed", "discarded", "dry-run", "finish", "ok", "wait", "human", "none"],
        "error_outcomes": ["error", "uncertain"],
    }


def pages_of(n: int, page_size: int) -> int:
    return max(1, -(-n // page_size))


def _opened(summary: str, open_: bool) -> str:
    return summary.replace("<details>", "<details open>", 1) if open_ else summary


def session_summary(sv: SessionView, video: Any = None) -> str:
    """The summary section (closed; the first page opens it)."""
    s = sv.summary()
    streaks = "; ".join(f"steps {x['first']}–{x['last']} ({x['steps']} in a row, waited {x['wait_s']:g} s)"
                        for x in s["error_streaks"]) or "none"
    declared = "; ".join(f"step {d['step']}: {d.get('status')} “{d.get('message') or ''}”" for d in s["declared"]) \
        or "nothing (no finish)"
    verified = {True: "verified: all acceptance criteria passed", False: "NOT verified: acceptance criteria failed",
                None: "not verified (no acceptance criteria checked)"}[s["verified"]]
    rows = [
        ("model", esc(s["model_id"] or "—") + (f' <span class="muted">(seen: {esc(", ".join(s["models_seen"]))})</span>'
                                              if len(s["models_seen"]) > 1 else "")),
        ("config digest", f"<code>{esc((s['config_digest'] or '—')[:16])}</code>"),
        ("harness revision", esc(s["harness_revision"] or "not recorded")),
        ("mode", esc(f"{s['mode'] or '—'}" + (" (dry run)" if s["dry_run"] else ""))),
        ("time", esc(f"{s['started'] or '?'} → {s['ended'] or '?'}") + (f" · ended: {esc(s['end_reason'])}"
                                                                          if s["end_reason"] else "")),
        ("steps", esc(f"{s['steps']} · labelled {s['labelled']}")),
        ("by kind", esc(", ".join(f"{k} {v}" for k, v in s["by_kind"].items()) or "—")),
        ("by outcome", " ".join(f'<span class="o-{esc(k)}"><span class="badge outcome">{esc(k)} {v}</span></span>'
                                for k, v in s["by_outcome"].items()) or "—"),
        ("error streaks", esc(streaks)),
        ("declared by the model", esc(declared)),
        ("verified by Conway", esc(verified)),
        ("cost", esc(render_record(sv.session_cost().record()))),  # the line `conway status` prints
    ]
    if video is not None:  # `--video`: the session's screen, beside its journal
        rows.append(("video", f'<a href="{esc(video.as_uri())}">{esc(video)}</a>'))
    if sv.recoveries:
        rows.append(("recoveries", esc("; ".join(f"step {r['step']}: {r['what']}: {r['detail']}" for r in sv.recoveries[:20]))))
    return ('<section class="summary"><details><summary>Session summary</summary>'
            f"{facts_table(rows)}</details></section>")


def toolbar(kinds: list[str], outcomes: list[str], search_label: str = "search thoughts") -> str:
    k = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in kinds)
    o = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in outcomes)
    return ('<canvas id="timeline" aria-label="timeline: one mark per step; click to jump"></canvas>'
            '<div class="toolbar">'
            f'<label>kind <select id="f-kind"><option value="">all</option>{k}</select></label>'
            f'<label>outcome <select id="f-outcome"><option value="">all</option>{o}</select></label>'
            f'<label>{esc(search_label)} <input id="f-text" type="search" placeholder="text"></label>'
            '<span class="count" id="f-count"></span>'
            '<span class="keys"><kbd>←</kbd>/<kbd>→</kbd> step · <kbd>e</kbd> next error</span></div>')


def session_page(sv: SessionView, page: int, page_size: int, images: ImageRef, *, token: str | None,
                 data: dict[str, Any] | None = None, summary: str | None = None,
                 index_href: str = "../../index.html") -> str:
    """One page of cards; `data` (session_data) and `summary` (session_summary) may be passed in, made once."""
    pages = pages_of(len(sv.steps), page_size)
    chunk = sv.steps[(page - 1) * page_size: page * page_size]
    data = data or session_data(sv, page_size)
    kinds = sorted(set(data["kind"]))
    present = set(data["outcome"])
    outcomes = [o for o in data["outcomes"] if o in present]
    cards = "\n".join(step_card(s, images, token is not None) for s in chunk) or \
        '<div class="empty">This session recorded no steps.</div>'
    body = (f'<header class="top"><h1><a class="crumb" href="{esc(index_href)}">sessions</a> '
            f'<span class="crumb">›</span> {esc(sv.id)}'
            + (' <span class="badge label">review mode: labels are saved</span>' if token else "") + "</h1>"
            f"{toolbar(kinds, outcomes)}</header>"
            f"{_opened(summary or session_summary(sv), page == 1)}{pager(page, pages)}<main id=\"steps\">{cards}</main>{pager(page, pages)}")
    return shell(f"{sv.id} — Conway", body, data_src="data.js", token=token,
                 body_attrs={"view": "session", "page": page, "pages": pages, "mode": "serve" if token else "static"})


def _tokens(cost: dict) -> str:
    cached = f" ({cost['cached_tokens']:,})" if cost["cached_tokens"] else ""
    return f"{cost['prompt_tokens']:,}{cached} / {cost['generated_tokens']:,}"


def index_page(sessions: list[SessionView], skipped: list[str], *, title: str = "Conway sessions",
               extra: str = "") -> str:
    rows = []
    for sv in reversed(sessions):  # newest first
        s = sv.summary()
        errors = s["by_outcome"].get("error", 0) + s["by_outcome"].get("uncertain", 0)
        declared = ", ".join(str(d.get("status")) for d in s["declared"]) or "—"
        verified = {True: "yes", False: "no", None: "—"}[s["verified"]]
        rows.append(f'<tr><td><a href="s/{esc(sv.folder)}/page-0001.html">{esc(sv.id)}</a></td>'
                    f"<td>{esc(s['started'])}</td><td>{s['steps']}</td><td>{errors}</td>"
                    f"<td>{esc(s['model_id'] or '—')}</td><td>{esc(s['end_reason'] or '—')}</td>"
                    f"<td>{esc(declared)}</td><td>{verified}</td><td>{s['labelled']}</td>"
                    f"<td>{_tokens(s['cost'])}</td><td>{s['cost']['model_s']:.1f}</td></tr>")
    table = ('<table class="list"><thead><tr><th>session</th><th>started</th><th>steps</th><th>errors</th>'
             "<th>model</th><th>ended</th><th>declared</th><th>verified</th><th>labelled</th>"
             '<th title="prompt (cached) / generated">tokens</th><th>model s</th></tr></thead>'
             f"<tbody>{''.join(rows)}</tbody></table>")
    note = (f'<p class="muted">{len(skipped)} unreadable journal line(s) skipped: {esc(", ".join(skipped[:5]))}</p>'
            if skipped else "")
    body = (f'<header class="top"><h1>{esc(title)}</h1></header><main>{extra}{note}'
            f"{table if sessions else '<div class=empty>No sessions.</div>'}</main>")
    return shell(title, body, body_attrs={"view": "index"})
