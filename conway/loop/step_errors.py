"""A step that ends before any dispatch (`PreDispatchError`): recorded, shown to the model as the latest result,
and backed off after repeated ones (5, 10, 20 … s); a rate limit waits as `ratelimit` bounds it instead; the
same incurable failure again ends the run (`PermanentFailures`)."""

from __future__ import annotations

from typing import Any, Callable

from conway.loop.control import Control
from conway.loop.ending import PermanentFailures, PreDispatchError
from conway.loop.parts import RunOutcome
from conway.loop.ratelimit import rate_limit_event, rate_limit_wait
from conway.prompt.decision import ContextBuilder
from conway.protocols import RateLimited

__all__ = ["StepErrors"]


class StepErrors:
    """The consecutive pre-dispatch errors of a run and what each one leaves for the next steps."""

    def __init__(self, control: Control, outcome: RunOutcome, contexts: ContextBuilder, max_permanent: int,
                 backoff_cap_s: float, record: Callable[..., None], say: Callable[[str], None]):
        self.control, self.outcome, self.contexts = control, outcome, contexts
        self.permanent = PermanentFailures(max_permanent)  # ends a run no retry can help
        self.backoff_cap_s, self.record, self.say = backoff_cap_s, record, say
        self.count = 0

    def handle(self, exc: PreDispatchError, step: int) -> None:
        """Record it, show it to the model, and back off after repeated ones."""
        self.count += 1
        self.outcome.model_error(exc.cause)
        delay = self.control.recovery_delay(self.count)
        if isinstance(exc.error, RateLimited):
            return self._rate_limited(exc.error, delay, exc.context)
        spent = self.control.budget_spent_by(delay) if delay else None
        self.record("error", {"stage": "pre-dispatch", "error": str(exc), "cause": exc.cause,
                              "consecutive": self.count, "backoff_s": 0.0 if spent else delay,
                              **({"context": exc.context} if exc.context else {})})
        self.contexts.note_error(step, str(exc))
        self.say(f"step {step}: {exc}" + (f" (retrying in {delay:g} s)" if delay and not spent else ""))
        self.permanent.seen(exc.error, self.count)  # the same incurable failure, again: the run ends
        if delay:
            self.control.wait(delay)

    def _rate_limited(self, exc: RateLimited, backoff: float, context: dict[str, Any] | None) -> None:
        """Counts toward recovery backoff; the wait is bounded (conway/loop/ratelimit.py)."""
        delay, why = rate_limit_wait(exc.retry_after, backoff, self.backoff_cap_s, exc.source)
        self.record("error", rate_limit_event(exc, self.count, delay, why, context))
        self.say(f"rate limited by the model server: waiting {delay:g} s ({why})")
        self.control.wait(delay)
