"""CONWAY_HOME: where it is, what lives in it, and `conway init`."""

from __future__ import annotations

import errno
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from conway.errors import UserError

DEFAULT_HOME = Path("~/.conway")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

def not_text(raw: bytes) -> str | None:
    """Why a file the model is sent as text is not text (NUL bytes: binary; bytes that are not UTF-8), or None."""
    nul = raw.find(b"\0")
    if nul >= 0:
        return f"is not text (a NUL byte at {nul}: a binary file)"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"is not UTF-8 text (byte {exc.start})"
    return None


STARTER_CONSTITUTION = """\
# Constitution

Who this agent is, what it may do and what it must leave alone. Conway sends
this file, tagged with its name, at the top of every decision and never
overwrites it.

- Identity: a careful research agent operating this computer for its owner.
- Scope: work only inside the scratch folder of this Conway home unless a goal
  says otherwise. Never delete files you did not create.
- Honesty: report DONE only when you checked the result yourself; say FAIL
  and why when you cannot finish.
"""

STARTER_GOALS = """\
# Goals

Current work. Conway rereads this file at the start of every cycle, so you can
edit it while the agent runs.

1. Write a short note describing what you see into `scratch/notes.md`.
"""


@dataclass(frozen=True)
class Home:
    root: Path

    @property
    def constitution(self) -> Path: return self.root / "constitution.md"
    @property
    def goals(self) -> Path: return self.root / "goals.md"
    @property
    def config(self) -> Path: return self.root / "config.yaml"
    @property
    def memory(self) -> Path: return self.root / "memory.md"
    @property
    def memory_previous(self) -> Path: return self.root / "memory.previous.md"
    @property
    def state(self) -> Path: return self.root / "state.json"
    @property
    def state_previous(self) -> Path: return self.root / "state.previous.json"
    @property
    def control(self) -> Path: return self.root / "control.json"
    @property
    def lock(self) -> Path: return self.root / "instance.lock"
    @property
    def journal_dir(self) -> Path: return self.root / "journal"
    @property
    def screenshots(self) -> Path: return self.root / "screenshots"
    @property
    def scratch(self) -> Path: return self.root / "scratch"
    @property
    def runtime_log(self) -> Path: return self.root / "llama-runtime.log"
    @property
    def candidates(self) -> Path: return self.root / "candidates"
    @property
    def skills(self) -> Path: return self.root / "skills"
    @property
    def mcp(self) -> Path: return self.root / "mcp"

    def contains(self, path: Path) -> bool:
        """Whether `path` lies inside this home (used to refuse reports there)."""
        try:
            path.resolve().relative_to(self.root.resolve())
            return True
        except ValueError:
            return False

    def ensure_dirs(self) -> None:
        self.check_layout()
        for d in (self.root, self.journal_dir, self.screenshots, self.scratch):
            try:
                d.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UserError(f"cannot create {d}: {exc.strerror}") from None

    def check_layout(self, only: tuple[Path, ...] | None = None) -> None:
        """Folders Conway keeps are folders and files are files (all, or `only` those); otherwise one line saying
        which."""
        for d in (self.journal_dir, self.screenshots, self.scratch):
            if (only is None or d in only) and d.exists() and not d.is_dir():
                raise UserError(f"{d} is a file, but Conway keeps its {d.name} folder there; move the file away")
        for f in (self.state, self.state_previous, self.goals, self.constitution, self.memory,
                  self.memory_previous, self.control, self.lock, self.config):
            if (only is None or f in only) and f.is_dir():
                raise UserError(f"{f} is a folder, but Conway keeps its {f.name} file there; move the folder away")


def resolve_home(cli_home: str | None, writable: bool = True) -> Home:
    """`--home` beats CONWAY_HOME beats ~/.conway; refuse files and (unless only read) unwritable places."""
    raw = cli_home or os.environ.get("CONWAY_HOME") or str(DEFAULT_HOME)
    root = Path(raw).expanduser()
    if root.exists() and not root.is_dir():
        raise UserError(f"Conway home {root} is a file, not a directory; pass --home DIR or set CONWAY_HOME")
    if not writable:  # status, export, report, config --check: a read-only home is fine
        return Home(root.resolve() if root.exists() else root.absolute())
    probe = root
    while not probe.exists():  # the nearest existing ancestor decides writability
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"Conway home {root} cannot be created: {probe} is a file")
    try:  # tried, not guessed: permission bits lie for root and read-only file systems
        tempfile.TemporaryFile(dir=probe).close()
    except OSError as exc:
        raise UserError(f"Conway home {root} is not writable: {probe} {_refuses(exc)}; pass --home DIR or set "
                        "CONWAY_HOME") from None
    return Home(root.resolve() if root.exists() else root.absolute())


def _refuses(exc: OSError) -> str:
    """Why a folder that exists takes no new file, in words ("/proc: No such file or directory" read as if /proc
    were missing)."""
    return {errno.EROFS: "is on a read-only file system", errno.EACCES: "does not let this user create files",
            errno.EPERM: "does not let this user create files",
            errno.ENOENT: "takes no new files (a virtual file system)",
            errno.ENOSPC: "is on a full disk"}.get(exc.errno or 0, f"refuses new files ({exc.strerror})")


def validate_name(name: str, what: str = "name") -> str:
    """Names that reach the file system (session ids, candidates...) are checked first."""
    if not _SAFE_NAME.match(name or "") or ".." in name:
        raise UserError(f"invalid {what} {name!r}: use letters, digits, '.', '_' or '-' (max 128)")
    return name


def init_home(home: Home) -> list[str]:
    """Create the layout; never overwrite owner-written files. Returns messages to print."""
    home.ensure_dirs()
    messages = []
    for path, text in ((home.constitution, STARTER_CONSTITUTION), (home.goals, STARTER_GOALS)):
        if path.exists():
            messages.append(f"kept existing {path.name} (not overwritten)")
        else:
            path.write_text(text, encoding="utf-8")
            messages.append(f"wrote starter {path.name}")
    if not home.config.exists():
        home.config.write_text(
            "# Conway configuration for this home; validated by `conway config --check`.\n"
            "# Never put API keys here: they come from the environment.\n"
            "# Example: policy: {kind: generic, endpoint: http://127.0.0.1:8080/v1}\n{}\n",
            encoding="utf-8")
        messages.append("wrote config.yaml")
    from conway.store.skills import install_example
    messages.append(install_example(home.root))
    return messages
