"""A test environment for task getters and checkers: `TestTaskEnv`, a `conway.tasks.env.TaskEnv` with no sandbox.

The guest home `/home/user` (and `~`, and relative paths) maps to a temporary
folder; a path that leaves it (after following links) raises PathEscape.
Commands are real processes (bounded, their process group killed at the
limit) that run with HOME set to that folder and it as their working
directory, but without a mount namespace: a command must say `~` or a relative
path, not `/home/user`. The terminal text is whatever the test sets
(`terminal_text`), and so is the accessibility tree (`tree_xml`): there is no AT-SPI here. The real, sandboxed
environment is `conway.sandbox`'s.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from conway.tasks.env import GUEST_HOME, CommandResult, PathEscape


@dataclass
class TestTaskEnv:
    __test__ = False  # a helper, not a test class

    home: Path
    task_id: str = "task"
    cache_dir: Path | None = None
    display: str = ":0"
    terminal_text: str | None = None
    tree_xml: str | None = None
    commands: list = field(default_factory=list)

    def host_path(self, guest_path: str) -> Path:
        if guest_path == "~" or guest_path.startswith("~/"):
            rel = guest_path[2:]
        elif guest_path == GUEST_HOME or guest_path.startswith(GUEST_HOME + "/"):
            rel = guest_path[len(GUEST_HOME) + 1:]
        elif guest_path.startswith("/"):
            raise PathEscape(f"{guest_path} is outside the task's home {GUEST_HOME}")
        else:
            rel = guest_path
        root = self.home.resolve()
        path = (root / rel).resolve()
        if path != root and root not in path.parents:
            raise PathEscape(f"{guest_path} leads outside the task's home {GUEST_HOME}")
        return path

    def write_file(self, guest_path: str, data: bytes) -> None:
        target = self.host_path(guest_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def run(self, command: str | list[str], *, shell: bool = False, timeout_s: float = 30.0,
            cwd: str | None = None) -> CommandResult:
        self.commands.append(command)
        workdir = self.host_path(cwd) if cwd else self.home
        env = {**os.environ, "HOME": str(self.home)}
        proc = subprocess.Popen(command, shell=shell, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return CommandResult(None, out, err, timed_out=True)
        return CommandResult(proc.returncode, out, err)

    def spawn(self, command: str | list[str], *, shell: bool = False) -> None:
        raise NotImplementedError("the test environment starts no long-lived programs")

    def terminal_output(self) -> str | None:
        return self.terminal_text

    def accessibility_tree(self) -> str | None:
        return self.tree_xml
