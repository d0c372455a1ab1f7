"""What a run of the loop is given (`LoopParts`) and what it reports when it ends (`RunOutcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from conway.config import ConwayConfig
from conway.loop.control import Clock
from conway.loop.ending import RunEnd
from conway.protocols import Actuator, Observer, Policy, TextModel, describe_causes
from conway.store.events import SessionEnd
from conway.store.home import Home
from conway.store.journal import Journal


@dataclass
class LoopParts:
    home: Home
    config: ConwayConfig
    policy: Policy
    observer: Observer
    toolbox: Actuator
    journal: Journal
    session: str
    clock: Clock = field(default_factory=Clock)
    single_session: bool = False
    """`start`: a finish ends the session. `run`: finish is recorded and the loop carries on."""
    dry_run: bool = False
    """Plan without dispatching (observe mode, `start` without --execute)."""
    say: Callable[[str], None] = print
    """The loop's one print path."""
    task: str | None = None
    """A single-session task shown to the model as the goal."""
    summariser: TextModel | None = None
    """What writes memory.md's summary past memory.max_chars (the acting model's backend, or memory.summariser);
    None: the marked truncation (docs/architecture.md#memory)."""
    human_recorder: Callable[[str | None], Any] | None = None
    """Records a person's input while the session is taken over (display → recorder with drain/stop); None: the
    X RECORD recorder of `conway.observe.human` on the observer's display."""

    @property
    def abortable(self) -> bool:
        """The policy returns soon once its decision is aborted (`Policy.abortable`): decided on the loop's thread."""
        return bool(getattr(self.policy, "abortable", False))


@dataclass
class RunOutcome:
    reason: str
    steps: int
    finish: dict[str, Any] | None = None
    """The model's last finish (its own word, never a verified success)."""
    valid_decisions: int = 0
    """Decisions that held at least one valid action."""
    model_errors: dict[str, int] = field(default_factory=dict)
    """Steps without a valid decision, counted by cause (`HTTP 500`, `timeout`, `cut off` …)."""
    end: RunEnd | None = None
    """How the run ended (None while it runs); `reason` says it in words."""
    journal: str | None = None
    """The journal file holding the last events (named in the CLI's one-line error)."""

    @property
    def failed(self) -> bool:
        """The run ended by a crash or a full disk, not by a budget, a stop or a finish (the CLI exits 1)."""
        return self.end is not None and self.end.failed

    @property
    def uncertain(self) -> bool:
        """The run ended on an action whose outcome is not known (uncertain, fail-safe: the CLI exits 1)."""
        return self.end is not None and self.end.uncertain

    @property
    def setup_failed(self) -> bool:
        """The run ended itself because the model server kept failing the same way, which retrying cannot cure
        (the CLI exits 1: the server's setup is wrong, whether or not a valid decision came first)."""
        return self.end is not None and self.end.setup_failed

    def model_error(self, cause: str) -> None:
        self.model_errors[cause] = self.model_errors.get(cause, 0) + 1

    def ended(self, reason: str, end: RunEnd, steps: int) -> "RunOutcome":
        self.reason, self.end, self.steps = reason, end, steps
        return self

    def end_record(self) -> dict[str, Any]:
        """The session's end event in the journal."""
        return SessionEnd(self.reason, self.steps, self.valid_decisions, self.model_errors).to_payload()

    def summary(self) -> str:
        """The run's last printed line."""
        why = f"; {self.no_valid_decision}" if self.no_valid_decision else ""
        return f"stopped after {self.steps} step(s): {self.reason}{why}"

    @property
    def no_valid_decision(self) -> str | None:
        """"no valid decision in N steps: …" when the model never produced a valid action, else None."""
        if self.valid_decisions or not self.model_errors:
            return None
        return f"no valid decision in {self.steps} step(s): {describe_causes(self.model_errors)}"
