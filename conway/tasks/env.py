"""What a task's getters, setup steps and checkers may ask of the machine the task ran on.

OSWorld talks to a VM over HTTP; here the "VM" is a disposable desktop on this
machine (`conway.sandbox`): a private X display, a session bus, and a
disposable user home that commands see at OSWorld's paths (`/home/user`,
`~`). Everything a getter or a setup step needs goes through this protocol,
so the checkers never touch the real home and the sandbox decides how a
command runs (bubblewrap, or plainly on a developer's machine).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

GUEST_HOME = "/home/user"
"""The user's home as OSWorld's task files name it."""


class PathEscape(ValueError):
    """A task path that leaves the disposable home (or its allowed roots): refused, never followed."""


@dataclass(frozen=True)
class CommandResult:
    returncode: int | None
    """None when the command was killed at its time limit."""
    stdout: str
    stderr: str
    timed_out: bool = False


@runtime_checkable
class TaskEnv(Protocol):
    task_id: str
    cache_dir: Path | None
    """The local cache in OSWorld's layout (`conway.tasks.cache`), or None when none was given."""
    display: str
    """The X display the task's applications and the agent's GUI actions use (":12")."""

    def host_path(self, guest_path: str) -> Path:
        """A file on this machine holding what the task sees at a path it names (`/home/user/x.txt`, `~/x.txt`,
        a relative path: under the home) — on a sandboxed desktop a private copy, read with no link followed.
        Raises PathEscape for a path outside what the task may see. Read it; write through `write_file`."""
        ...

    def write_file(self, guest_path: str, data: bytes) -> None:
        """Put a file at a path the task names in its home (folders made as needed), following no link;
        PathEscape for a path outside the home."""
        ...

    def run(self, command: str | list[str], *, shell: bool = False, timeout_s: float = 30.0,
            cwd: str | None = None) -> CommandResult:
        """Run a command as the task's user sees it (inside the sandbox, the home at `/home/user`, the task's
        display); bounded by `timeout_s`, the process group killed at the limit."""
        ...

    def spawn(self, command: str | list[str], *, shell: bool = False) -> int | None:
        """Start a long-lived program (an application a setup step launches) in the sandbox; it lives until the
        environment closes. Returns its pid where the environment can say later whether it ended
        (`spawned_exit(pid)`, optional), else None."""
        ...

    def terminal_output(self) -> str | None:
        """The text a terminal window on the task's display shows, read through AT-SPI (OSWorld's
        `vm_terminal_output`); None when no terminal is open or the accessibility bus does not answer."""
        ...

    def accessibility_tree(self) -> str | None:
        """Every application's accessibility tree on the task's desktop as the XML OSWorld's VM server gives
        (`desktop-frame` root, tags from role names, `st:`/`attr:`/`cp:` attributes); None when the
        accessibility bus does not answer."""
        ...
