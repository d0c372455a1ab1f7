"""`conway report FILE`: the header every report shares, then its kind's text (`conway.evals.suites`)."""

from __future__ import annotations

import json
import os
from typing import Any

from conway.errors import UserError
from conway.evals.report import load_report
from conway.evals.suites import KINDS, suite_kind
from conway.evals.text import _short


def render_report(path: str | os.PathLike[str], max_rows: int = 200) -> str:
    data, cases = load_report(path)
    kind = suite_kind(data.get("kind"))
    if kind is None:  # nothing to read it by: a header of "?" and exit 0 would pass for a report read
        raise UserError(f"{path} is a report of kind {data.get('kind')!r}, which this Conway does not know (it "
                        f"reads {', '.join(KINDS)}): it may come from another version of Conway")
    if kind.text is not None:
        body = kind.text(data, cases, max_rows)
    else:  # a kind without a text of its own: its summary and cases as they are
        body = [f"  summary: {json.dumps(data.get('summary') or {}, default=str)}"] + \
               [f"  case: {_short(json.dumps(c), 120)}" for c in cases[:max_rows]]
    return "\n".join(header_lines(data) + [""] + body)


def header_lines(data: dict[str, Any]) -> list[str]:
    """Status, command, revision, model, config, machine, time and parameters of any report."""
    conway = data.get("conway") or {}
    rev = conway.get("git_revision")
    rev_s = (rev[:12] + (" (dirty)" if conway.get("git_dirty") else "")) if rev else "not recorded"
    machine = data.get("machine") or {}
    lines = [
        f"{data.get('kind', '?')} report ({data.get('format')})",
        f"  status:   {data.get('status', '?')} (exit {data.get('exit_code', '?')})",
        f"  command:  {(data.get('command') or {}).get('line', '?')}",
        f"  conway:   {conway.get('version', '?')}, revision {rev_s}",
        f"  model:    {data.get('model_id') or '-'}" + (f" at {data['endpoint']}" if data.get("endpoint") else ""),
        f"  config:   digest {str(data.get('config_digest') or '-')[:16]}"
        + (f", seed {data['seed']}" if data.get("seed") is not None else ""),
        f"  machine:  {machine.get('platform', '?')}, {machine.get('cpus', '?')} CPUs, "
        f"{machine.get('memory_available_gb', '?')}/{machine.get('memory_total_gb', '?')} GiB free",
        f"  time:     {data.get('started_at', '?')} → {data.get('ended_at', '?')} ({data.get('duration_s', '?')} s)",
    ]
    params = data.get("parameters") or {}
    if params:
        lines.append("  params:   " + ", ".join(f"{k}={v}" for k, v in params.items()))
    deviations = data.get("deviations")
    if isinstance(deviations, list):  # from the preset's official request: numbers compare when these are equal
        lines.append("  deviations from the official request: " + ("none" if not deviations else ""))
        lines += [f"    - {d}" for d in deviations]
    return lines
