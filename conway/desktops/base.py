"""What every desktop provider gives a task run: the `Desktop` protocol and the request that opens one (OSWorld's
runner protocol around a task is the same on every provider: `conway.evals.task_protocol`).

A desktop is where one task runs and is gone afterwards: the local Xvfb + bubblewrap one (`local`), a machine
running OSWorld's guest server (`osworld`), OSWorld's VM image under QEMU (`qemu`). The runner (`tasks run`,
rollouts, rerun, the pool's workers) asks only this protocol for what it needs: the task's setup steps, an
observer and an actuator for the loop, the `TaskEnv` the checkers read, a last screenshot, a line for the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

from conway.protocols import Actuator, Observer

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


@runtime_checkable
class Desktop(Protocol):
    """One disposable desktop for one task; a context manager (entered: started, exited: gone)."""

    provider: str
    """The short name it was chosen by (`tasks.desktop`)."""
    task_id: str
    size: tuple[int, int]
    """The screen's size in pixels (a guest's as it reports it)."""

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
    runnable: Callable[[bool], dict[str, Any]]
    """`why_not_runnable`'s keyword arguments for this provider, given `--network` (which setup steps it runs,
    whether programs are looked for on this machine)."""
    describe: str
    """One line for `conway tasks list`/the docs."""
    check: Callable[["TasksConfig"], str | None] = lambda settings: None
    """What is wrong with the settings for this provider (a missing address), said before any task starts."""




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
