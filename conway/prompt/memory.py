"""memory.md: a rolling summary with a length policy.

A memory without a length policy fails silently, so growth past `max_chars`
always leads to compaction: a model's summary when one was written and passed
its checks (`conway.prompt.summary`), else a truncation that is marked in the
file. Steps are only appended (`add`); the loop compacts between cycles
(`conway/loop/memory_upkeep.py`), never between a decision and its dispatch.
The text that was replaced goes to memory.previous.md, so nothing disappears
without a trace, and pinned lines (`!pin …`) survive every compaction.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from conway.store.state import atomic_write_bytes
from conway.text.bounded import NotRegularFile, open_regular

TRUNCATION_MARK = "[memory truncated"
SUMMARY_MARK = "[memory summarised"
REASON_MAX_CHARS = 160
"""The truncation's mark says why in at most this many characters, and a quarter of keep_chars (the journal keeps
the whole reason)."""
PIN_PREFIX = "!pin"
"""A line of memory.md whose text starts with this (after any indentation) is pinned: a summary must keep it
word for word, and a truncation keeps it too."""


def pinned_lines(text: str) -> list[str]:
    """The pinned lines of `text`, stripped, in order (each once)."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(PIN_PREFIX):
            seen.setdefault(line, None)
    return list(seen)


@dataclass
class Compacted:
    """What one compaction wrote."""

    summarised: bool
    text: str
    """The new memory.md."""
    dropped_chars: int
    """Characters of the old text no longer in memory.md (all of them in memory.previous.md)."""
    reason: str | None
    """Why it was truncated instead of summarised (None when summarised)."""


class Memory:
    def __init__(self, path: Path, previous: Path, max_chars: int = 8000, keep_chars: int = 4000):
        self.path, self.previous = path, previous
        self.max_chars, self.keep_chars = max_chars, min(keep_chars, max_chars)
        self._known: tuple[int, int] | None = None  # (size, mtime) as last read or written here
        self.compactions = 0
        """How many times this run rewrote memory.md (the prompt rereads it when this changes)."""

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the append (and the read) for good
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(self.path))
        return st.st_size, st.st_mtime_ns

    def read(self) -> str:
        self._known = self._stamp()
        return self._text()

    def _text(self) -> str:
        try:
            with open_regular(self.path) as fh:
                return fh.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def edited_elsewhere(self) -> bool:
        """Whether memory.md changed since it was last read, other than by `add`."""
        return self._stamp() != self._known

    def add(self, line: str) -> None:
        """Append one line (a cheap append; compaction is the loop's, between cycles: `due`, `compact`)."""
        line = line.rstrip("\n") + "\n"
        ours = self._stamp() == self._known  # a FIFO in its place is refused here: the append would block
        # One write(2) on an O_APPEND descriptor: the text layer of open() cost more than the append itself.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            data = line.encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
        if ours:
            self._known = self._stamp()

    def due(self) -> bool:
        """memory.md has grown past `max_chars` (in bytes, as stat says: never fewer than its characters)."""
        stamp = self._stamp()
        return stamp is not None and stamp[0] > self.max_chars

    def text(self) -> str:
        """memory.md as it is now (what a compaction starts from)."""
        return self._text()

    def compact(self, text: str, summary: str | None, reason: str | None) -> Compacted | None:
        """Replace memory.md by `summary` (checked by the caller), else by the marked truncation saying `reason`.
        `text` (what the summary was made from) goes to memory.previous.md first; lines appended since are kept.
        None, and nothing written, when memory.md was edited meanwhile (the owner's edit is never overwritten)."""
        now = self._text()
        if not now.startswith(text):
            return None
        since = now[len(text):]
        atomic_write_bytes(self.previous, text.encode("utf-8"))
        stamp = _stamp_now()
        if summary is not None:
            new = self._summary_header(stamp) + summary.rstrip("\n") + "\n" + since
            done = Compacted(True, new, len(text), None)
        else:
            new, dropped = self._truncated(text, reason or "no summary", stamp)
            new += since
            done = Compacted(False, new, dropped, reason)
        atomic_write_bytes(self.path, new.encode("utf-8"))
        self._known = self._stamp()
        self.compactions += 1
        return done

    def _summary_header(self, stamp: str) -> str:
        return f"{SUMMARY_MARK} {stamp}; the full prior text is in {self.previous.name}]\n"

    def summary_target(self) -> int:
        """Characters a summary may have: `keep_chars` less its header line (so memory.md ends at `keep_chars`)."""
        return max(1, self.keep_chars - len(self._summary_header(_stamp_now())))

    def _truncated(self, text: str, reason: str, stamp: str) -> tuple[str, int]:
        """The newest whole lines of `text` that fit, with the mark, in `keep_chars`. Pinned lines are never
        dropped: they are gathered first (in their order) and count against `keep_chars`."""
        pins = pinned_lines(text)
        pinned = "".join(p + "\n" for p in pins)
        cap = min(REASON_MAX_CHARS, self.keep_chars // 4)  # the mark must leave room for what it marks
        reason = reason if len(reason) <= cap else reason[:cap - 1] + "…"
        header_n = len(self._truncation_header(stamp, 10 ** len(str(len(text))), reason))  # the widest count
        room = self.keep_chars - header_n - len(pinned)
        lines = [ln for ln in text.splitlines(keepends=True) if ln.strip() not in pins]
        kept: list[str] = []
        for line in reversed(lines):
            if len(line) > room:
                break
            kept.append(line)
            room -= len(line)
        if not kept and lines and room > 0:  # one line longer than the room: its end
            kept.append(lines[-1][-room:])
        body = pinned + "".join(reversed(kept))
        dropped = max(0, len(text) - len(body))
        return self._truncation_header(stamp, dropped, reason) + body, dropped

    def _truncation_header(self, stamp: str, dropped: int, reason: str) -> str:
        return (f"{TRUNCATION_MARK} {stamp}: {dropped} older characters dropped ({reason}); "
                f"the prior text is in {self.previous.name}]\n")


def _stamp_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
