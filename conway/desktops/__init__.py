"""Desktop providers: "a disposable desktop a task runs on", chosen by a short name (`tasks.desktop`).

    with open_desktop(config.tasks, DesktopRequest(task.id, cache_dir=cache)) as desk:
        desk.run_steps(task.config, StepLimits())
        ... run_task(..., observer=desk.observer(cfg, home), toolbox=desk.toolbox(cfg, home)) ...
        evaluate(task, desk.task_env(), ...)

`open_desktop` is the one place a task's desktop is built: `tasks run` (and so rollouts, candidate-eval and the
pool's workers and Ray actors, which run its suite), `rerun` and `start --desktop` (tests/desktops/
test_one_construction_point.py proves each with a provider registered from outside). A provider is one module declaring
`PROVIDER = Provider(...)` and one line in `PROVIDERS` below; its module is imported only when it is chosen.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from conway.desktops.base import Desktop, DesktopError, DesktopRequest, Provider, StepLimits
from conway.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from conway.config import TasksConfig

__all__ = ["Desktop", "DesktopError", "DesktopRequest", "PROVIDERS", "Provider", "StepLimits", "check_settings",
           "open_desktop", "provider"]


PROVIDERS: dict[str, str] = {
    "local": "conway.desktops.local",
    "osworld": "conway.desktops.osworld",
    "qemu": "conway.desktops.qemu",
}
"""Name → the module declaring its `PROVIDER` (imported on first use)."""


def provider(name: str) -> Provider:
    """The provider registered under `name`; a one-line UserError naming the known ones otherwise."""
    module = PROVIDERS.get(name)
    if module is None:
        raise UserError(f"tasks.desktop={name!r} is not a desktop provider (known: {', '.join(sorted(PROVIDERS))})")
    record = importlib.import_module(module).PROVIDER
    if record.name != name:  # a registration typo would otherwise build the wrong desktop silently
        raise RuntimeError(f"{module} declares provider {record.name!r}, registered as {name!r}")
    return record


def check_settings(settings: "TasksConfig") -> None:
    """A UserError (one line) when `settings` name no provider or one that cannot work as configured."""
    problem = provider(settings.desktop).check(settings)
    if problem:
        raise UserError(problem)


def open_desktop(settings: "TasksConfig", request: DesktopRequest) -> Desktop:
    """The desktop `settings.desktop` names, for one task; not started (enter it)."""
    return provider(settings.desktop).make(settings, request)
