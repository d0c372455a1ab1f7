"""How a run ends: `RunEnd` names it (what callers decide on), `StopRun` carries it with the human reason;
and how a cycle ends early, with nothing to dispatch (`PreDispatchError`).

The reason text ("max-steps budget (3) reached", "crashed: KeyError: …") is what is printed and recorded
in state.json and the journal; code that must know how the run ended reads `RunOutcome.end` instead.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from conway.protocols import PolicyError


class RunEnd(Enum):
    """How a run ended, set where the loop ends it."""

    STOP_REQUESTED = "stop requested"
    """`conway stop` (control.json)."""
    INTERRUPTED = "interrupted"
    """SIGINT (Ctrl+C), once or twice."""
    TERMINATED = "terminated"
    """SIGTERM."""
    MAX_STEPS = "max-steps"
    MAX_SECONDS = "max-seconds"
    FINISHED = "finished"
    """The model's finish ended a single session (`start`)."""
    UNCERTAIN = "uncertain"
    """A side-effecting action failed after it may have done partial work (never replayed)."""
    FAIL_SAFE = "fail-safe"
    """The pointer was slammed into a screen corner."""
    PERMANENT_FAILURE = "permanent failure"
    """The same model failure that retrying cannot cure (context exceeded, HTTP 404, 501 …) came
    `agent.max_permanent_failures` times in a row."""
    CRASHED = "crashed"
    DISK_FULL = "disk full"

    @property
    def failed(self) -> bool:
        """Ended by a crash or a full disk, not by a budget, a stop or a finish (the CLI exits 1 with an error)."""
        return self in (RunEnd.CRASHED, RunEnd.DISK_FULL)

    @property
    def uncertain(self) -> bool:
        """Ended on an action whose outcome is not known (the CLI exits 1)."""
        return self in (RunEnd.UNCERTAIN, RunEnd.FAIL_SAFE)

    @property
    def setup_failed(self) -> bool:
        """Ended because the model server kept failing in a way retrying cannot cure: its setup is wrong (the CLI
        exits 1 with the reason and its advice, or 3 when no decision was ever valid)."""
        return self is RunEnd.PERMANENT_FAILURE


class StopRun(Exception):
    """Ends the run; carries the reason recorded in state and journal, and how it ended."""

    def __init__(self, reason: str, end: RunEnd):
        super().__init__(reason)
        self.reason = reason
        self.end = end


class PreDispatchError(Exception):
    """Nothing to dispatch this cycle (a failed model request, an invalid action); handled once, in `Loop.run`.

    `cause`: what `RunOutcome.model_errors` counts; `context`: the prompt's budget record; `error`: the
    policy's exception (a rate limit gets a bounded wait instead of a note)."""

    def __init__(self, message: str, cause: str, context: dict[str, Any] | None = None,
                 error: PolicyError | None = None):
        super().__init__(message)
        self.cause, self.context, self.error = cause, context, error


class PermanentFailures:
    """Identical pre-dispatch failures that a retry cannot cure, counted in a row; `limit` of them end the run."""

    def __init__(self, limit: int):
        self.limit = limit
        self.cause: str | None = None
        self.count = 0
        self.last = 0  # the consecutive-error count at the last failure seen

    def seen(self, error: PolicyError | None, consecutive: int) -> None:
        """After a pre-dispatch error, the `consecutive`-th in a row; raises StopRun at the limit."""
        cause = error.cause if error is not None and error.permanent else None
        if cause is None or cause != self.cause or consecutive != self.last + 1:
            self.count = 0  # a different failure, or something else came between
        self.cause, self.last = cause, consecutive
        if error is None or cause is None:
            return
        self.count += 1
        if self.count >= self.limit:
            raise StopRun(f"the model request failed {self.count} times in a row ({cause}), which retrying cannot "
                          f"cure: {' '.join(str(error).split())[:200]}; {error.advice or 'check the model server'}",
                          RunEnd.PERMANENT_FAILURE)
