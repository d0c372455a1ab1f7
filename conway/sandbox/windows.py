"""Top-level windows on an X display, through xdotool (the setup steps wait for, and activate, windows).

Run on the host against the desktop's display: a window's _NET_WM_PID is a pid inside the sandbox's pid
namespace, so windows are found by appearing (a set difference) or by name/class, never by pid.
"""

from __future__ import annotations

import os
import re
import subprocess
import time


def _xdotool(display: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["xdotool", *args], env={**os.environ, "DISPLAY": display}, capture_output=True,
                          text=True, timeout=10, stdin=subprocess.DEVNULL)


def visible_windows(display: str) -> set[int]:
    """The ids of the mapped windows (the root included); empty when xdotool is missing or finds none."""
    try:
        done = _xdotool(display, "search", "--onlyvisible", "--name", "")
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {int(w) for w in done.stdout.split() if w.isdigit()}


def wait_for_new_window(display: str, before: set[int], timeout_s: float) -> int | None:
    """The first mapped window not in `before` within `timeout_s`, or None."""
    deadline = time.monotonic() + timeout_s
    while True:
        new = visible_windows(display) - before
        if new:
            return min(new)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def find_windows(display: str, name: str, *, strict: bool = False, by_class: bool = False) -> list[int]:
    """Mapped windows whose title (or WM_CLASS) contains `name`, or equals it when `strict`."""
    pattern = f"^{re.escape(name)}$" if strict else re.escape(name)
    try:
        done = _xdotool(display, "search", "--onlyvisible", "--class" if by_class else "--name", pattern)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(w) for w in done.stdout.split() if w.isdigit()]


def activate(display: str, window: int) -> bool:
    """Raise and focus `window`. With no window manager (a bare Xvfb) `windowactivate` has nobody to ask, so
    the window is raised and given the input focus directly."""
    def ok(*args: str) -> bool:
        try:
            return _xdotool(display, *args, str(window)).returncode == 0
        except (OSError, subprocess.TimeoutExpired):  # --sync waits for the change: bounded by _xdotool
            return False
    return ok("windowactivate", "--sync") or (ok("windowraise") and ok("windowfocus", "--sync"))
