"""`llama-runtime.log`: what a model server or in-process llama.cpp prints, kept private, bounded and clean.

    log = RuntimeLog(home.runtime_log)
    log.begin("conway starts llama-server: …")   # rotates a full log, starts this start's tail
    log.pump(proc.stdout)                         # a server's output, line by line, in a thread
    log.write(data)                               # or a captured block of fd-2 output
    log.tail()                                    # the last lines of *this* start, for an error message

The file is 0600 (prompts and paths are private). Each line is redacted
(`conway.redact.redact_text`); libmtmd's `add_text:` debug lines, which carry
the whole prompt, are dropped. A start that finds the file over `MAX_BYTES`
moves it to `llama-runtime.log.1` (one old copy kept); one start writes at
most `MAX_BYTES`, then says once that the rest was dropped.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path
from typing import IO

from conway.redact import redact_text

__all__ = ["RuntimeLog", "MAX_BYTES", "TAIL_LINES", "PROMPT_MARKERS"]

MAX_BYTES = 4 * 1024 * 1024
"""One start writes at most this much; a start that finds the file larger rotates it first."""
TAIL_LINES = 25
PROMPT_MARKERS = ("add_text:",)
"""libmtmd's debug lines that print prompt text; never written."""
_LINE_MAX = 4000  # a line longer than this (a prompt, a tensor dump) is cut: the log is for diagnostics


class RuntimeLog:
    """The home's runtime log; one instance per server or in-process model."""

    def __init__(self, path: Path):
        self.path = path
        self._lines: deque[str] = deque(maxlen=TAIL_LINES)
        self._written = 0
        self._capped = False
        self._lock = threading.Lock()

    def begin(self, header: str) -> None:
        """Start this start's section: rotate a full log, forget the previous tail, write `header`."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if self.path.stat().st_size > MAX_BYTES:
                os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        except FileNotFoundError:
            pass
        with self._lock:
            self._lines.clear()
            self._written = 0
            self._capped = False
        self.note(header)

    def note(self, line: str) -> None:
        """A line of Conway's own (a header, ready, stopped): written, not part of the tail."""
        self._append(f"=== {line}\n", tail=False)

    def write(self, data: bytes | str) -> None:
        """Output of the model runtime: filtered, redacted, capped, appended."""
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        for line in text.splitlines():
            self._line(line)

    def pump(self, stream: IO[bytes]) -> threading.Thread:
        """Copy `stream` (a server's stdout) into the log line by line until it ends, in a daemon thread."""
        def run() -> None:
            try:
                for raw in iter(stream.readline, b""):
                    self._line(raw.decode("utf-8", "replace").rstrip("\r\n"))
            except (OSError, ValueError):
                pass
            finally:
                try:
                    stream.close()
                except OSError:
                    pass

        thread = threading.Thread(target=run, name="runtime-log", daemon=True)
        thread.start()
        return thread

    def tail(self, n: int = TAIL_LINES) -> str:
        """The last `n` lines this start wrote (never a previous run's)."""
        with self._lock:
            lines = list(self._lines)[-n:]
        return "\n".join(lines) if lines else "(no output)"

    def _line(self, line: str) -> None:
        if any(m in line for m in PROMPT_MARKERS):
            return
        if len(line) > _LINE_MAX:
            line = line[:_LINE_MAX] + f" [... {len(line) - _LINE_MAX} chars cut]"
        line = redact_text(line)
        with self._lock:
            self._lines.append(line)
        self._append(line + "\n", tail=True)

    def _append(self, text: str, *, tail: bool) -> None:
        data = text.encode("utf-8", "replace")
        with self._lock:
            if tail and self._capped:
                return
            if tail and self._written + len(data) > MAX_BYTES:
                self._capped = True
                data = f"=== conway: this start's output passed {MAX_BYTES} bytes; the rest is dropped\n".encode()
            self._written += len(data)
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            except OSError:
                return
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, data)
            except OSError:
                pass
            finally:
                os.close(fd)
