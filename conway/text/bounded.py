"""Deterministic head + tail cutting, with the cut announced.

A tool result shown to a model must fit a budget, and the model must know when
it is not seeing everything (AWORG): we keep the first and last parts, which
usually hold the command/header and the error/summary, and say what was cut.
`max` counts kept content only; the announcement line comes on top of it.
Reads that must never block (a FIFO where a file was expected) open through `open_regular`.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO


def announce(head: int, tail: int, total: int, unit: str = "bytes") -> str:
    """The one line that replaces the middle."""
    return f"[... {total - head - tail} {unit} cut: showing first {head} and last {tail} of {total} ...]"


def _join(head: str, tail: str, line: str) -> str:
    # The announcement sits on its own line so it cannot be mistaken for content.
    sep = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{sep}{line}\n{tail}"


def _split(max_len: int) -> tuple[int, int]:
    if max_len < 0:
        raise ValueError("max must be >= 0")
    head = max_len // 2
    return head, max_len - head


def cut_text(text: str, max_chars: int) -> tuple[str, bool]:
    """Keep the first and last `max_chars // 2` characters; (text, truncated)."""
    head_n, tail_n = _split(max_chars)
    if len(text) <= max_chars:
        return text, False
    head, tail = text[:head_n], text[len(text) - tail_n:]
    return _join(head, tail, announce(len(head), len(tail), len(text), "chars")), True


def cut_bytes(data: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """Bytes variant of `cut_text`; the announcement is UTF-8 encoded."""
    buf = HeadTail(max_bytes)
    buf.feed(data)
    if not buf.truncated:
        return bytes(data), False
    head, tail = buf.parts()
    line = announce(len(head), len(tail), buf.total).encode()
    sep = b"" if not head or head.endswith(b"\n") else b"\n"
    return head + sep + line + b"\n" + tail, True


class HeadTail:
    """Streaming head + tail keeper: memory stays O(max_bytes) whatever is fed."""

    def __init__(self, max_bytes: int):
        self.head_cap, self.tail_cap = _split(max_bytes)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or not self.tail_cap:
            return
        if len(chunk) >= self.tail_cap:
            self._tail[:] = chunk[-self.tail_cap:]
        else:
            self._tail += chunk
            # Trim only when twice over so trimming is amortised, not per chunk.
            if len(self._tail) > 2 * self.tail_cap:
                del self._tail[:-self.tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > self.head_cap + self.tail_cap

    def parts(self) -> tuple[bytes, bytes]:
        """(head, tail); when not truncated, head + tail is everything fed."""
        tail = self._tail[-self.tail_cap:] if self.tail_cap else b""
        return bytes(self._head), bytes(tail)

    def text(self) -> tuple[str, bool]:
        """Decoded UTF-8 (bad bytes replaced) with the cut announced in bytes."""
        head, tail = self.parts()
        if not self.truncated:
            return (head + tail).decode("utf-8", "replace"), False
        head, tail = utf8_edges(head, tail)
        line = announce(len(head), len(tail), self.total)
        return _join(head.decode("utf-8", "replace"), tail.decode("utf-8", "replace"), line), True


def utf8_edges(head: bytes, tail: bytes) -> tuple[bytes, bytes]:
    """Drop a multi-byte character split by the cut, so no spurious U+FFFD appears."""
    for back in range(1, min(4, len(head)) + 1):
        byte = head[-back]
        if byte & 0xC0 == 0x80:  # continuation byte: keep looking for the lead
            continue
        need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
        if need > back:
            head = head[:-back]
        break
    skip = 0
    while skip < min(3, len(tail)) and tail[skip] & 0xC0 == 0x80:
        skip += 1
    return head, tail[skip:]


class NotRegularFile(OSError):
    """A FIFO, device or socket where a file was expected: never opened for a blocking read."""


def open_regular(path: os.PathLike[str] | str, *, follow: bool = True) -> BinaryIO:
    """Open a file for reading without ever blocking in open(): a FIFO, socket or device is refused
    (`NotRegularFile`), a folder raises IsADirectoryError; reads of a regular file then never block.
    `follow=False`: a symlink as the last component is refused (ELOOP), never followed."""
    nofollow = 0 if follow else getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | nofollow)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
