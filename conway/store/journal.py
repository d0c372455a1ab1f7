"""The append-only JSONL journal: one event per line, versioned, rotated by size.

Lines are only ever appended. A torn last line (the process died mid-write) is
isolated behind a newline on the next open and skipped by readers, with a
recovery event saying so.
"""

from __future__ import annotations

import errno
import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Literal

from conway.store.events import Intent, SessionEnd

SCHEMA = "conway-event/1"
EventKind = Literal["intent", "result", "error", "uncertain", "recovery", "control", "observation",
                    "decision", "suppressed", "finish", "session", "memory"]
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


RESERVE_BYTES = 64 << 10
"""Space set aside in `journal/.reserve`: freed on a full disk so the run's last events still fit."""


class Journal:
    def __init__(self, folder: Path, max_file_bytes: int = 8 << 20, max_total_bytes: int = 512 << 20,
                 fsync: str = "intents"):
        self.folder = folder
        self.max_total_bytes = max_total_bytes
        self.max_file_bytes = min(max_file_bytes, max_total_bytes)  # one file alone never passes the cap
        self.fsync_mode = fsync
        self.folder.mkdir(parents=True, exist_ok=True)
        self._fh = None
        self._path: Path | None = None
        self._size = 0
        self.torn_on_open: str | None = None
        self._open_latest()
        self._make_reserve()

    def _make_reserve(self) -> None:
        reserve = self.folder / ".reserve"
        try:
            if not reserve.exists() or reserve.stat().st_size < RESERVE_BYTES:
                with open(reserve, "wb") as fh:  # written, not sparse: the blocks are really taken
                    fh.write(b"\0" * RESERVE_BYTES)
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
        if files and files[-1].stat().st_size < self.max_file_bytes:
            path = files[-1]
            with open(path, "rb") as fh:
                fh.seek(max(0, path.stat().st_size - 1))
                last = fh.read(1)
            self._open(path)
            self._enforce_total()  # the cap may have been lowered since the last run
            if last not in (b"", b"\n"):  # isolate a torn tail so the next event starts clean
                self._fh.write(b"\n")  # type: ignore[union-attr]
                self._fh.flush()  # type: ignore[union-attr]
                self._size += 1
                self.torn_on_open = path.name
        else:
            self._rotate()

    def _open(self, path: Path) -> None:
        if self._fh:
            self._fh.close()
        self._fh = open(path, "ab")
        self._path = path
        self._size = path.stat().st_size

    def _rotate(self) -> None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        existing = journal_files(self.folder)
        seq = (int(existing[-1].name.split("-")[0]) + 1) if existing else 1
        self._open(self.folder / f"{seq:06d}-{stamp}.jsonl")
        self._enforce_total()

    def _enforce_total(self, current: int = 0) -> None:
        """Delete the oldest files until they fit beside a full current file: the cap counts it too.

        `current`: the size the file being written is about to reach when one event alone is
        bigger than a file (a large tool output under small caps); room is made for that too.
        """
        budget = self.max_total_bytes - max(self.max_file_bytes, current)
        closed = [(f, f.stat().st_size) for f in journal_files(self.folder) if f != self._path]
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
        if self._size and self._size + len(line) > self.max_file_bytes:
            self._rotate()
        if self._size + len(line) > self.max_file_bytes:  # one event bigger than a whole file
            self._enforce_total(self._size + len(line))
        if self._fh is None:  # an earlier failed write could not reopen the file
            raise JournalUnwritable(errno.EBADF, "the journal file could not be reopened", str(self._path))
        try:
            self._fh.write(line)
            self._fh.flush()
        except OSError as exc:
            self._drop_partial()
            raise JournalUnwritable(exc.errno, exc.strerror, str(self._path)) from None  # say which file
        self._size += len(line)
        if sync is None:
            sync = self.fsync_mode == "all" or (self.fsync_mode == "intents" and event["kind"] == "intent")
        if sync and self.fsync_mode != "none":
            os.fsync(self._fh.fileno())

    def _drop_partial(self) -> None:
        """A failed write (a full disk) must not leave half a line: cut the file back to its last whole line."""
        assert self._fh is not None and self._path is not None
        try:
            self._fh.close()  # drops whatever the buffer still held (its flush fails the same way)
        except OSError:
            pass
        try:
            os.truncate(self._path, self._size)
        except OSError:
            pass
        try:
            self._fh = open(self._path, "ab")
        except OSError:
            self._fh = None  # the next append says so (JournalUnwritable), no write to a closed file

    def close(self) -> None:
        if self._fh:
            fh, self._fh = self._fh, None
            fh.close()


class JournalUnwritable(OSError):
    """A journal line could not be written (a full disk, a file made read-only …); errno and file say which."""


def journal_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.jsonl") if p.name.split("-")[0].isdigit())


@dataclass
class JournalReadResult:
    events: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """`file:line` of lines that did not parse (torn writes)."""


def read_journal(folder: Path) -> JournalReadResult:
    """All parseable events in order; unparseable lines are listed, never fatal."""
    result = JournalReadResult()
    for event, where in iter_journal(folder):
        if event is None:
            result.skipped.append(where)
        else:
            result.events.append(event)
    return result


def iter_journal(folder: Path) -> Iterator[tuple[dict[str, Any] | None, str]]:
    if not folder.exists():
        return
    for path in journal_files(folder):
        with open(path, "rb") as fh:
            for n, raw in enumerate(fh, 1):
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
        lines = path.read_bytes().splitlines()
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

