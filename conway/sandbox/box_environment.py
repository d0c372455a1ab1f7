"""The tools' environment on a task desktop: commands run inside the desktop's box, paths are its home's.

`prepare` hands the shell tool a command line for THIS side (`box_run.py`) that runs the command in the box and
relays its output, so the tool's own timeout, output bounding and process-group kill work unchanged: killing the
relay hangs up, and the box kills the command with its descendants. The command's environment is the box's
allowlist; nothing of Conway's own environment (or the one the tool passes) goes in. `resolve` maps a path the
model names onto the home (the one folder of the box this side sees); the files tool then opens it without
following links (`conway.tools.files` with `Resolved.top`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from conway.sandbox.environment import Prepared
from conway.sandbox.paths import Bind, Resolved, resolve
from conway.tasks.env import GUEST_HOME

__all__ = ["BoxEnvironment"]

_RELAY = Path(__file__).with_name("box_run.py")


def relay_python() -> str:
    """An interpreter this process may start for the relay (standard library only): its own, or, where its own
    lies behind a folder this user may not pass (a root-made virtual environment run as another user), the
    system's."""
    import os

    if os.access(sys.executable, os.X_OK):
        return sys.executable
    return "/usr/bin/python3"


class BoxEnvironment:
    name = "sandbox"

    def __init__(self, box, home: Path):
        self.box = box
        self.home = GUEST_HOME
        self._home_dir = home
        self.network = box.network

    def availability(self) -> tuple[bool, str]:
        if self.box.proc is None or self.box.proc.poll() is not None:
            return False, "the task desktop's box is not running"
        net = "its own network with a NAT" if self.network else "no network"
        return True, (f"the task desktop's box ({net}; HOME {GUEST_HOME}; an unprivileged user; no capabilities)")

    def relay(self, argv: list[str], *, cwd: str, timeout_s: float | None = None) -> list[str]:
        return [relay_python(), "-I", "-S", str(_RELAY), self.box.ctl_path, cwd,
                "-" if timeout_s is None else str(timeout_s), "--", *argv]

    def prepare(self, argv: list[str] | str, *, cwd: str, env: dict[str, str] | None) -> Prepared:
        if isinstance(argv, str):
            argv = ["/bin/sh", "-c", argv]
        return Prepared(self.relay(list(argv), cwd=cwd), "/", {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})

    def view(self, env: dict[str, str] | None = None) -> list[Bind]:
        """The folders of this machine the box shows that this side reads: its home only."""
        return [Bind(GUEST_HOME, self._home_dir, True)]

    def resolve(self, path: str, *, cwd: str) -> Resolved:
        return resolve(self.view(), path, cwd=cwd, home=GUEST_HOME)

    def close(self) -> None:
        pass
