"""The table of a sweep report (`conway sweep`, `conway report`): one line per cell, the best marked."""

from __future__ import annotations

from typing import Any


def table_lines(rows: list[dict[str, Any]], summary: dict[str, Any]) -> list[str]:
    """One line per cell, its whole name (the column as wide as the longest: cut names told cells apart no more);
    the cell's own report status apart from how it ranks, so the best cell never reads "fail (best)"."""
    width = max([len("cell"), *(len(str(r["cell"])) for r in rows)])
    out = [f"{'cell':<{width}} {'rate':>7} {'95% CI':>15} {'n':>5}  {'report':<12} rank"]
    for r in rows:
        rate = f"{r['rate']:.1%}" if isinstance(r.get("rate"), (int, float)) else "—"
        ci = f"{r['ci95'][0]:.0%}–{r['ci95'][1]:.0%}" if r.get("ci95") else "—"
        rank = "best" if r["cell"] == summary.get("best") else ("below best" if r.get("below_best") else "—")
        out.append(f"{str(r['cell']):<{width}} {rate:>7} {ci:>15} {r.get('cases') or 0:>5}  "
                   f"{str(r.get('status')):<12} {rank}")
    return out


def render_sweep(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    """`conway report` of a sweep: the table (every cell; a sweep's cells are few)."""
    return table_lines(cases, data.get("summary") or {})
