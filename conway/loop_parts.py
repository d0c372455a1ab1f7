"""What a run of the loop is given (`LoopParts`) and what it reports when it ends (`RunOutcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .config import ConwayConfig
from .home import Home
from .journal import Journal
from .loop_control import Clock
from .protocols import Observer, Policy
from .tools.registry import Toolbox


@dataclass
class LoopParts:
    home: Home
    config: ConwayConfig
    policy: Policy
    observer: Observer
    toolbox: Toolbox
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


@dataclass
class RunOutcome:
    reason: str
    steps: int
    finish: dict[str, Any] | None = None
    """The model's last finish (its own word, never a verified success)."""
    failed: bool = False
    """The run ended by a crash or a full disk, not by a budget, a stop or a finish (the CLI exits 1)."""
    journal: str | None = None
    """The journal file holding the last events (named in the CLI's one-line error)."""
