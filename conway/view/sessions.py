"""What the viewer shows, read from the journal: sessions of steps with outcome, flags and timings.

The step records are export's own (`steps_from_events`, every step kept:
dry runs and uncertain ones too), with the labels attached the way export
attaches them, so what the viewer shows is what an export would carry. The
journal's timestamps, recovery events and session events, which a
trajectory record leaves out, are gathered here beside them. A session's
cost is `conway.experience.costs`' own count (decisions and memory
summaries), the one `conway status` shows.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.experience.costs import ModelCost, SessionCost, costs_of
from conway.experience.labels import LabelIndex, labels_path, read_labels
from conway.experience.steps import attach_labels, screenshot_file, steps_from_events
from conway.store.events import Acceptance, MemoryCompacted, Recovery, SessionEnd, SessionStart
from conway.store.journal import read_journal

OUTCOMES = ("error", "uncertain", "suppressed", "discarded", "dry-run", "finish", "ok", "wait", "none")
"""Outcome of a step, worst first: the timeline colours a mark by it."""
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
POINT_KEYS = (("x", "y"), ("to_x", "to_y"))


def folder_name(session: str) -> str:
    """A file-system-safe folder name for a session id (ids come from the journal: never trusted)."""
    if _SAFE.match(session) and ".." not in session:
        return session
    return "s-" + hashlib.sha256(session.encode()).hexdigest()[:16]


@dataclass
class StepView:
    """One step as the viewer shows it."""

    index: int
    """Position in its session (0-based), the order of cards and timeline marks."""
    record: dict[str, Any]
    """The conway-traj/1 record export would write for this step (labels attached)."""
    outcome: str
    flags: list[str]
    timings: dict[str, float | None]
    """observe_s / decide_s / dispatch_s (None: not recorded) and total_s."""
    recoveries: list[str] = field(default_factory=list)
    step: int = field(init=False)
    decision: dict[str, Any] = field(init=False)
    actions: list[dict[str, Any]] = field(init=False)
    """The parsed actions of the decision (problems left out)."""
    kind: str = field(init=False)
    """The first action's type (what the filter calls kind), or `none`."""

    def __post_init__(self) -> None:
        self.step = int(self.record["step"])
        self.decision = self.record.get("decision") or {}
        self.actions = [a for a in self.decision.get("actions") or [] if isinstance(a, dict) and a.get("type")]
        if self.record.get("actor") == "human":  # a person's action (takeover, recording): drawn as the model's are
            self.actions = [a["action"] for a in self.record.get("actions") or [] if isinstance(a.get("action"), dict)]
        self.kind = str(self.actions[0]["type"]) if self.actions else "none"

    @property
    def size(self) -> tuple[int, int] | None:
        """Captured-screenshot size: the coordinate space of every action drawn on the image."""
        geo = self.record.get("geometry") or {}
        obs = self.record.get("observation") or {}
        size = geo.get("captured_size") or obs.get("captured_size")
        try:
            return (int(size[0]), int(size[1])) if size else None
        except (TypeError, ValueError, IndexError):
            return None


@dataclass
class SessionView:
    id: str
    steps: list[StepView]
    start: SessionStart | None = None
    end: SessionEnd | None = None
    acceptance: Acceptance | None = None
    recoveries: list[dict[str, Any]] = field(default_factory=list)
    first_ts: str | None = None
    last_ts: str | None = None
    costs: SessionCost | None = None
    """What the session cost, counted by `conway.experience.costs` from its events (as `conway status` does);
    None: nothing counted (no event of the session named it)."""

    @property
    def folder(self) -> str:
        return folder_name(self.id)

    def summary(self) -> dict[str, Any]:
        """Model, config digest, revision, counts, error streaks, declared vs verified."""
        start = self.start or SessionStart()
        models = sorted({str(s.record.get("model_id")) for s in self.steps if s.record.get("model_id")})
        streaks = error_streaks(self.steps)
        finishes = [{"step": s.step, **(s.record.get("finish") or {})} for s in self.steps if s.record.get("finish")]
        acc = self.acceptance
        return {
            "session": self.id,
            "model_id": start.model_id or (models[0] if models else None),
            "models_seen": models,
            "config_digest": start.config_digest,
            "harness_revision": start.revision,
            "mode": start.mode,
            "dry_run": start.dry_run,
            "started": self.first_ts, "ended": self.last_ts,
            "end_reason": self.end.reason if self.end else None,
            "steps": len(self.steps),
            "by_kind": dict(Counter(s.kind for s in self.steps).most_common()),
            "by_outcome": {o: n for o in OUTCOMES if (n := sum(1 for s in self.steps if s.outcome == o))},
            "labelled": sum(1 for s in self.steps if (s.record.get("labels") or {}).get("source")),
            "error_streaks": streaks,
            "declared": finishes,
            "verified": acc.verified if acc else None,
            "verification": (acc.to_payload() or None) if acc else None,
            "cost": self.cost().record(),
        }

    def cost(self) -> ModelCost:
        """Tokens and model time of the session's decisions and memory summaries (the journal's own numbers,
        counted as `conway status` counts them)."""
        return self.session_cost().total

    def session_cost(self) -> SessionCost:
        """The session's `SessionCost` (wall time and per model too): `record()` is what `conway status` reports."""
        return self.costs if self.costs is not None else SessionCost(self.id)


