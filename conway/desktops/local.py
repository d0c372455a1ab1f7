"""The `local` provider: today's disposable desktop on this machine (`conway.sandbox.desktop.DisposableDesktop`:
a private Xvfb, a session bus with AT-SPI, a bubblewrap sandbox with the home at /home/user), wrapped unchanged.

The observer and the GUI tool look at and act on its display from this side (the accessibility snapshot is read
inside the desktop's box); the agent's shell and files tools act in the box; setup steps and checkers use the
desktop itself as their `TaskEnv`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from conway.desktops.base import DesktopRequest, Provider, StepLimits

if TYPE_CHECKING:  # pragma: no cover
    from conway.config import ConwayConfig, TasksConfig
    from conway.protocols import Actuator, Observer
    from conway.store.home import Home


class LocalDesktop:
    """`Desktop` over one `DisposableDesktop`; its public methods stay reachable as `.desk`."""

    provider = "local"

    def __init__(self, settings: "TasksConfig | None", request: DesktopRequest):
        from conway.sandbox.desktop import DisposableDesktop

        self.request = request
        self.task_id = request.task_id
        self.desk = DisposableDesktop(request.task_id, cache_dir=request.cache_dir, keep=request.keep,
                                      size=request.size, network=request.network, limits=request.limits)

    @property
    def size(self) -> tuple[int, int]:
        return tuple(self.desk.size)  # type: ignore[return-value]

    def __enter__(self) -> "LocalDesktop":
        self.desk.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.desk.__exit__(*exc)

    def kill(self) -> None:
        self.desk.kill()

    def lost(self) -> str | None:
        return self.desk.lost()

    def task_env(self) -> Any:
        return self.desk

    def run_steps(self, steps: list[Any], limits: StepLimits) -> None:
        from conway.sandbox.setup import SetupLimits, run_setup

        notes = {} if limits.notes is None else {"notes": limits.notes}
        run_setup(list(steps), self.desk, SetupLimits(window_wait_s=limits.window_wait_s,
                                                      command_timeout_s=limits.command_timeout_s,
                                                      screen=self.size, scale_with_load=True, **notes))

    def task_config(self, config: "ConwayConfig") -> "ConwayConfig":
        from conway.config import ConwayConfig
        from conway.tasks.env import GUEST_HOME

        data = config.model_dump()
        data["observe"]["source"] = "screen"  # the desktop's display, also for a scripted policy
        enabled = [t for t in data["tools"]["enabled"] if t != "browser"]  # the browser tool opens the host's
        data["tools"].update(enabled=enabled, mcp_servers=[], workdir=GUEST_HOME, environment="sandbox")
        return ConwayConfig.model_validate(data)

    def observer(self, config: "ConwayConfig", home: "Home") -> "Observer":
        from conway.observe.screen import ScreenObserver

        # the desktop's display; its AT-SPI tree read inside the desktop's box (the helper's answer is data)
        return ScreenObserver.from_config(config, home, display=self.desk.display,
                                          accessibility_helper=self.desk.helper_argv("_atspi_snapshot.py"))

    def toolbox(self, config: "ConwayConfig", home: "Home") -> "Actuator":
        from conway.session.task_run import shell_env
        from conway.tasks.env import GUEST_HOME
        from conway.tools.registry import build_toolbox

        return build_toolbox(config.tools, Path(GUEST_HOME), gui=True, api_key_env=config.policy.api_key_env,
                             shell_env=shell_env(home), environment=self.desk.environment, display=self.desk.display)

    def screenshot(self) -> bytes | None:
        from conway.observe.screen import ScreenObserver

        observer = ScreenObserver(display=self.desk.display)
        try:
            return observer.observe().png
        except Exception:  # a lost display leaves the card without a picture; the score does not depend on it
            return None
        finally:
            observer.close()

    def kept(self) -> str | None:
        return str(self.desk.root) if self.request.keep and self.desk.root is not None else None

    def facts(self) -> dict[str, Any]:
        return {"provider": self.provider, "screen": list(self.size)}

    def breaches(self) -> list[str]:
        return self.desk.breaches()


def _runnable(network: bool) -> dict[str, Any]:
    from conway.sandbox.setup import STEP_TYPES

    return {"step_types": STEP_TYPES, "network": network}


def _make(settings: "TasksConfig", request: DesktopRequest) -> LocalDesktop:
    return LocalDesktop(settings, request)


PROVIDER = Provider("local", _make, _runnable,
                    "a disposable desktop on this machine: private Xvfb, session bus, bubblewrap, home at /home/user")
