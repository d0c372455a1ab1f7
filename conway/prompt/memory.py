"""memory.md: a rolling summary with a length policy.

A memory without a length policy fails silently, so growth past `max_chars`
always triggers compaction: a summariser when one is given (a model), else a
truncation that is marked in the file. The excerpt that was replaced goes to
memory.previous.md, so nothing disappears without a trace.
"""

from __future__ import annotations

import errno
import os
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from conway.bounded import NotRegularFile, open_regular
from conway.store.state import atomic_write_bytes

Summariser = Callable[[str, int], str]
"""(text, target_chars) -> summary; should keep contradictions and open questions."""

TRUNCATION_MARK = "[memory truncated"


class Memory:
    def __init__(self, path: Path, previous: Path, max_chars: int = 8000, keep_chars: int = 4000,
                 summariser: Summariser | None = None):
        self.path, self.previous = path, previous
        self.max_chars, self.keep_chars = max_chars, min(keep_chars, max_chars)
        self.summariser = summariser
        self._known: tuple[int, int] | None = None  # (size, mtime) as last read or written here

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

    def add(self, line: str) -> str | None:
        """Append one line; compact when over the threshold. Returns a note when it compacted."""
        line = line.rstrip("\n") + "\n"
        before = self._stamp()
        ours = before == self._known
        size = before[0] if before else 0
        if size + len(line.encode("utf-8")) <= self.max_chars:
            with open(self.path, "a", encoding="utf-8") as fh:  # the common case: a cheap append
                fh.write(line)
            note = None
        else:
            text, note = self._compact(self._text() + line)
            atomic_write_bytes(self.path, text.encode("utf-8"))
        if ours:
            self._known = self._stamp()
        return note

    def _compact(self, text: str) -> tuple[str, str]:
        atomic_write_bytes(self.previous, text.encode("utf-8"))
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if self.summariser is not None:
            try:
                summary = self.summariser(text, self.keep_chars)
                if summary and len(summary) <= self.max_chars:
                    header = f"[memory summarised {stamp}; the full prior text is in {self.previous.name}]\n"
                    return header + summary.rstrip("\n") + "\n", "memory summarised"
            except Exception as exc:  # a failing summariser must not lose memory: fall back, say why
                reason = f"summariser failed: {exc}"
            else:
                reason = "summary was empty or too long"
        else:
            reason = "no summariser available"
        kept = text[-self.keep_chars:]
        cut = kept.find("\n")
        if 0 <= cut < len(kept) - 1:  # start on a whole line
            kept = kept[cut + 1:]
        dropped = len(text) - len(kept)
        header = (f"{TRUNCATION_MARK} {stamp}: {dropped} older characters dropped ({reason}); "
                  f"the prior text is in {self.previous.name}]\n")
        return header + kept, f"memory truncated ({reason})"