def error_streaks(steps: list[StepView]) -> list[dict[str, Any]]:
    """Runs of consecutive error steps with the waits they cost (recovery backoff, rate limits)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for s in steps:
        if s.outcome != "error":
            cur = None
            continue
        wait = 0.0
        for e in (s.record.get("errors") or []) + (s.record.get("actions") or []):
            for k in ("backoff_s", "retry_after_s"):
                v = e.get(k)
                if isinstance(v, (int, float)):
                    wait += float(v)
        if cur is None:
            cur = {"first": s.step, "last": s.step, "steps": 0, "wait_s": 0.0}
            out.append(cur)
        cur["last"] = s.step
        cur["steps"] += 1
        cur["wait_s"] = round(cur["wait_s"] + wait, 3)
    return [c for c in out if c["steps"] >= 2 or c["wait_s"] > 0]


def outcome_of(rec: dict[str, Any]) -> str:
    acts = rec.get("actions") or []
    kinds = [a.get("kind") for a in acts]
    if rec.get("uncertain"):
        return "uncertain"
    if rec.get("errors") or "error" in kinds:
        return "error"
    if "suppressed" in kinds:
        return "suppressed"
    if rec.get("discarded"):
        return "discarded"
    if rec.get("dry_run"):
        return "dry-run"
    if rec.get("finish"):
        return "finish"
    if rec.get("actor") == "human":
        return "human"
    results = [a for a in acts if a.get("kind") == "result"]
    if results and all((a.get("action") or {}).get("type") == "wait" for a in results):
        return "wait"
    if results:
        return "ok"
    return "none"


def flags_of(rec: dict[str, Any], recoveries: list[str]) -> list[str]:
    out = []
    if rec.get("dry_run"):
        out.append("dry_run")
    if rec.get("uncertain"):
        out.append("uncertain")
    if any(a.get("kind") == "suppressed" for a in rec.get("actions") or []):
        out.append("suppressed")
    if rec.get("discarded"):
        out.append("discarded")
    if any(e.get("rate_limited") for e in rec.get("errors") or []):
        out.append("rate-limited")
    if any((e.get("backoff_s") or 0) > 0 for e in rec.get("errors") or []):
        out.append("backoff")
    if recoveries:
        out.append("recovery")
    if (rec.get("decision") or {}).get("truncated"):
        out.append("truncated")
    return out


def _timings(times: dict[str, float], rec: dict[str, Any]) -> dict[str, float | None]:
    obs = rec.get("observation") or {}
    dec = rec.get("decision") or {}
    capture = obs.get("capture_ms")
    observe = round(float(capture) / 1000, 4) if isinstance(capture, (int, float)) else None
    decide = dec.get("latency_s") if isinstance(dec.get("latency_s"), (int, float)) else None
    dispatch = None
    if "decision" in times and "acted" in times:
        dispatch = round(max(0.0, times["acted"] - times["decision"]), 4)
    total = round(times["last"] - times["first"], 4) if "first" in times else None
    return {"observe_s": observe, "decide_s": decide, "dispatch_s": dispatch, "total_s": total}


def load_sessions(journal_dir: Path, home_root: Path, labels: LabelIndex | None = None) -> tuple[list[SessionView], list[str]]:
    """Every session of the journal in order, and the journal lines that did not parse."""
    read = read_journal(journal_dir)
    if not read.events:
        raise UserError(f"nothing to view: the journal in {journal_dir} is empty (run the agent first)")
    records = steps_from_events(read.events, include_dry_runs=True, include_uncertain=True)
    attach_labels(records, labels if labels is not None else read_labels(labels_path(home_root)))
    costs = costs_of(read.events)  # the count `conway status` makes: decisions and memory summaries
    sessions: dict[str, SessionView] = {}
    times: dict[tuple[str, int], dict[str, float]] = {}
    recov: dict[tuple[str, int], list[str]] = {}
    for ev in read.events:
        sid = str(ev.get("session", "?"))
        sv = sessions.get(sid)
        if sv is None:
            sv = sessions[sid] = SessionView(id=sid, steps=[], first_ts=ev.get("ts"), costs=costs.get(sid))
        sv.last_ts = ev.get("ts")
        _note_event(ev, sv, times, recov)
    for rec in records:
        key = (str(rec["session"]), int(rec["step"]))
        sv = sessions.setdefault(key[0], SessionView(id=key[0], steps=[]))
        r = recov.get(key, [])
        sv.steps.append(StepView(index=len(sv.steps), record=rec, outcome=outcome_of(rec), flags=flags_of(rec, r),
                                 timings=_timings(times.get(key, {}), rec), recoveries=r))
    return list(sessions.values()), read.skipped


def _note_event(ev: dict[str, Any], sv: SessionView, times: dict[tuple[str, int], dict[str, float]],
                recov: dict[tuple[str, int], list[str]]) -> None:
    """What one event adds to its session: its start and end, a recovery or memory note, or a step's times."""
    kind, p = ev.get("kind"), ev.get("payload") or {}
    if kind == "session":
        sv.start = sv.start or SessionStart.of(ev)
        sv.end = SessionEnd.of(ev) or sv.end
        sv.acceptance = Acceptance.of(ev) or sv.acceptance
        return
    try:
        key = (sv.id, int(ev.get("step", 0)))
    except (TypeError, ValueError):
        return
    if kind == "recovery":
        r = Recovery.from_payload(p)
        recov.setdefault(key, []).append(f"{r.what or '?'}: {r.detail or ''}")
        sv.recoveries.append({"step": key[1], "what": r.what, "detail": r.detail})
        return
    if kind == "memory":  # between cycles: shown with the step before, never timed as part of it
        m = MemoryCompacted.of(ev)
        if m is not None:
            detail = f"{m.outcome}" + (f" ({m.reason})" if m.reason else "") + \
                (f", {m.input_chars} → {m.memory_chars} characters" if m.memory_chars is not None else "")
            recov.setdefault(key, []).append(f"memory: {detail}")
            sv.recoveries.append({"step": key[1], "what": "memory", "detail": detail})
        return
    t = ev.get("t")
    if not isinstance(t, (int, float)):
        return
    tk = times.setdefault(key, {})
    tk.setdefault("first", float(t))
    tk["last"] = float(t)
    if kind == "decision":
        tk["decision"] = float(t)
    elif kind in ("result", "error", "uncertain", "suppressed", "finish"):
        tk["acted"] = float(t)


def pick_sessions(sessions: list[SessionView], session: str | None, last: bool) -> list[SessionView]:
    """The sessions a command asked for: one by id, the last one, or all."""
    if session and last:
        raise UserError("give either --session ID or --last, not both")
    if session:
        found = [s for s in sessions if s.id == session]
        if not found:
            known = ", ".join(s.id for s in sessions[-5:])
            raise UserError(f"no session {session!r} in the journal (latest: {known})")
        return found
    if last:
        with_steps = [s for s in sessions if s.steps]
        return [(with_steps or sessions)[-1]]
    return sessions


def screenshot_state(step: StepView, home_root: Path) -> tuple[Path | None, str]:
    """(file, state): `ok`, `missing` (rotated away or deleted), `none` (never archived) or `outside`.

    Only files inside the home are shown or served: a journal line naming
    another file (hand-edited, or copied from elsewhere) is not followed.
    """
    path = screenshot_file(step.record, home_root)
    if path is None:
        return None, "none"
    try:
        path.resolve().relative_to(home_root.resolve())
    except ValueError:
        return path, "outside"
    return (path, "ok") if path.is_file() else (path, "missing")
