"""Run one command inside a desktop's box from this machine, as if it ran here: its output on this process's
stdout and stderr, its exit status as this process's.

    python box_run.py CTL_SOCKET CWD TIMEOUT -- ARGV...

The shell tool and everything else that wants a process for a command in a box (so its own timeout, output
bounding and process-group kill keep working) runs this: killing this process hangs up the connection, and the
box's init then kills the command with every descendant. Standard library only (started often: no imports of
Conway). What the box sends is parsed strictly; anything else ends this with exit 125.
"""

import base64
import json
import os
import socket
import sys

_MAX_LINE = 96 << 20


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: box_run.py CTL CWD TIMEOUT -- ARGV...", file=sys.stderr)
        return 125
    ctl, cwd, timeout = argv[0], argv[1], argv[2]
    request = {"op": "run", "argv": argv[4:], "cwd": cwd, "timeout": None if timeout == "-" else float(timeout)}
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(ctl)
        s.sendall((json.dumps(request) + "\n").encode())
    except OSError as exc:
        print(f"the desktop's box does not answer: {exc}", file=sys.stderr)
        return 125
    out, err = sys.stdout.buffer, sys.stderr.buffer
    buf = b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            print("the desktop's box ended the command without saying how", file=sys.stderr)
            return 125
        buf += chunk
        if len(buf) > _MAX_LINE:
            return 125
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                frame = json.loads(line)
                if not isinstance(frame, dict):
                    raise ValueError
                if "o" in frame:
                    out.write(base64.b64decode(frame["o"], validate=True))
                    out.flush()
                    continue
                if "e" in frame:
                    err.write(base64.b64decode(frame["e"], validate=True))
                    err.flush()
                    continue
            except (ValueError, TypeError):
                print("the desktop's box sent something that is not its protocol", file=sys.stderr)
                return 125
            if frame.get("start_error"):
                print(str(frame["start_error"])[:300], file=sys.stderr)
            if frame.get("error"):
                print(str(frame["error"])[:300], file=sys.stderr)
                return 125
            if frame.get("timed_out") is True:
                return 124
            sig = frame.get("signal")
            if isinstance(sig, int):
                return 128 + sig
            rc = frame.get("rc")
            return rc if isinstance(rc, int) and 0 <= rc < 256 else 125


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        os._exit(141)
