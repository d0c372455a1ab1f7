"""The append-only JSONL journal: one event per line, versioned, rotated by size.

Lines are only ever appended. A torn last line (the process died mid-write) is
isolated behind a newline on the next open and skipped by readers, with a
recovery event saying so.

The file being written is zero-filled a little ahead of its last line (`PREALLOCATE_BYTES`,
synced once), so an append only overwrites blocks that already exist: making an intent durable
is then an fdatasync of its data, with no file-system metadata to commit. A file's data ends at
its last non-NUL byte: the zeros after it are that tail. A NUL run with data after it (a block a
power loss zeroed, an editor) is skipped by readers, which read the lines after it and report it
(`UnreadableSpan`); the writer appends after the last byte of data, never over it. The format:
docs/architecture.md, "The journal on disk".
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Literal

from conway.store.durable import fsync_dir
from conway.store.events import Intent, SessionEnd

SCHEMA = "conway-event/1"
EventKind = Literal["intent", "result", "error", "uncertain", "recovery", "control", "observation",
                    "decision", "suppressed", "finish", "session", "memory", "human"]
EVENT_KINDS: tuple[str, ...] = EventKind.__args__  # type: ignore[attr-defined]


def make_event(session: str, step: int, kind: str, payload: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    if kind not in EVENT_KINDS:
        raise ValueError(f"unknown journal event kind {kind!r}")
    t = time.time() if now is None else now
    return {
        "schema": SCHEMA,
        "session": session,
        "step": step,
        "kind": kind,
        "ts": datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds"),
        "t": round(t, 6),
        "payload": payload,
    }


PREALLOCATE_BYTES = 64 << 10
"""How far ahead of its end the journal file is zero-filled (one write and fsync per this much journal)."""

RESERVE_BYTES = 64 << 10
"""Space set aside in `journal/.reserve`: freed on a full disk so the run's last events still fit. At most an
eighth of the cap: the reserve counts in the cap like the files (the folder never passes it)."""


class Journal:
    preallocate_bytes = PREALLOCATE_BYTES
    preallocate_way = "zeros"
    """`zeros`: the file zero-filled ahead, so an append moves no metadata; `keep_size`: blocks set aside past
    the file's end (fallocate, FALLOC_FL_KEEP_SIZE; zeros where the file system lacks it), so readers see the
    data alone but each append moves the length, which the intent's fdatasync then commits (measured slower:
    docs/measurements.md, "The journal's tail"; kept for the benchmark's side-by-side)."""
    sync_call = "fdatasync"
    """The `os` call that makes an intent durable (a class attribute, so a benchmark can set the old ways side by side)."""

    def __init__(self, folder: Path, max_file_bytes: int = 8 << 20, max_total_bytes: int = 512 << 20,
                 fsync: str = "intents"):
        self.folder = folder
        self.max_total_bytes = max_total_bytes
        self.max_file_bytes = min(max_file_bytes, max_total_bytes)  # one file alone never passes the cap
        self.reserve_bytes = min(RESERVE_BYTES, max_total_bytes // 8)
        """`.reserve`'s size, inside the cap: the folder (files and reserve) stays within `max_total_bytes`."""
        self.fsync_mode = fsync
        self.folder.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        self._path: Path | None = None
        self._size = 0  # where the next line goes: the end of the text
        self._alloc = 0  # the file's length: text, then zeros up to here
        self._seen: tuple[int, int] | None = None  # (length, mtime) after this writer's last change
        self.torn_on_open: str | None = None
        # Writers take turns (a run, and `promote` or an acceptance record beside it): appends are
        # positioned writes now, so each must start from where the last writer, whoever it was, left.
        self._lock_fd = os.open(self.folder / ".writer.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with self._exclusive():
            self._open_latest()
        self._make_reserve()

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _note(self) -> None:
        """Remember the file as this writer left it, to notice another writer's change."""
        if self._fd is not None:
            st = os.fstat(self._fd)
            self._seen = (st.st_size, st.st_mtime_ns)

    def _catch_up(self) -> None:
        """Another writer changed the file since our last line: start again from its text's end."""
        if self._fd is None or self._path is None:
            return
        st = os.fstat(self._fd)
        if (st.st_size, st.st_mtime_ns) != self._seen:
            fd, self._fd = self._fd, None
            os.close(fd)  # not `_close_file`: what it would cut is the other writer's text now
            self._open(self._path)

    def _make_reserve(self) -> None:
        reserve = self.folder / ".reserve"
        try:
            if not reserve.exists() or reserve.stat().st_size != self.reserve_bytes:  # a cap changed since
                with open(reserve, "wb") as fh:  # written, not sparse: the blocks are really taken
                    fh.write(b"\0" * self.reserve_bytes)
        except OSError:  # no room even for that: there is nothing to set aside
            reserve.unlink(missing_ok=True)

    def release_reserve(self) -> bool:
        """On a full disk: free the reserve so the stop can still be journaled. True when there was one."""
        try:
            (self.folder / ".reserve").unlink()
            return True
        except OSError:
            return False

    # -- writing --------------------------------------------------------------

    def _open_latest(self) -> None:
        files = journal_files(self.folder)
        if files and text_size(files[-1]) < self.max_file_bytes:
            path = files[-1]
            self._open(path)
            self._enforce_total()  # the cap may have been lowered since the last run
            if self._size and os.pread(self._fd, 1, self._size - 1) != b"\n":  # type: ignore[arg-type]
                self._write(b"\n")  # isolate a torn tail so the next event starts clean
                self.torn_on_open = path.name
        else:
            self._rotate()

    def _open(self, path: Path) -> None:
        """Open for writing after the last byte of data; the zeros after it (an unwritten tail) are cut off.

        A NUL run with data after it stays (a zeroed block after a power loss, an editor's damage):
        readers skip it and report it, and the next line goes after everything that is there."""
        self._close_file()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)  # read too: the torn-tail check
        try:
            size = text_size(path)
            os.ftruncate(fd, size)  # also frees blocks a killed writer set aside past the end
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._path, self._size, self._alloc = fd, path, size, size
        self._note()

    def _rotate(self) -> None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        existing = journal_files(self.folder)
        seq = (int(existing[-1].name.split("-")[0]) + 1) if existing else 1
        self._open(self.folder / f"{seq:06d}-{stamp}.jsonl")
        fsync_dir(self.folder)  # the new file's name survives a power loss, with the intents it will hold
        self._enforce_total()

    def _close_file(self) -> None:
        """Close the file being written, its zeroed tail cut off (a closed file is text only)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self._alloc > self._size:
                os.ftruncate(fd, self._size)
        except OSError:
            pass  # readers skip the zeros at a file's end anyway
        finally:
            os.close(fd)

    def _enforce_total(self, current: int = 0) -> None:
        """Delete the oldest files until they fit beside a full current file: the cap counts it too.

        `current`: the size the file being written is about to reach when one event alone is
        bigger than a file (a large tool output under small caps); room is made for that too.
        """
        budget = self.max_total_bytes - max(self.max_file_bytes, current) - self.reserve_bytes
        closed = [(f, occupied_bytes(f)) for f in journal_files(self.folder) if f != self._path]
        total = sum(size for _, size in closed)
        for old, size in closed:  # oldest first; never the file being written
            if total <= budget:
                break
            total -= size
            old.unlink(missing_ok=True)

    @property
    def path(self) -> Path | None:
        """The file being written."""
        return self._path

    def append(self, event: dict[str, Any], sync: bool | None = None) -> None:
        line = (json.dumps(event, ensure_ascii=False, default=str, separators=(",", ":")) + "\n").encode()
        with self._exclusive():
            self._catch_up()
            self._append(line)
        if sync is None:
            sync = self.fsync_mode == "all" or (self.fsync_mode == "intents" and event["kind"] == "intent")
        if sync and self.fsync_mode != "none" and self._fd is not None:
            # The data alone: inside the zeroed tail no metadata changed; past it (a full disk, one
            # event bigger than a file) fdatasync flushes the new size too, as it must to read it back.
            getattr(os, self.sync_call)(self._fd)

    def _append(self, line: bytes) -> None:
        if self._size and self._size + len(line) > self.max_file_bytes:
            self._rotate()
        if self._size + len(line) > self.max_file_bytes:  # one event bigger than a whole file
            self._enforce_total(self._size + len(line))
        if self._fd is None:  # an earlier failed write could not reopen the file
            raise JournalUnwritable(errno.EBADF, "the journal file could not be reopened", str(self._path))
        start = self._size
        try:
            self._write(line)
        except OSError as exc:
            self._size = start  # what was written of this line goes
            self._drop_partial()
            raise JournalUnwritable(exc.errno, exc.strerror, str(self._path)) from None  # say which file
        self._note()

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        end = self._size + len(data)
        if end > self._alloc:
            self._preallocate(end)
        while data:  # pwrite may write less than asked (a signal, a full disk)
            done = os.pwrite(self._fd, data, self._size)
            self._size += done
            data = data[done:]

    def _preallocate(self, end: int) -> None:
        """Set space aside ahead of `end` once, so the appends up to there need no new blocks.

        Never past `max_file_bytes` (the caps count what the file occupies); a disk too full for it
        gets its space back and the line is appended the plain way (the caller's error, if any)."""
        assert self._fd is not None
        target = min(self.max_file_bytes, end + self.preallocate_bytes)
        if target <= max(end, self._alloc):
            return
        if self.preallocate_way == "keep_size":
            try:
                if reserve_blocks(self._fd, self._alloc, target - self._alloc):
                    self._alloc = target  # blocks set aside past the end: readers see the data alone
                    return
            except OSError:
                return  # no room to set aside: the line goes in the plain way
        try:
            self._zero_fill(target)
        except OSError:
            try:
                os.ftruncate(self._fd, max(self._size, self._alloc))
            except OSError:
                pass

    def _zero_fill(self, target: int) -> None:
        """Write zeros up to `target` and sync them once: the file's length and blocks are then on disk."""
        assert self._fd is not None
        zeros = bytes(target - self._alloc)
        offset = self._alloc
        while zeros:
            done = os.pwrite(self._fd, zeros, offset)
            offset += done
            zeros = zeros[done:]
        os.fsync(self._fd)  # the new length and its blocks, once per PREALLOCATE_BYTES
        self._alloc = target

    def _drop_partial(self) -> None:
        """A failed write (a full disk) must not leave half a line: cut the file back to its last whole line."""
        assert self._fd is not None and self._path is not None
        path, size = self._path, self._size
        try:
            os.ftruncate(self._fd, size)
        except OSError:
            pass
        try:
            os.close(self._fd)
        except OSError:
            pass
        self._fd = None
        try:
            self._open(path)
        except OSError:
            self._fd = None  # the next append says so (JournalUnwritable), no write to a closed file

    def close(self) -> None:
        if self._lock_fd < 0:
            return
        with self._exclusive():
            if self._fd is not None and self._path is not None:
                self._catch_up()  # cut the zeros at the text's end as it is now, whoever wrote last
            self._close_file()
        os.close(self._lock_fd)
        self._lock_fd = -1


_FALLOC_FL_KEEP_SIZE = 1
_fallocate: Any = None


def reserve_blocks(fd: int, offset: int, length: int) -> bool:
    """fallocate(FALLOC_FL_KEEP_SIZE): blocks set aside past the end of the file, its length unchanged.

    False where the system or the file system has no such call (the caller zero-fills instead)."""
    global _fallocate
    if _fallocate is None:
        _fallocate = False
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
            _fallocate = libc.fallocate
    if not _fallocate:
        return False
    if _fallocate(fd, _FALLOC_FL_KEEP_SIZE, offset, length) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(err, os.strerror(err))


class JournalUnwritable(OSError):
    """A journal line could not be written (a full disk, a file made read-only …); errno and file say which."""


def journal_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.jsonl") if p.name.split("-")[0].isdigit())


def occupied_bytes(path: Path) -> int:
    """What a journal file takes on disk: its length, or its blocks where more are set aside past its end."""
    st = path.stat()
    return max(st.st_size, st.st_blocks * 512)


def text_size(path: Path) -> int:
    """Where a journal file's data ends: after its last non-NUL byte.

    The zeros after it are space set aside ahead of the writer, never data; a NUL run with data after
    it is not the end (a block zeroed by a power loss, an editor): the lines after it are kept."""
    with open(path, "rb") as fh:
        end = fh.seek(0, os.SEEK_END)
        while end > 0:
            start = max(0, end - (64 << 10))
            fh.seek(start)
            chunk = fh.read(end - start).rstrip(b"\0")
            if chunk:
                return start + len(chunk)
            end = start
    return 0


@dataclass(frozen=True)
class UnreadableSpan:
    """A run of NUL bytes with data after it, inside a journal file: skipped, and the lines after it read."""
    file: str
    offset: int
    length: int

    def __str__(self) -> str:
        return f"{self.file}: skipped {self.length} unreadable bytes at offset {self.offset}"


_NUL_RUN = re.compile(rb"\0+")


def _split_data(path: Path) -> tuple[bytes, list[UnreadableSpan]]:
    """The file's data with each NUL run inside it cut out (a line break in its place), and those runs."""
    raw = path.read_bytes()
    data = raw[:len(raw.rstrip(b"\0"))]  # the zeros to the end of the file are the unwritten tail
    if b"\0" not in data:
        return data, []
    pieces, spans, at = [], [], 0
    for run in _NUL_RUN.finditer(data):
        piece = data[at:run.start()]
        pieces.append(piece if not piece or piece.endswith(b"\n") else piece + b"\n")  # a cut line ends here
        spans.append(UnreadableSpan(path.name, run.start(), run.end() - run.start()))
        at = run.end()
    pieces.append(data[at:])
    return b"".join(pieces), spans


def journal_data(path: Path) -> bytes:
    """A journal file's text: its data without the zeroed tail, each NUL run inside it cut out."""
    return _split_data(path)[0]


def journal_lines(path: Path) -> Iterator[bytes]:
    """A journal file's lines (each with its newline, the last maybe torn); NUL runs are skipped."""
    yield from journal_data(path).splitlines(keepends=True)


_NOT_NUL = re.compile(rb"[^\0]")


def _nul_runs(path: Path) -> Iterator[UnreadableSpan]:
    """The NUL runs inside a file's data, read a MiB at a time (`conway status` looks at every file)."""
    start, offset = None, 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            at = 0
            while True:
                if start is None:
                    at = chunk.find(b"\0", at)
                    if at < 0:
                        break
                    start = offset + at
                data = _NOT_NUL.search(chunk, at)
                if data is None:
                    break  # the run goes on into the next chunk
                yield UnreadableSpan(path.name, start, offset + data.start() - start)
                start, at = None, data.start()
            offset += len(chunk)
    # a run still open here reaches the end of the file: the zeroed tail, not a span


def unreadable_spans(folder: Path) -> list[UnreadableSpan]:
    """Every NUL run inside the data of the journal's files (the zeroed tail at a file's end is not one)."""
    if not folder.exists():
        return []
    return [span for path in journal_files(folder) for span in _nul_runs(path)]


@dataclass
class JournalReadResult:
    events: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """`file:line` of lines that did not parse (torn writes)."""
    unreadable: list[UnreadableSpan] = field(default_factory=list)
    """NUL runs inside the files' data, skipped (the lines after them are read)."""


def read_journal(folder: Path) -> JournalReadResult:
    """All parseable events in order; unparseable lines are listed, never fatal."""
    result = JournalReadResult()
    for event, where in iter_journal(folder, result.unreadable):
        if event is None:
            result.skipped.append(where)
        else:
            result.events.append(event)
    return result


def iter_journal(folder: Path, unreadable: list[UnreadableSpan] | None = None,
                 ) -> Iterator[tuple[dict[str, Any] | None, str]]:
    """(event, `file:line`) in order, None for a line that does not parse; NUL runs go to `unreadable`."""
    if not folder.exists():
        return
    for path in journal_files(folder):
        data, spans = _split_data(path)
        if unreadable is not None:
            unreadable.extend(spans)
        for n, raw in enumerate(data.splitlines(keepends=True), 1):
            if not raw.strip():
                continue
            try:
                event = json.loads(raw)
                if not isinstance(event, dict) or "kind" not in event:
                    raise ValueError("not an event")
            except ValueError:
                yield None, f"{path.name}:{n}"
                continue
            yield event, f"{path.name}:{n}"


def tail_events(folder: Path, n: int = 10) -> list[dict[str, Any]]:
    """The last n events, reading only the newest files."""
    out: list[dict[str, Any]] = []
    for path in reversed(journal_files(folder)):
        lines = journal_data(path).splitlines()
        for raw in reversed(lines):
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if isinstance(ev, dict):
                out.append(ev)
                if len(out) >= n:
                    return list(reversed(out))
    return list(reversed(out))


OUTCOME_KINDS = ("result", "error", "uncertain", "suppressed", "finish")
"""Events that close the intent before them."""


def intent_verdict(folder: Path) -> tuple[str, dict[str, Any] | None]:
    """Newest-first over the journal tail: was the last intent followed by its outcome?

    ("pending", the intent) when it was not, ("resolved", None) when it was or there is none,
    ("unknown", None) for an empty journal. The journal's intent is fsynced before dispatch, so
    this is the authority; state.json's `pending` copy is a convenience for `status` and may lag.
    """
    events = tail_events(folder, 200) if folder.exists() else []
    for ev in reversed(events):
        if ev.get("kind") in OUTCOME_KINDS or SessionEnd.of(ev):
            return "resolved", None
        intent = Intent.of(ev)
        if intent:
            return "pending", {"step": ev.get("step"), "action": intent.action, "summary": intent.summary,
                               "session": ev.get("session")}
    return ("unknown", None) if not events else ("resolved", None)


def open_intent(folder: Path, state_copy: dict[str, Any] | None) -> dict[str, Any] | None:
    """The intent a previous run left without an outcome, or None: the journal decides (state.json copies
    only actions that may take a while); state.json's copy fills what a torn journal line lost, and stands
    alone only when there is no journal to ask."""
    verdict, intent = intent_verdict(folder)
    copy = state_copy if isinstance(state_copy, dict) else None
    if verdict == "unknown":
        return copy
    if verdict == "resolved" or intent is None:
        return None
    return {**(copy or {}), **{k: v for k, v in intent.items() if v is not None}}

