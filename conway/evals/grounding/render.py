"""`conway report` for grounding-check reports: the headline, the bucket tables, then the cases."""

from __future__ import annotations

from typing import Any

from conway.evals.text import _fmt_point, _short, table


def _box(b: Any) -> str:
    if not b:
        return "-"
    return f"[{b[0]:.0f},{b[1]:.0f}..{b[2]:.0f},{b[3]:.0f}]"


def _bucket_table(title: str, groups: dict[str, Any]) -> list[str]:
    rows = [[name, f"{g['hits']}/{g['n']}", f"{g['hit_rate']:.1%}",
             f"{g['hit_rate_ci95'][0]:.1%}–{g['hit_rate_ci95'][1]:.1%}", g.get("errors", 0)]
            for name, g in groups.items()]
    return [table([title, "hits", "rate", "95% Wilson", "errors"], rows), ""]


def render_grounding(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    summary = data.get("summary") or {}
    out = []
    n = summary.get("cases", len(cases))
    ci = summary.get("hit_rate_ci95") or [0.0, 1.0]
    if summary.get("hit_rate") is not None:
        out.append(f"hits {summary.get('hits')}/{n} = {summary['hit_rate']:.1%} (95% Wilson interval "
                   f"{ci[0]:.1%}–{ci[1]:.1%}); misses {summary.get('misses')}, errors {summary.get('errors')}")
    if summary.get("invalid_output"):
        out.append("errors by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["invalid_output"].items())))
    lat = summary.get("latency_s") or {}
    if lat.get("p50") is not None:
        out.append(f"latency p50 {lat['p50']:.3f} s, p95 {lat['p95']:.3f} s over {lat.get('n')} answered case(s)")
    dist = summary.get("distance_px") or {}
    if dist.get("median") is not None:
        out.append(f"distance to the box centre: median {dist['median']:.0f} px, p95 {dist['p95']:.0f} px")
    verdict = (summary.get("pattern") or {}).get("verdict")
    if verdict:
        out.append(f"pattern: {verdict}")
    params = data.get("parameters") or {}
    for f in params.get("files") or []:
        if f.get("bbox_format"):
            out.append(f"file {f['file']}: {f['used']}/{f['rows']} row(s) used; bbox {f['bbox_format']} ({f['why']})")
    if params.get("skipped_count"):
        out.append(f"skipped {params['skipped_count']} malformed row(s); see parameters.skipped in the report")
    out.append("")
    for key, title in (("by_size", "target size"), ("by_type", "type"), ("by_source", "source"),
                       ("by_split_type", "split / type")):
        if summary.get(key):
            out += _bucket_table(title, summary[key])
    rows = []
    for c in sorted(cases, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0)[:max_rows]:
        t = c.get("target") or {}
        rows.append([c.get("index"), "hit" if c.get("hit") else ("error" if c.get("error") else "miss"),
                     _short(c.get("instruction"), 40), c.get("type"), c.get("size_bucket"), _box(t.get("box")),
                     _fmt_point(c.get("predicted")),
                     f"{c['distance_px']:.0f}" if c.get("distance_px") is not None else "-",
                     _short(c.get("error") or c.get("raw_output"), 36)])
    out.append(table(["#", "result", "instruction", "type", "size", "box", "predicted", "dist px", "output / error"],
                     rows))
    if len(cases) > max_rows:
        out.append(f"... {len(cases) - max_rows} more case(s) in the report")
    return out
