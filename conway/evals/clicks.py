"""One click case through a policy, scored without executing anything.

Shared by the click evals (`vision-check`, `grounding-check`): `ask` sends a
`DecisionContext` through the policy's own `decide()` (resize rule, server
image limit, coordinate convention, structured output all take part) and
`first_click` reads the proposed point, in screenshot pixels, from the
decision's first action. The runner (`conway.evals.runner`) hands the
cases out.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from conway.actions import ActionProblem, _Action
from conway.config import ConwayConfig
from conway.protocols import Decision, DecisionContext, Policy, PolicyError, decision_problem_cause
from conway.readiness.checks.model_runtime import effective_backend

RAW_OUTPUT_MAX = 4000
CLICK_TYPES = ("click", "double_click", "triple_click", "right_click")


class CaseError(str):
    """An error text that also carries its model-error cause (`HTTP 500`, `cut off` …; see ERROR_CAUSES)."""

    cause: str

    def __new__(cls, text: str, cause: str) -> "CaseError":
        obj = str.__new__(cls, text)
        obj.cause = cause
        return obj

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:  # a record crosses to the pool's driver with its cause
        return CaseError, (str(self), self.cause)


def first_click(decision: Decision) -> tuple[tuple[float, float] | None, dict[str, Any] | None, str | None]:
    """(point in screenshot pixels, the action as a dict, error) of a decision's first action."""
    if not decision.actions:
        return None, None, CaseError("the model proposed no action", decision_problem_cause(decision))
    first = decision.actions[0]
    if isinstance(first, ActionProblem):
        cause = decision_problem_cause(decision)
        return None, None, CaseError(first.message if cause == "cut off" else f"unusable output: {first.message}",
                                     cause)
    assert isinstance(first, _Action)
    action = first.model_dump()
    if first.type not in CLICK_TYPES:  # type: ignore[attr-defined]
        return None, action, f"the model proposed {first.summary()}, not a click"
    return (float(first.x), float(first.y)), action, None  # type: ignore[attr-defined]


def ask(policy: Policy, ctx: DecisionContext, lock: threading.Lock | None = None
        ) -> tuple[Decision | None, str | None, float]:
    """(decision, error, seconds) of one request; a failed request is an error, never an exception."""
    started = time.perf_counter()
    decision: Decision | None = None
    error = None
    try:
        if lock is not None:
            with lock:
                decision = policy.decide(ctx)
        else:
            decision = policy.decide(ctx)
    except PolicyError as exc:
        error = CaseError(f"model request failed: {exc}", exc.cause)
    except Exception as exc:
        error = CaseError(f"{type(exc).__name__}: {exc}", "model error")
    return decision, error, time.perf_counter() - started


def decision_fields(decision: Decision | None, policy: Policy) -> dict[str, Any]:
    """What a case record keeps of the model's answer (raw output capped)."""
    if decision is None:
        return {"raw_output": None, "model_id": policy.model_id}
    raw = decision.raw_text or ""
    return {"raw_output": raw[:RAW_OUTPUT_MAX], "raw_output_truncated": len(raw) > RAW_OUTPUT_MAX,
            "model_id": decision.model_id, "model_latency_s": round(decision.latency_s, 6),
            "usage": decision.usage, "decision_meta": decision.meta}


def policy_is_serial(config: ConwayConfig) -> bool:
    """In-process and mock policies answer one request at a time."""
    return effective_backend(config) in ("inprocess", "mock")


def serial_lock(config: ConwayConfig, parallel: int) -> threading.Lock | None:
    return threading.Lock() if policy_is_serial(config) and parallel > 1 else None


def parallel_notes(config: ConwayConfig, parallel: int) -> list[str]:
    """What the user should know about --parallel K with this backend."""
    notes = []
    if parallel > 1 and effective_backend(config) == "server" and config.runtime.parallel < parallel:
        notes.append(f"note: the server Conway starts has {config.runtime.parallel} slot(s) (runtime.parallel); "
                     f"--parallel {parallel} requests will queue there: add runtime.parallel={parallel}")
    if parallel > 1 and policy_is_serial(config):
        notes.append(f"note: the {effective_backend(config)} policy answers one request at a time; "
                     f"--parallel {parallel} only overlaps image preparation")
    return notes
