"""The `osworld` provider: any machine running OSWorld's guest server (its Ubuntu VM under VMware, VirtualBox,
Docker, AWS …), by its address (`tasks.desktop_url`, `tasks run --desktop-url`), driven as OSWorld's `DesktopEnv`
drives it.

- observation: /screenshot (and /accessibility when `observe.accessibility` is on), `guest_screen`;
- actions: the GUI actions only, as pyautogui code through /execute (`guest_actions`), as OSWorld's agents act;
  the agent's shell, files, browser and MCP tools are not offered (they would act on this machine, not the task's);
- setup and postconfig steps: `guest_setup`, as `SetupController` runs them;
- getters and checkers: `guest_env.GuestTaskEnv` (files fetched through /file into a scratch folder here).

The machine is the user's: it is not reset between tasks here (OSWorld reverts its VM to a snapshot; a provider
that owns its machine, `qemu`, starts a fresh one per task). The report's environment says "OSWorld guest server
at URL, platform, screen size".
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conway.desktops.base import DesktopError, DesktopRequest, Provider, StepLimits
from conway.desktops.guest_client import GuestClient, GuestError

if TYPE_CHECKING:  # pragma: no cover
    from conway.config import ConwayConfig, TasksConfig
    from conway.protocols import Actuator, Observer
    from conway.store.home import Home


class GuestDesktop:
    """`Desktop` on a guest server at `url`; `client` given: that one (tests shorten its retries)."""

    provider = "osworld"

    def __init__(self, url: str, request: DesktopRequest, *, client: GuestClient | None = None,
                 setup_options: dict[str, Any] | None = None, lease: Any = None):
        self.request = request
        self.task_id = request.task_id
        self.lease = lease
        """A `GuestLease` over several addresses: the guest is the one it gives this task (`url` unused)."""
        self.client = client or GuestClient(url)
        self.size: tuple[int, int] = request.size
        self.platform = "?"
        self._scratch: Path | None = None
        self._setup_options = setup_options or {}
        self._env: Any = None
        self._setup: Any = None

    def __enter__(self) -> "GuestDesktop":
        from conway.desktops.guest_env import GuestTaskEnv
        from conway.desktops.guest_setup import GuestSetup

        if self.lease is not None:  # several guests: the one no other task holds now
            self.client.close()
            self.client = GuestClient(self.lease.acquire())
        try:
            self.size = self.client.screen_size()
            self.platform = self.client.platform()
        except GuestError as exc:
            self._release()
            raise DesktopError(f"the OSWorld guest server at {self.client.url} does not answer as one: {exc}") from None
        self._scratch = Path(tempfile.mkdtemp(prefix="conway-guest-"))
        self._env = GuestTaskEnv(self.client, self.task_id, self.request.cache_dir, self._scratch)
        self._setup = GuestSetup(self.client, task_id=self.task_id, cache_dir=self.request.cache_dir,
                                 screen=self.size, **self._setup_options)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._scratch is not None and not self.request.keep:
            shutil.rmtree(self._scratch, ignore_errors=True)
        self.client.close()
        self._release()

    def _release(self) -> None:
        if self.lease is not None:
            self.lease.release()

    def kill(self) -> None:
        """Nothing here to kill: the guest is the user's machine (a watchdog's stop still ends the loop)."""

    def lost(self) -> str | None:
        return None

    def task_env(self) -> Any:
        return self._env

    def run_steps(self, steps: list[Any], limits: StepLimits) -> None:
        self._setup.run(list(steps), command_timeout_s=limits.command_timeout_s)

    @property
    def notes(self) -> list[str]:
        """What the guest refused during setup that OSWorld lets pass."""
        return list(self._setup.notes) if self._setup is not None else []

    def task_config(self, config: "ConwayConfig") -> "ConwayConfig":
        from conway.config import ConwayConfig

        data = config.model_dump()
        data["observe"]["source"] = "screen"  # the guest's screen, also for a scripted policy
        data["tools"].update(enabled=["gui"], mcp_servers=[])  # OSWorld's agents act through pyautogui only
        return ConwayConfig.model_validate(data)

    def observer(self, config: "ConwayConfig", home: "Home") -> "Observer":
        from conway.desktops.guest_screen import GuestObserver

        return GuestObserver.from_config(self.client, config, home)

    def toolbox(self, config: "ConwayConfig", home: "Home") -> "Actuator":
        from conway.desktops.guest_actions import GuestGuiTool
        from conway.tools.registry import Toolbox

        return Toolbox([GuestGuiTool(self.client, self.size)])

    def screenshot(self) -> bytes | None:
        try:
            return self.client.screenshot()
        except GuestError:
            return None

    def kept(self) -> str | None:
        return str(self._scratch) if self.request.keep and self._scratch is not None else None

    def facts(self) -> dict[str, Any]:
        w, h = self.size
        return {"provider": self.provider, "url": self.client.url, "platform": self.platform, "screen": [w, h],
                "line": f"OSWorld guest server at {self.client.url}, {self.platform}, screen {w}x{h}",
                **({"setup_notes": self.notes} if self.notes else {})}


def _runnable(network: bool) -> dict[str, Any]:
    from conway.desktops.guest_setup import STEP_TYPES

    # the guest has its own applications, accessibility and network: nothing of them is looked for here
    return {"step_types": STEP_TYPES, "installed": lambda program: True, "office_accessible": lambda: True,
            "network": True}


def _check(settings: "TasksConfig") -> str | None:
    from conway.desktops.guest_client import check_url
    from conway.desktops.lease import guest_urls

    urls = guest_urls(settings.desktop_url)
    if not urls:
        return ("tasks.desktop=osworld needs the guest server's address: --desktop-url http://HOST:PORT "
                "(or tasks.desktop_url=…; several, comma-separated, for a pool)")
    try:
        for url in urls:
            check_url(url)
    except GuestError as exc:
        return str(exc)
    return None


def _make(settings: "TasksConfig", request: DesktopRequest) -> GuestDesktop:
    from conway.desktops.lease import GuestLease, guest_urls

    problem = _check(settings)
    if problem:
        raise DesktopError(problem)
    urls = guest_urls(settings.desktop_url)
    if len(urls) == 1:
        return GuestDesktop(urls[0], request)
    return GuestDesktop(urls[0], request, lease=GuestLease(urls, request.lease_dir))


PROVIDER = Provider("osworld", _make, _runnable,
                    "a machine running OSWorld's guest server, driven over HTTP as OSWorld's DesktopEnv drives it",
                    _check)
