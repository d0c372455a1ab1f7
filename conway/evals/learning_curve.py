"""A learning curve as a Conway report (kind `learning-curve`): one case per round, so `conway view` and
`conway report` show it as they show any report.

`training/iterate.py` writes WORK/learning_curve.json beside its PNG after every round: per round (round 0: the
base) the policy measured, its greedy success on the held-out and train tasks with Wilson 95% intervals, the
suite's chance level and where the held-out interval lies against it (conway.evals.chance), the mean reward of
the rollouts it learned from and its KL to the base. The summary says the chance level and which rounds are
above it: what was learned is judged there, not by the distance from the base.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from conway.evals.report import FORMAT, now_iso

KIND = "learning-curve"
OUTCOMES = ("below chance", "at chance", "above chance", "chance unknown")


def round_outcome(c: dict[str, Any]) -> str:
    """A round's held-out verdict against chance (the viewer's filter)."""
    return str((c.get("held_out_success") or {}).get("verdict") or "chance unknown")


def round_policy(c: dict[str, Any]) -> str:
    return str(c.get("policy") or "")


def curve_report(points: list[dict[str, Any]], *, title: str, command: list[str] | None = None) -> dict[str, Any]:
    """The report of a curve's points (as training/iterate.py records them)."""
    cases = [{**p, "index": i, "instruction": f"round {p.get('round')}: {p.get('policy')}"}
             for i, p in enumerate(points)]
    held = [p.get("held_out_success") or {} for p in points]
    level = next((h.get("chance") for h in held if h.get("chance") is not None), None)
    argv = list(command or [])
    return {"format": FORMAT, "kind": KIND, "status": "written", "exit_code": 0,
            "command": {"argv": argv, "line": " ".join(argv)}, "model_id": None, "seed": None,
            "parameters": {"title": title}, "written_at": now_iso(),
            "summary": {"title": title, "rounds": len(points), "chance": level,
                        "above_chance": [p.get("round") for p, h in zip(points, held) if h.get("verdict") ==
                                         "above chance"],
                        "last": held[-1] if held else None},
            "cases": cases}


def write_curve_report(points: list[dict[str, Any]], path: Path, *, title: str,
                       command: list[str] | None = None) -> Path:
    """Write (replace) the curve's report atomically: a viewer reading it mid-run sees the old or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(curve_report(points, title=title, command=command), indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _pct(v: Any) -> str:
    return f"{v:.0%}" if isinstance(v, (int, float)) else "-"


def render_curve(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    """`conway report` of a learning curve: the chance level, then one line per round."""
    s = data.get("summary") or {}
    level = s.get("chance")
    lines = [f"{s.get('title')}: {s.get('rounds')} point(s); chance "
             + (f"{level:.1%} (a policy acting validly at random)" if level is not None else "unknown")
             + "; above chance: " + (", ".join(f"round {r}" for r in s.get("above_chance") or []) or "no round")]
    for c in cases[:max_rows]:
        h, t = c.get("held_out_success") or {}, c.get("train_success") or {}
        ci = h.get("ci95") or [None, None]
        lines.append(f"round {c.get('round')}: {c.get('policy')}: held-out {h.get('hits')}/{h.get('n')} "
                     f"({_pct(h.get('rate'))}, 95% CI {_pct(ci[0])}-{_pct(ci[1])}, {round_outcome(c)}); train "
                     f"{_pct(t.get('rate'))}; mean reward {c.get('mean_reward')}; KL {c.get('kl')}"
                     + (f"  [{c['note']}]" if c.get("note") else ""))
    return lines
