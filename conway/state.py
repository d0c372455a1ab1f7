"""File state: atomic JSON, state.json with its previous copy, control.json, the lock."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import UserError


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Temp file in the same folder + fsync + rename: readers see old or new, never half.

    `durable=False` skips the fsyncs (still atomic for readers); used for writes whose
    loss in a power cut is harmless because the journal says the same thing.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:  # makes the rename itself durable; not possible on every platform
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_json(path: Path, data: Any, durable: bool = True) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode(), durable)


def read_json(path: Path) -> Any:
    """Parse a JSON file; raises ValueError (with the path) when it is corrupt."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name} is corrupt: {exc}") from None


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
        if self.path.exists():
            try:  # only a parseable state becomes "previous"
                read_json(self.path)
                os.replace(self.path, self.previous)
            except (ValueError, OSError):
                pass
        atomic_write_json(self.path, state, durable)


# --- control.json --------------------------------------------------------------

CONTROL_REQUESTS = ("pause", "resume", "stop")


def write_control(path: Path, session: str, request: str) -> None:
    if request not in CONTROL_REQUESTS:
        raise ValueError(request)
    import time

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
    """An OS file lock (flock / msvcrt) held for the whole run; the holder's pid inside."""

    def __init__(self, path: Path):
        self.path = path
        self._fh = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            _lock(fh)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise UserError(f"another Conway agent is running on this home (pid {holder}); "
                            "stop it with `conway stop` or use another --home") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
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
        if not self.path.exists():
            return None
        with open(self.path, "a+") as fh:
            try:
                _lock(fh)
            except OSError:
                fh.seek(0)
                text = fh.read().strip()
                return int(text) if text.isdigit() else -1
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
