"""Trajectory export: a pure function from journal events to one record per step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from .errors import UserError
from .journal import read_journal

FORMAT = "conway-traj/1"


def steps_from_events(events: Iterable[dict[str, Any]], include_dry_runs: bool = False,
                      include_uncertain: bool = True) -> list[dict[str, Any]]:
    """Group events by (session, step) into step records. Image bytes never appear."""
    steps: dict[tuple[str, int], dict[str, Any]] = {}
    order: list[tuple[str, int]] = []
    for ev in events:
        kind = ev.get("kind")
        if kind in ("session", "recovery", "control"):
            continue
        key = (ev.get("session", "?"), int(ev.get("step", 0)))
        rec = steps.get(key)
        if rec is None:
            rec = steps[key] = {"format": FORMAT, "session": key[0], "step": key[1], "t_start": ev.get("ts"),
                                "t_end": ev.get("ts"), "observation": None, "decision": None,
                                "actions": [], "errors": [], "uncertain": False, "dry_run": False,
                                "finish": None, "labels": {"success": "unknown"}}
            order.append(key)
        rec["t_end"] = ev.get("ts")
        p = ev.get("payload") or {}
        if kind == "observation":
            rec["observation"] = p
        elif kind == "decision":
            if p.get("discarded"):
                rec["discarded"] = True
            rec["decision"] = {k: p.get(k) for k in p if k not in ("dry_run",)}
            rec["model_id"] = p.get("model_id")
            rec["dry_run"] = rec["dry_run"] or bool(p.get("dry_run"))
        elif kind in ("result", "error", "suppressed"):
            if p.get("dry_run"):
                rec["dry_run"] = True
            entry = {"kind": kind, **p}
            (rec["errors"] if kind == "error" and "action" not in p else rec["actions"]).append(entry)
        elif kind == "uncertain":
            rec["uncertain"] = True
            rec["actions"].append({"kind": "uncertain", **p})
        elif kind == "finish":
            rec["finish"] = {"status": p.get("status"), "message": p.get("message"), "declared_by": "model"}
        elif kind == "intent":
            rec.setdefault("intents", []).append(p.get("action"))
    out = []
    for key in order:
        rec = steps[key]
        if rec["dry_run"] and not include_dry_runs:
            continue
        if rec["uncertain"] and not include_uncertain:
            continue
        if rec["observation"] is None and rec["decision"] is None and not rec["actions"]:
            continue
        out.append(rec)
    return out


def export_trajectory(journal_dir: Path, output: Path, include_dry_runs: bool = False) -> tuple[int, list[str]]:
    """Write JSONL; returns (records written, skipped torn lines). Refuses to overwrite."""
    if output.exists():
        raise UserError(f"{output} already exists; choose a new file (export never overwrites)")
    if not output.parent.exists():
        raise UserError(f"folder {output.parent} does not exist")
    read = read_journal(journal_dir)
    if not read.events:
        raise UserError(f"nothing to export: the journal in {journal_dir} is empty (run the agent first)")
    records = steps_from_events(read.events, include_dry_runs=include_dry_runs)
    tmp = output.with_name(output.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    tmp.replace(output)
    return len(records), read.skipped
