"""`TaskEnv` over a guest server: what a task's getters and checkers read, asked of the guest as OSWorld's getters
ask it (a file through /file, a command through /execute, the terminal's text through /terminal, the
accessibility tree through /accessibility).

`host_path` fetches the file the task names into a folder of this machine and hands back that copy, as OSWorld's
`get_vm_file` saves it into its cache before a metric reads it. Where the copy lands is made here from the path
the task gave (never from anything the guest said); a path with `..` or a NUL is refused. A path the guest has
no file at comes back as a path that does not exist (the getters' "not there"). A folder cannot be fetched this
way: getters that walk one (`list_directory`) are not supported on a guest yet.
"""

from __future__ import annotations

import hashlib
import posixpath
import shlex
from pathlib import Path

from conway.desktops.guest_client import GuestClient, GuestError, GuestTimeout
from conway.tasks.env import CommandResult, PathEscape

MAX_GUEST_PATH = 4096


class GuestTaskEnv:
    """The guest as a `TaskEnv`; `scratch`: this machine's folder for the files fetched from it."""

    def __init__(self, client: GuestClient, task_id: str, cache_dir: Path | None, scratch: Path):
        self.client = client
        self.task_id = task_id
        self.cache_dir = cache_dir
        self.display = ""
        """No X display of this machine: the guest's is its own (getters that need it run their command there)."""
        self.scratch = scratch
        self.fetched: dict[str, Path] = {}

    def local_copy(self, guest_path: str) -> Path:
        """Where the copy of `guest_path` goes here: under `scratch`, named by a hash of the path and its base name."""
        if not isinstance(guest_path, str) or not guest_path or len(guest_path) > MAX_GUEST_PATH:
            raise PathEscape(f"not a path on the guest: {guest_path!r:.80}")
        if "\0" in guest_path or ".." in guest_path.split("/"):
            raise PathEscape(f"{guest_path!r:.80}: a path with '..' or NUL is refused")
        base = posixpath.basename(guest_path.rstrip("/")) or "root"
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in base)[:100] or "file"
        digest = hashlib.sha256(guest_path.encode()).hexdigest()[:16]
        return self.scratch / "files" / digest / safe

    def host_path(self, guest_path: str) -> Path:
        """The file at `guest_path` on the guest, fetched now (each call fetches it again: the agent or a
        postconfig step may have changed it)."""
        target = self.local_copy(guest_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = self.client.file(guest_path)
        if data is None:
            target.unlink(missing_ok=True)
        else:
            target.write_bytes(data)
        self.fetched[guest_path] = target
        return target

    def run(self, command: str | list[str], *, shell: bool = False, timeout_s: float = 30.0,
            cwd: str | None = None) -> CommandResult:
        """The command on the guest through /execute (the server bounds it at 120 s; `cwd` is not in the
        protocol: a command that needs one says `cd` itself)."""
        if cwd is not None:
            command = f"cd {_quote(cwd)} && " + (command if isinstance(command, str) else " ".join(map(_quote, command)))
            shell = True
        try:
            done = self.client.execute(command, shell=shell, timeout=max(timeout_s, 1.0) + 10)
        except GuestTimeout as exc:
            return CommandResult(None, "", str(exc), timed_out=True)
        except GuestError as exc:
            return CommandResult(127, "", str(exc))
        return CommandResult(done.returncode, done.output, done.error)

    def spawn(self, command: str | list[str], *, shell: bool = False) -> None:
        """Start a program on the guest (/setup/launch); it lives as long as the guest lets it."""
        answer = self.client.post_json("/setup/launch", {"command": command, "shell": shell})
        if answer.status != 200:
            raise GuestError(f"/setup/launch answered HTTP {answer.status}", answer.status)

    def terminal_output(self) -> str | None:
        try:
            return self.client.terminal_output()
        except GuestError:
            return None

    def accessibility_tree(self) -> str | None:
        try:
            return self.client.accessibility_tree()
        except GuestError:
            return None


def _quote(word: str) -> str:
    return shlex.quote(word)
