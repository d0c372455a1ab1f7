"""The table of a sweep report (`conway sweep`, `conway report`): one line per cell, the best marked."""

from __future__ import annotations

from typing import Any

EXTRA = (("pass1", "pass@1"), ("passk", "pass@k"), ("best_of_n", "best-of-N"))
"""Columns a cell's report may add (a rollout set's, a judge's: `conway.evals.best_of_n`), shown when any has them."""


def table_lines(rows: list[dict[str, Any]], summary: dict[str, Any]) -> list[str]:
    width = max([len("cell"), *(len(str(r["cell"])) for r in rows)])
    extra = [(k, name) for k, name in EXTRA if any(isinstance(r.get(k), (int, float)) for r in rows)]
    out = [f"{'cell':<{width}} {'rate':>7} {'95% CI':>15} {'n':>5}" + "".join(f" {name:>9}" for _, name in extra)
           + f"  {'report':<12} rank"]
    for r in rows:
        rate = f"{r['rate']:.1%}" if isinstance(r.get("rate"), (int, float)) else "—"
        ci = f"{r['ci95'][0]:.0%}–{r['ci95'][1]:.0%}" if r.get("ci95") else "—"
        rank = "best" if r["cell"] == summary.get("best") else ("below best" if r.get("below_best") else "—")
        more = "".join(f" {format(r[k], '.1%') if isinstance(r.get(k), (int, float)) else '—':>9}" for k, _ in extra)
        out.append(f"{str(r['cell']):<{width}} {rate:>7} {ci:>15} {r.get('cases') or 0:>5}{more}  "
                   f"{str(r.get('status')):<12} {rank}")
    return out


def render_sweep(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    """`conway report` of a sweep: the table (every cell; a sweep's cells are few)."""
    return table_lines(cases, data.get("summary") or {})
