"""What every desktop provider gives a task run: the `Desktop` protocol, the request that opens one, the runner
protocol's timings with each provider's defaults, and the pause after each action.

A desktop is where one task runs and is gone afterwards: the local Xvfb + bubblewrap one (`local`), a machine
running OSWorld's guest server (`osworld`), OSWorld's VM image under QEMU (`qemu`). The runner (`tasks run`,
rollouts, rerun, the pool's workers) asks only this protocol for what it needs: the task's setup steps, an
observer and an actuator for the loop, the `TaskEnv` the checkers read, a last screenshot, a line for the report.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

from conway.protocols import Actuator, Observer, ToolResult

if TYPE_CHECKING:  # pragma: no cover
    from conway.config import ConwayConfig, TasksConfig
    from conway.store.home import Home
    from conway.tasks.env import TaskEnv


class DesktopError(Exception):
    """A desktop that cannot be opened or used (no guest server at the address, QEMU missing); one line."""


@dataclass(frozen=True)
class DesktopRequest:
    """What a runner asks of the provider for one task (the provider's own settings come from `tasks.*`)."""

    task_id: str = "task"
    cache_dir: Path | None = None
    size: tuple[int, int] = (1280, 800)
    """The screen a local desktop gets; a guest machine has its own (read from it)."""
    network: bool = False
    keep: bool = False
    lease_dir: Path | None = None
    """Where tasks that share a list of guests take turns (the report's tasks folder: every worker sees it)."""
    limits: Any = None
    """The local desktop's box limits (`sandbox.*` as `conway.sandbox.box.BoxLimits`); None: its defaults."""


@dataclass(frozen=True)
class StepLimits:
    """The bounds on the task's setup steps that the command line sets (tests make them short)."""

    window_wait_s: float = 30.0
    command_timeout_s: float = 60.0
    notes: list[str] | None = None
    """Where a step OSWorld's setup would only have logged says so (the case's `setup_notes`), when given."""


@dataclass(frozen=True)
class RunnerProtocol:
    """OSWorld's `lib_run_single` as settings: the wait after setup before the first observation, the pause after
    each action (`sleep_after_execution`), the settle before evaluation, the step limit (None: the task's, else
    the runner's default)."""

    wait_after_setup_s: float = 0.0
    sleep_after_action_s: float = 0.0
    settle_before_eval_s: float = 0.0
    max_steps: int | None = None

    def resolved(self, settings: "TasksConfig") -> tuple["RunnerProtocol", list[str]]:
        """This provider default with the configured values over it, and each value that differs from the
        default named as a deviation (the report says them)."""
        chosen = {name: getattr(settings, name) for name in asdict(self)}
        out = RunnerProtocol(**{k: (v if v is not None else getattr(self, k)) for k, v in chosen.items()})
        deviations = [f"tasks.{k}={_shown(getattr(out, k))} (the provider's default: {_shown(getattr(self, k))})"
                      for k in asdict(self) if getattr(out, k) != getattr(self, k)]
        return out, deviations


def _shown(value: Any) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


OSWORLD_PROTOCOL = RunnerProtocol(wait_after_setup_s=60.0, sleep_after_action_s=0.0, settle_before_eval_s=20.0,
                                  max_steps=15)
"""OSWorld's own numbers (lib_run_single: sleep 60 after reset, 20 before evaluate; run.py: sleep_after_execution
0.0, max_steps 15): the defaults on its machine."""
LOCAL_PROTOCOL = RunnerProtocol()
"""The local desktop adds no waits and leaves the step limit to the task (behaviour as before the seam)."""


@runtime_checkable
class Desktop(Protocol):
    """One disposable desktop for one task; a context manager (entered: started, exited: gone)."""

    provider: str
    """The short name it was chosen by (`tasks.desktop`)."""
    task_id: str
    size: tuple[int, int]
    """The screen's size in pixels (a guest's as it reports it)."""
    protocol: RunnerProtocol
    """The runner protocol's defaults on this provider."""

    def __enter__(self) -> "Desktop": ...

    def __exit__(self, *exc: object) -> None: ...

    def kill(self) -> None:
        """Tear down what runs on it now (a task watchdog's last resort); `__exit__` still cleans up."""
        ...

    def lost(self) -> str | None:
        """What of the desktop died while in use (not the task's doing), or None."""
        ...

    def task_env(self) -> "TaskEnv":
        """What the task's getters and checkers read the machine through."""
        ...

    def run_steps(self, steps: list[Any], limits: StepLimits) -> None:
        """Run setup steps (the task's `config`, or one postconfig step); a failure raises with one line."""
        ...

    def task_config(self, config: "ConwayConfig") -> "ConwayConfig":
        """The run's configuration on this desktop (which tools act where)."""
        ...

    def observer(self, config: "ConwayConfig", home: "Home") -> Observer: ...

    def toolbox(self, config: "ConwayConfig", home: "Home") -> Actuator: ...

    def screenshot(self) -> bytes | None:
        """The screen now as PNG (the report's last picture); None when it cannot be had."""
        ...

    def kept(self) -> str | None:
        """Where what it leaves behind is kept (`--keep`), or None."""
        ...

    def facts(self) -> dict[str, Any]:
        """What the report's environment says of this desktop (provider, address, platform, screen)."""
        ...


@dataclass(frozen=True)
class Provider:
    """One provider's record: how to build its desktop and what the runner must know before it does."""

    name: str
    make: Callable[["TasksConfig", DesktopRequest], Desktop]
    protocol: RunnerProtocol
    """The runner protocol's defaults on it (`tasks.*` override them; the report names each deviation)."""
    runnable: Callable[[bool], dict[str, Any]]
    """`why_not_runnable`'s keyword arguments for this provider, given `--network` (which setup steps it runs,
    whether programs are looked for on this machine)."""
    describe: str
    """One line for `conway tasks list`/the docs."""
    check: Callable[["TasksConfig"], str | None] = lambda settings: None
    """What is wrong with the settings for this provider (a missing address), said before any task starts."""


@dataclass
class PausedActuator:
    """An actuator that waits `pause_s` after each action it runs (OSWorld's `sleep_after_execution`); the wait is
    cut short by a stop (`conway.cancel`). Everything else is the wrapped actuator's."""

    inner: Actuator
    pause_s: float
    slice_s: float = 0.25
    paused: list[float] = field(default_factory=list)

    def available_types(self) -> list[str]:
        return self.inner.available_types()

    def describe(self) -> str:
        return self.inner.describe()

    def findings(self) -> list[dict[str, Any]]:
        return self.inner.findings()

    def check(self, action: Any) -> Any:
        return self.inner.check(action)

    def cancellable(self, action: Any) -> bool:
        return self.inner.cancellable(action)

    def close(self) -> None:
        self.inner.close()

    def run(self, action: Any, screen: Any = None) -> ToolResult:
        result = self.inner.run(action, screen)
        self.paused.append(pause(self.pause_s, self.slice_s))
        return result


def pause(seconds: float, slice_s: float = 0.25) -> float:
    """Sleep `seconds` in slices, ending early when the current run is stopped; returns the time slept."""
    from conway.cancel import current_cancel

    start = time.monotonic()
    deadline = start + max(0.0, seconds)
    token = current_cancel()
    while (left := deadline - time.monotonic()) > 0:
        if token is not None and token.is_set():
            break
        time.sleep(min(slice_s, left))
    return round(time.monotonic() - start, 3)
