"""OSWorld's runner protocol around one OSWorld-format task of `conway tasks run`.

OSWorld's `lib_run_single.run_single_example` resets the VM (the setup steps), sleeps 60 s, then loops
`agent.predict` → `env.step(action, sleep_after_execution)` (a pause after each action) for at most
`max_steps` predictions, sleeps 20 s, and evaluates. A task run here does the same, with the times from
`tasks.*` (`conway.config.TasksConfig`, OSWorld's by default): a result scored 0 here because the browser had
not yet written its bookmarks would be a 1 on OSWorld's VM.

Conway's own task files (Markdown) are not OSWorld's: they get no waits. Any value other than OSWorld's,
and the `measured` waits (`conway.sandbox.readiness`), are deviations, each one line in the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conway.config import TasksConfig

OSWORLD = TasksConfig()
"""OSWorld's own values (the settings' defaults)."""
SLICE_S = 0.25
"""A fixed wait is slept in slices, so that Ctrl+C ends it at once."""


def deviations(settings: TasksConfig) -> list[str]:
    """Each setting that differs from OSWorld's runner, as one line (none for OSWorld's own)."""
    out = []
    for name, what in (("wait_after_setup_s", "the wait after setup"), ("sleep_after_action_s",
                       "the pause after each action"), ("settle_before_eval_s", "the settle before evaluation"),
                       ("max_steps", "the step limit")):
        value, theirs = getattr(settings, name), getattr(OSWORLD, name)
        if value != theirs:
            out.append(f"tasks.{name}={value:g} ({what}; OSWorld's runner: {theirs:g})")
    if settings.waits == "measured":
        out.append(f"tasks.waits=measured (each wait ends once the desktop is quiet for "
                   f"{settings.readiness_quiet_s:g} s, at most the fixed time; OSWorld sleeps the fixed time)")
    return out


def _stopped() -> bool:
    from conway.cancel import current_cancel

    token = current_cancel()
    return token is not None and token.is_set()


@dataclass
class RunnerProtocol:
    """The waits of one task: `after_setup`, `paced` (the pause after each action), `before_evaluation`; what
    each took is kept in `timings` for the task's record."""

    settings: TasksConfig
    applies: bool = True
    """False for a task that is not OSWorld's (no waits at all)."""
    stopped: Callable[[], bool] = _stopped
    timings: dict[str, Any] = field(default_factory=dict)

    def _wait(self, name: str, cap_s: float, desk: Any, *, before_evaluation: bool = False) -> float:
        """`desk.home`: the home folder itself on this side (only its files' sizes and times are read, no link
        followed), never `host_path`'s copy of it."""
        if not self.applies or cap_s <= 0:
            return 0.0
        home = getattr(desk, "home", None)  # the local desktop's live home (a guest machine's is not here)
        if self.settings.waits == "measured" and isinstance(home, Path):
            from conway.sandbox.readiness import wait_until_ready

            waited = wait_until_ready(desk.display, home, cap_s, self.settings.readiness_quiet_s,
                                      before_evaluation=before_evaluation, stopped=self.stopped)
            self.timings[name] = waited.record()
            return waited.seconds
        start = time.monotonic()
        while (left := cap_s - (time.monotonic() - start)) > 0 and not self.stopped():
            time.sleep(min(SLICE_S, left))
        seconds = time.monotonic() - start
        self.timings[name] = {"seconds": round(seconds, 3), "ready": None, "why": "fixed"}
        return seconds

    def after_setup(self, desk: Any) -> float:
        """OSWorld's 60 s between the reset and the first observation."""
        return self._wait("after_setup", self.settings.wait_after_setup_s, desk)

    def before_evaluation(self, desk: Any) -> float:
        """OSWorld's 20 s between the last step and the evaluation."""
        return self._wait("before_evaluation", self.settings.settle_before_eval_s, desk, before_evaluation=True)

    def paced(self, toolbox: Any, desk: Any) -> Any:
        """`toolbox` with the pause after each action (itself when there is none)."""
        if not self.applies or self.settings.sleep_after_action_s <= 0:
            return toolbox
        return PacedActuator(toolbox, lambda: self._pause(desk))

    def _pause(self, desk: Any) -> None:
        seconds = self._wait("_last_pause", self.settings.sleep_after_action_s, desk)
        self.timings.pop("_last_pause", None)
        pauses = self.timings.setdefault("after_actions", {"count": 0, "seconds": 0.0})
        pauses["count"] += 1
        pauses["seconds"] = round(pauses["seconds"] + seconds, 3)


class PacedActuator:
    """An `Actuator` that waits after each dispatched action (OSWorld's `env.step(action, pause)`); everything
    else is the wrapped toolbox's."""

    def __init__(self, inner: Any, pause: Callable[[], None]):
        self._inner = inner
        self._pause = pause

    def run(self, action: Any, screen: Any = None) -> Any:
        try:
            return self._inner.run(action, screen)
        finally:
            self._pause()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
