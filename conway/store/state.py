"""File state: atomic JSON, state.json with its previous copy, control.json, the lock."""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from conway.errors import UserError
from conway.store.durable import fsync_dir
from conway.text.bounded import NotRegularFile, open_regular

T = TypeVar("T")

STDOUT = Path("/dev/stdout")
"""`--output /dev/stdout` (or `-`): the command's file goes to standard output and its messages to stderr."""


def is_stdout(raw: str | os.PathLike[str]) -> bool:
    return os.fspath(raw).strip() in ("-", os.fspath(STDOUT))


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True,
                       before_replace: Callable[[], None] | None = None) -> None:
    """Temp file in the same folder + fsync + rename: readers see old or new, never half.

    `durable=False` skips the fsyncs (still atomic for readers); used for writes whose
    loss in a power cut is harmless because the journal says the same thing.
    `before_replace` runs once the new content is safely in its temp file.
    The temp file is `.NAME.<pid>-<random>.tmp` (what `remove_leftover_temps` clears after a kill),
    (mode 0600, as before), written with plain os calls: this runs every cycle, and tempfile cost as much as the write.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(tmp, flags, 0o600)
    except FileNotFoundError:  # the folder is not there (yet)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, flags, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent, best_effort=True)  # makes the rename itself durable where the platform can


def json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode()


def atomic_write_json(path: Path, data: Any, durable: bool = True) -> None:
    atomic_write_bytes(path, json_bytes(data), durable)


def read_json(path: Path) -> Any:
    """Parse a JSON file; raises ValueError (with the path) when it is corrupt or not a regular file."""
    try:
        with open_regular(path) as fh:  # a FIFO in its place must not block the reader
            return json.loads(fh.read().decode("utf-8"))
    except NotRegularFile:
        raise ValueError(f"{path.name} is not a regular file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name} is corrupt: {exc}") from None


RECENT_NS = 2_000_000_000
"""A file modified this recently is read again every time: timestamps are coarse (a clock tick on Linux,
a second or two on some file systems), so an edit in the same tick as the last read could look unchanged."""


class ReadIfChanged(Generic[T]):
    """A small file the loop consults every cycle (control.json, goals.md), read again only when it changed.

    Each `get` stats the file. Another inode (an atomic replace, an editor's save), size or modification
    time means it changed; a file modified in the last `RECENT_NS` is read every time. Otherwise a stat
    is all it costs: an open, read and parse every cycle cost several times as much. `read(path)` does the
    reading; `missing` stands for a file that is not there (or cannot be stat-ed).
    """

    def __init__(self, path: Path, read: Callable[[Path], T], missing: T):
        self.path, self._read, self.missing = path, read, missing
        self._seen: tuple[tuple[int, int, int] | None, T] = (None, missing)

    def get(self) -> T:
        try:
            st = os.stat(self.path)
        except OSError:
            self._seen = (None, self.missing)
            return self.missing
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        seen, value = self._seen
        if key != seen:
            value = self._read(self.path)
            settled = time.time_ns() - st.st_mtime_ns > RECENT_NS
            self._seen = (key if settled else None, value)
        return value


class StateStore:
    """state.json (current) and state.previous.json (the write before it)."""

    def __init__(self, path: Path, previous: Path):
        self.path, self.previous = path, previous

    def save_current(self, state: dict[str, Any], durable: bool = False) -> None:
        """Replace state.json alone (atomically); state.previous.json keeps the last full `save`.

        For the frequent, journal-backed copies (the pending action before and after every side
        effect): one rename instead of two, and on ext4 each rename over a file costs milliseconds.
        """
        atomic_write_json(self.path, state, durable)

    def load(self) -> tuple[dict[str, Any], str | None]:
        """Return (state, recovery note). A corrupt state falls back to the previous copy."""
        if not self.path.exists():
            return {}, None
        try:
            return read_json(self.path), None
        except (ValueError, OSError) as exc:
            problem = str(exc)
        if self.previous.exists():
            try:
                return read_json(self.previous), f"{problem}; recovered from {self.previous.name}"
            except (ValueError, OSError) as exc:
                problem += f"; {exc}"
        return {}, f"{problem}; no usable previous state, starting empty"

    def save(self, state: dict[str, Any], durable: bool = True) -> None:
        """Write the new copy, keep the current one as previous, then swap: state.json never goes missing."""
        atomic_write_bytes(self.path, json_bytes(state), durable, before_replace=lambda: self._keep_previous(durable))

    def save_in_place(self, state: dict[str, Any]) -> None:
        """Last resort on a full disk: overwrite state.json inside its own blocks (no new file needed).

        Not atomic; a crash in the middle leaves a torn state.json, which `load` replaces by
        state.previous.json (a separate inode, untouched here).
        """
        data = json_bytes(state)
        fd = os.open(self.path, os.O_WRONLY)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        finally:
            os.close(fd)

    def _keep_previous(self, durable: bool) -> None:
        """Make the current state.json (when it parses) also state.previous.json, leaving it in place."""
        try:
            with open_regular(self.path) as fh:  # a FIFO in its place must not block the write
                current = fh.read()
            json.loads(current)  # only a parseable state becomes "previous"
        except (OSError, ValueError):
            return
        # A second name for the current file's inode: the rename that follows gives state.json a
        # new inode, so previous keeps the old content without state.json ever being moved away.
        tmp = self.previous.with_name(f".{self.previous.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            os.link(self.path, tmp)
            os.replace(tmp, self.previous)
        except OSError:  # no hard links here (some file systems): copy it instead
            tmp.unlink(missing_ok=True)
            atomic_write_bytes(self.previous, current, durable)


TEMP_OWNERS = ("state.json", "state.previous.json", "memory.md", "memory.previous.md", "live.json")
"""Files the running agent writes atomically (live.json: `conway.store.live`, at a session's start); their leftover
temp files are its own."""


def remove_leftover_temps(folder: Path, names: tuple[str, ...] = TEMP_OWNERS) -> list[str]:
    """Delete `.NAME.*.tmp` files a killed run left behind (call only while holding the lock)."""
    removed = []
    for name in names:
        for tmp in folder.glob(f".{name}.*.tmp"):
            try:
                tmp.unlink()
                removed.append(tmp.name)
            except FileNotFoundError:
                pass
    return sorted(removed)


# --- control.json --------------------------------------------------------------

CONTROL_REQUESTS = ("pause", "resume", "stop", "takeover", "handback")


def write_control(path: Path, session: str, request: str) -> None:
    if request not in CONTROL_REQUESTS:
        raise ValueError(request)
    atomic_write_json(path, {"session": session, "request": request, "at": time.time()})


def read_control(path: Path, session: str) -> str | None:
    """The pending request for *this* session; requests for other sessions are ignored."""
    try:
        data = read_json(path)
    except (FileNotFoundError, ValueError, OSError):
        return None
    if not isinstance(data, dict) or data.get("session") != session:
        return None
    req = data.get("request")
    return req if req in CONTROL_REQUESTS else None


# --- instance.lock -----------------------------------------------------------


class InstanceLock:
    """An OS file lock (flock / msvcrt) held for the whole run; inside, the holder's pid and its session id
    (`pid session`), so a control request reaches the run that holds the lock even before its state.json."""

    def __init__(self, path: Path):
        self.path = path
        self._fh = None

    def acquire(self, session: str | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            _lock(fh)
        except OSError:
            fh.seek(0)
            holder = (fh.read().split() or ["unknown"])[0]
            fh.close()
            raise UserError(f"another Conway agent is running on this home (pid {holder}); "
                            "stop it with `conway stop` or use another --home") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()} {session}" if session else str(os.getpid()))
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            self._fh.seek(0)
            self._fh.truncate()
            self._fh.flush()
            _unlock(self._fh)
            self._fh.close()
            self._fh = None

    def holder(self) -> int | None:
        """Pid of a live holder, or None if nobody holds the lock (a stale file is not a holder)."""
        held = self.held()
        return held[0] if held else None

    def held(self) -> tuple[int, str | None] | None:
        """(pid, session id) of a live holder (-1: a pid not written yet), or None if nobody holds the lock."""
        try:  # read-only: `status` works on a read-only home (flock needs no write access)
            fh = open(self.path, "r")
        except FileNotFoundError:
            return None
        with fh:
            try:
                _lock(fh)
            except OSError:
                fh.seek(0)
                words = fh.read().split()
                pid = int(words[0]) if words and words[0].isdigit() else -1
                return pid, words[1] if len(words) > 1 else None
            _unlock(fh)
            return None

    def __enter__(self) -> "InstanceLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fh) -> None:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock(fh) -> None:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _lock(fh) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fh) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
