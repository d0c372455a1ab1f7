"""Facts about the platform Conway runs on, shared by the observer, the tools and doctor."""

from __future__ import annotations

import os
import socket
import sys


def x11_platform() -> bool:
    """True where the screen and input go through an X server (everything but macOS and Windows)."""
    return not (sys.platform == "darwin" or sys.platform.startswith("win"))


def display_problem(display: str | None = None, timeout_s: float = 2.0) -> str | None:
    """``None`` when the X display accepts connections, else why not.

    Cheap (one socket connect, no X handshake) and bounded by ``timeout_s``,
    so it is safe to call before every dispatch. ``display`` defaults to
    ``$DISPLAY``. On macOS and Windows there is no X server to check and the
    answer is always ``None``: the platform's own screen is used.
    """
    if not x11_platform():
        return None
    name = os.environ.get("DISPLAY") if display is None else display
    if not name:
        if os.environ.get("WAYLAND_DISPLAY"):
            return "DISPLAY is not set (a Wayland session without XWayland; Conway needs X11)"
        return "DISPLAY is not set (no X display)"
    host, sep, rest = name.rpartition(":")
    number = rest.split(".", 1)[0]
    if not sep or not number.isdigit():
        return f"DISPLAY={name!r} is not a valid X display name (expected [host]:N[.S])"
    n = int(number)
    try:
        if host in ("", "unix") or host.startswith("/"):
            path = host if host.startswith("/") else f"/tmp/.X11-unix/X{n}"
            candidates = [path] if host.startswith("/") else ["\0" + path, path]
            last: OSError | None = None
            for addr in candidates:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(timeout_s)
                try:
                    s.connect(addr)
                    return None
                except OSError as exc:
                    last = exc
                finally:
                    s.close()
            reason = last.strerror if last and last.strerror else str(last)
            return f"X display {name} is unreachable ({path}: {reason})"
        with socket.create_connection((host, 6000 + n), timeout=timeout_s):
            return None
    except OSError as exc:
        return f"X display {name} is unreachable ({exc.strerror or exc})"
