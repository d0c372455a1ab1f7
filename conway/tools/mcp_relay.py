"""Runs a stdio MCP server with its stdout read through a bounded line reader (standard library only).

    python conway/tools/mcp_relay.py MAX_BYTES -- COMMAND [ARG ...]

`conway.tools.mcp` starts every stdio server through this script, run as a
file (it imports nothing of Conway's). The server reads Conway's requests on
the stdin it inherits; each line it writes is passed on unchanged unless it
is longer than MAX_BYTES. Such a line is read to its end without being kept
(linear in its size) and replaced by a JSON-RPC error with the code
`CUT_CODE` for the same request id, carrying the line's size and the head of
its first text: `conway.tools.mcp` turns that into a certain, cut result. A
long line that answers no request is dropped, said on stderr. Signals are
passed to the server; the relay exits with its exit status.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

CUT_CODE = -32042
"""The JSON-RPC error code of an answer cut by the relay (in the range JSON-RPC leaves to implementations)."""
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_STRING_BODY = re.compile(rb'(?:[^"\\]|\\.)*')
_TEXT_SHOWN = 16_000


def _text_head(head: bytes) -> str:
    """The start of the first `"text"` string in a cut JSON line (decoded), else the raw start of the line."""
    at = head.find(b'"text":"')
    if at < 0:
        at = head.find(b'"text": "')
        at = at + 9 if at >= 0 else -1
    else:
        at += 8
    if at < 0:
        return head[:_TEXT_SHOWN].decode("utf-8", "replace")
    body = _STRING_BODY.match(head, at).group(0)[: _TEXT_SHOWN * 2]
    for trim in range(7):  # an escape cut in half (\u12…) cannot be decoded: drop its start
        try:
            text = json.loads('"' + body[: len(body) - trim].decode("utf-8", "ignore") + '"')
            return text[:_TEXT_SHOWN]
        except ValueError:
            continue
    return body[:_TEXT_SHOWN].decode("utf-8", "replace")


def cut_answer(head: bytes, size: int, max_bytes: int) -> bytes | None:
    """The error line that replaces an answer of `size` bytes whose first `max_bytes` are `head`."""
    found = _ID.search(head[:4096])
    if found is None or b'"method"' in head[: found.start()]:
        return None
    message = {"jsonrpc": "2.0", "id": json.loads(found.group(1)),
               "error": {"code": CUT_CODE, "message": f"the answer was {size} bytes, over the {max_bytes} read",
                         "data": {"bytes": size, "read": max_bytes, "text": _text_head(head)}}}
    return json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def relay(src: int, dst: int, max_bytes: int) -> None:
    """Copy lines from `src` to `dst`, replacing each line over `max_bytes` (see the module docstring)."""
    line = bytearray()
    size = 0
    while True:
        chunk = os.read(src, 1 << 16)
        if not chunk:
            break
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            size += len(piece)
            if len(line) < max_bytes:
                line += piece[: max_bytes - len(line)]
            if end < 0:
                break
            if size <= max_bytes:
                _write(dst, bytes(line) + b"\n")
            else:
                out = cut_answer(bytes(line), size, max_bytes)
                if out is not None:
                    _write(dst, out)
                else:
                    sys.stderr.write(f"conway relay: dropped a {size}-byte line that answers no request\n")
                    sys.stderr.flush()
            line.clear()
            size = 0
            start = end + 1


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: mcp_relay.py MAX_BYTES -- COMMAND [ARG ...]\n")
        return 2
    max_bytes, command = int(argv[0]), argv[2:]
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, bufsize=0)
    except OSError as exc:
        sys.stderr.write(f"cannot start: {exc.strerror}: {command[0]}\n")
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    assert child.stdout is not None
    try:
        relay(child.stdout.fileno(), sys.stdout.fileno(), max_bytes)
    except OSError:  # Conway closed our stdout: the server is on its own until its stdin closes
        pass
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
