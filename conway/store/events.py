"""Typed journal payloads: the events that code reads by key, as small records at the journal's edge.

A writer builds the record and journals `to_payload()`; a reader turns an event into its record with
`of(event)` (None when the event is another kind) and reads attributes instead of keys. The on-disk
format stays `conway-event/1`: a record's fields are in the order its writer always wrote them, keys a
record does not name (adapter facts, older or newer fields) travel in `extra`, and a read payload keeps
its key order, so `from_payload(p).to_payload() == p` to the byte. Readers never fail on an odd journal:
a missing key reads as None.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self


@dataclass
class Payload:
    """Base of the typed payloads: `KIND` is the event kind; a session event also has its `EVENT`."""

    KIND: ClassVar[str]
    EVENT: ClassVar[str | None] = None
    """For `session` events: the payload's `event` key (start, goals, end, acceptance …)."""

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    """Keys this record does not name (adapter facts, older or newer fields)."""
    order: tuple[str, ...] = field(default=(), kw_only=True, repr=False, compare=False)
    """The read payload's keys in their order (empty for a record a writer built): `to_payload` keeps it."""

    @classmethod
    def _names(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name not in ("extra", "order")]

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Self:
        names = cls._names()
        skip = {"event"} if cls.EVENT else set()
        return cls(**{n: payload.get(n) for n in names},  # type: ignore[arg-type]
                   extra={k: v for k, v in payload.items() if k not in names and k not in skip},
                   order=tuple(payload))

    def to_payload(self) -> dict[str, Any]:
        """The payload: a writer's record in field order (`event` first, `extra` last); a read one as it was
        read (a named key it lacked is left out unless it was set since)."""
        values: dict[str, Any] = {"event": self.EVENT} if self.EVENT else {}
        values.update({n: getattr(self, n) for n in self._names()})
        values.update(self.extra)
        if not self.order:
            return values
        keys = [k for k in self.order if k in values]
        keys += [k for k in values if k not in self.order and (k in self.extra or values[k] is not None)]
        return {k: values[k] for k in keys}

    @classmethod
    def of(cls, event: dict[str, Any] | None) -> Self | None:
        """The event's record when it is of this kind (and session event), else None."""
        if not isinstance(event, dict) or event.get("kind") != cls.KIND:
            return None
        payload = event.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        if cls.EVENT is not None and payload.get("event") != cls.EVENT:
            return None
        return cls.from_payload(payload)


# --- the step's events -----------------------------------------------------------------


@dataclass
class Intent(Payload):
    """Written (fsynced) before a side-effecting action is dispatched: the authority recovery reads."""

    KIND = "intent"
    action: dict[str, Any] | None = None
    summary: str | None = None


@dataclass
class Decision(Payload):
    """The model's answer (or a discarded one); adapter facts (usage, sent size, prompt hash …) are in `extra`."""

    KIND = "decision"
    raw_text: str | None = None
    actions: list[Any] | None = None
    model_id: str | None = None
    harness_revision: str | None = None
    dry_run: bool | None = None
    discarded: bool | None = None
    """A stop arrived during inference: recorded, never dispatched."""


MODEL_OWN_REPORT = "the model's own report; not a verified success"
FINISH_NOTES = {"model": ("recorded (the model's own report)", MODEL_OWN_REPORT),
                "person": ("recorded (the person handed back)", "a person handed back; not a verified success")}
"""By who finished (`Policy.finished_by`): what the step's outcome says, and the finish event's note."""


@dataclass
class Finish(Payload):
    """The model's own report (never a verified success)."""

    KIND = "finish"
    type: str | None = "finish"
    status: str | None = None
    message: str | None = None
    declared_by: str | None = None
    note: str | None = None


@dataclass
class Recovery(Payload):
    KIND = "recovery"
    what: str | None = None
    """`temp files`, `state`, `journal`, `pending` (`memory` in journals before memory had its own events)."""
    detail: str | None = None


# --- memory's compaction -------------------------------------------------------------


@dataclass
class MemoryRequest(Payload):
    """A summary of memory.md was asked for (journaled before the request goes out)."""

    KIND, EVENT = "memory", "request"
    summariser: str | None = None
    """`the acting model` or `memory.summariser`."""
    model_id: str | None = None
    prompt_sha256: str | None = None
    prompt_chars: int | None = None
    input_chars: int | None = None
    """The memory.md text to summarise."""
    target_chars: int | None = None
    max_tokens: int | None = None
    timeout_s: float | None = None


@dataclass
class MemoryCompacted(Payload):
    """What replaced memory.md past memory.max_chars: a summary, the marked truncation (with the reason), or
    nothing (`aborted` by a stop, `skipped` when memory.md was edited meanwhile)."""

    KIND, EVENT = "memory", "compacted"
    outcome: str | None = None
    """`summarised`, `truncated`, `aborted` or `skipped`."""
    reason: str | None = None
    """Why it was not summarised (None when it was)."""
    model_id: str | None = None
    prompt_sha256: str | None = None
    input_chars: int | None = None
    output_chars: int | None = None
    """The model's answer (None when there was none)."""
    memory_chars: int | None = None
    """The new memory.md (None when it was left as it was)."""
    dropped_chars: int | None = None
    duration_s: float | None = None
    """Time the summary request took (None when none was made)."""
    usage: dict[str, Any] | None = None
    memory: str | None = None
    """The new memory.md text."""


# --- the session's events ------------------------------------------------------------


@dataclass
class SessionStart(Payload):
    KIND, EVENT = "session", "start"
    model_id: str | None = None
    harness_revision: str | None = None
    config_digest: str | None = None
    mode: str | None = None
    dry_run: bool | None = None
    tools: list[str] | None = None
    deviations: list[str] | None = None
    """Each way the requests of this session differ from the family's official agent's, one line each (`policy.
    deviations` and explicit settings: `conway/policies/deviations.py`); [] none; None: not a trained family."""
    served_by: dict[str, Any] | None = None
    """What served the model, as its server or file says it (`conway/policies/backends/served_by.py`); None: no
    model (the mock)."""

    @property
    def revision(self) -> str | None:
        """The harness revision (journals before `harness_revision` called it `revision`)."""
        return self.harness_revision or self.extra.get("revision")


@dataclass
class SessionGoals(Payload):
    """The goals / task text the model saw from here on (journaled when it changed)."""

    KIND, EVENT = "session", "goals"
    text: str | None = None
    chars: int | None = None


@dataclass
class SessionHostFacts(Payload):
    """The host-facts part's text the model saw from here on (journaled when it changed; none while it is off)."""

    KIND, EVENT = "session", "host_facts"
    text: str | None = None


@dataclass
class SessionEnd(Payload):
    KIND, EVENT = "session", "end"
    reason: str | None = None
    steps: int | None = None
    valid_decisions: int | None = None
    model_errors: dict[str, int] | None = None


@dataclass
class Acceptance(Payload):
    """A task session's acceptance: what the model declared and what Conway verified."""

    KIND, EVENT = "session", "acceptance"
    declared: dict[str, Any] | None = None
    verified: bool | None = None
    """True / False when Conway checked criteria; None when nothing was verified."""
    criteria: list[Any] | None = None
    verified_passed: int | None = None
    verified_failed: int | None = None
    executed: bool | None = None
    report: str | None = None

    @property
    def declared_status(self) -> str | None:
        return (self.declared or {}).get("status") if isinstance(self.declared, dict) else None
