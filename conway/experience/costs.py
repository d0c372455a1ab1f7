"""What a run cost, summed from the journal's own decisions: tokens, model time, wall time, per model.

The journal is the only source: every `decision` event carries the model's
`usage` (prompt, cached prompt and generated tokens, as the backend reported
them) and `latency_s` (the model's time for that decision; a planner's decision,
`policy.planner`, carries them per model call in `calls`, each counted on the
model that answered), and every
`memory` `compacted` event that asked a model for memory's summary carries
that request's `usage` and `duration_s` (counted apart as `summaries`, in
the same token totals: the model spent them). Nothing else counts, so a
total can always be recomputed and never drifts from the record. Wall time
is a session's first to last event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from conway.store.journal import journal_files, journal_lines

__all__ = ["ModelCost", "SessionCost", "costs_of", "session_cost", "render_record"]


@dataclass
class ModelCost:
    decisions: int = 0
    discarded: int = 0
    """Decisions a stop cut short: their tokens were still spent."""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    """Of the prompt tokens, those the backend served from its cache."""
    generated_tokens: int = 0
    model_s: float = 0.0
    summaries: int = 0
    """Memory summaries asked of this model (their tokens and time are in the totals above)."""

    def add_summary(self, compacted: dict[str, Any]) -> None:
        """Count one memory summary request (a `memory` `compacted` event's payload that made one)."""
        self.summaries += 1
        self._spend(compacted.get("usage"), compacted.get("duration_s"))

    def add(self, decision: dict[str, Any]) -> None:
        """Count one decision payload (a journal event's, or a step record's `decision`)."""
        self.decisions += 1
        self.discarded += bool(decision.get("discarded"))
        self._spend(decision.get("usage"), decision.get("latency_s"))

    def _spend(self, usage: Any, seconds: Any) -> None:
        """A request's tokens (its `usage`) and model time; malformed or negative values count as none."""
        usage = usage if isinstance(usage, dict) else {}
        self.prompt_tokens += _count(usage.get("prompt_tokens"))
        self.cached_tokens += _count(usage.get("cached_tokens"))
        self.generated_tokens += _count(usage.get("completion_tokens"))
        self.model_s += seconds if isinstance(seconds, (int, float)) and seconds > 0 else 0.0

    def plus(self, other: ModelCost) -> ModelCost:
        return ModelCost(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))

    def record(self) -> dict[str, Any]:
        return {**self.__dict__, "model_s": round(self.model_s, 3)}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass
class SessionCost:
    session: str
    by_model: dict[str, ModelCost] = field(default_factory=dict)
    first_t: float | None = None
    last_t: float | None = None

    @property
    def wall_s(self) -> float:
        return (self.last_t - self.first_t) if self.first_t is not None and self.last_t is not None else 0.0

    @property
    def total(self) -> ModelCost:
        out = ModelCost()
        for cost in self.by_model.values():
            out = out.plus(cost)
        return out

    def add_event(self, event: dict[str, Any]) -> None:
        t = event.get("t")
        if isinstance(t, (int, float)):
            self.first_t = t if self.first_t is None else min(self.first_t, t)
            self.last_t = t if self.last_t is None else max(self.last_t, t)
        payload = event.get("payload")
        if event.get("kind") == "decision" and isinstance(payload, dict):
            calls = payload.get("calls")
            if isinstance(calls, list) and calls:  # a planner and its executor: each call on its own model
                for call in calls:
                    if isinstance(call, dict):
                        model = str(call.get("model_id") or "unknown model")
                        self.by_model.setdefault(model, ModelCost()).add(call)
                return
            model = str(payload.get("model_id") or "unknown model")
            self.by_model.setdefault(model, ModelCost()).add(payload)
        elif (event.get("kind") == "memory" and isinstance(payload, dict) and payload.get("event") == "compacted"
              and payload.get("duration_s") is not None):  # a summary was asked for (not a plain truncation)
            model = str(payload.get("model_id") or "unknown model")
            self.by_model.setdefault(model, ModelCost()).add_summary(payload)

    def record(self) -> dict[str, Any]:
        return {"session": self.session, "wall_s": round(self.wall_s, 3), "total": self.total.record(),
                "by_model": {m: c.record() for m, c in sorted(self.by_model.items())}}


def costs_of(events: Iterable[dict[str, Any]]) -> dict[str, SessionCost]:
    """Every session's cost in these events, in the order the sessions first appear."""
    out: dict[str, SessionCost] = {}
    for event in events:
        session = event.get("session")
        if isinstance(session, str):
            out.setdefault(session, SessionCost(session)).add_event(event)
    return out


def session_cost(journal_dir: Path, session: str) -> SessionCost:
    """One session's cost, reading the journal newest file first and only as far back as the session goes
    (a capped journal may hold hundreds of MB; `conway status` must stay quick)."""
    cost = SessionCost(session)
    needle = json.dumps(session).encode()
    for path in reversed(journal_files(journal_dir)):
        started = False
        for raw in journal_lines(path):
            if needle not in raw:
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # a torn line: the rest of the file still counts
            if isinstance(event, dict) and event.get("session") == session:
                cost.add_event(event)
                started |= event.get("kind") == "session" and (event.get("payload") or {}).get("event") == "start"
        if started:
            break
    return cost


def render_record(rec: dict[str, Any]) -> str:
    """One line for a person from a `SessionCost.record()`: decisions, tokens, model time of wall time, models."""
    t = rec["total"]
    if not t["decisions"]:
        return f"no decisions yet ({rec['wall_s']:.1f} s wall)"
    cached = f", {t['cached_tokens']:,} of them cached" if t["cached_tokens"] else ""
    summaries = f" and {t['summaries']} memory summar{'y' if t['summaries'] == 1 else 'ies'}" \
        if t.get("summaries") else ""
    return (f"{t['decisions']} decision(s){summaries}, {t['prompt_tokens']:,} prompt tokens{cached}, "
            f"{t['generated_tokens']:,} generated; model {t['model_s']:.1f} s of {rec['wall_s']:.1f} s wall "
            f"({', '.join(rec['by_model'])})")
