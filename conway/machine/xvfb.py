"""A private virtual X display (Xvfb) on a free display number, for demos, benchmarks and tests.

Xvfb chooses the number itself and writes it to a pipe (`-displayfd`), so several can run side by side
without racing for a fixed `:99`. Nothing in the agent needs it: a real run uses the user's display.

Xvfb gets an environment built from an allowlist (`xvfb_env`), never Conway's own: that holds the owner's API
keys under whatever names they chose, and an X server that a task desktop talks to has no use for them (its
`/proc/PID/environ` is readable by anything running as the same user).

`-noreset`: by default an X server resets (drops its resources and compiles its keymap again) each time its last
client leaves, which on a display that programs come and go on is every few seconds: a connection made in that
moment can be refused, and whatever a setup step set on the display (resources, keyboard settings) is lost when the
last window closes. A desktop session, OSWorld's included, never resets; neither does this one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass

__all__ = ["XVFB_ENV_KEYS", "XServer", "XvfbError", "start_xvfb", "xvfb_env"]


XVFB_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ")
"""All Xvfb is given of the caller's environment: where programs are (it runs `xkbcomp` to compile keymaps),
and the locale and time zone of its log lines. It needs no HOME, display, bus or credentials."""


def xvfb_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment Xvfb runs with: the allowlisted names of `environ` (default: this process's), and a PATH."""
    source = os.environ if environ is None else environ
    env = {k: source[k] for k in XVFB_ENV_KEYS if k in source}
    env.setdefault("PATH", os.defpath)
    return env


class XvfbError(RuntimeError):
    """Xvfb did not start or did not say which display it took."""


@dataclass
class XServer:
    display: str
    proc: subprocess.Popen[bytes]
    size: tuple[int, int]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_xvfb(width: int = 1280, height: int = 800, depth: int = 24, timeout: float = 10.0) -> XServer:
    """Start Xvfb with one screen of width x height; XvfbError when it is missing, exits or stays silent."""
    r, w = os.pipe()
    try:
        proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", f"{width}x{height}x{depth}", "-nolisten", "tcp",
             "-noreset"],
            pass_fds=(w,), env=xvfb_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except FileNotFoundError:
        os.close(r)
        os.close(w)
        raise XvfbError("Xvfb is not installed (Debian/Ubuntu: apt-get install xvfb)") from None
    os.close(w)
    buf = b""
    deadline = time.monotonic() + timeout
    try:
        os.set_blocking(r, False)
        while not buf.endswith(b"\n"):
            if proc.poll() is not None:
                raise XvfbError(f"Xvfb exited at start (code {proc.returncode})")
            if time.monotonic() > deadline:
                raise XvfbError(f"Xvfb reported no display number within {timeout:g} s")
            try:
                chunk = os.read(r, 64)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            if not chunk:
                raise XvfbError("Xvfb closed its display pipe without a display number")
            buf += chunk
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        os.close(r)
    return XServer(display=":" + buf.decode().strip(), proc=proc, size=(width, height))
