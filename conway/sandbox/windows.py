"""Top-level windows on an X display, through xdotool (the setup steps wait for, and activate, windows).

Run on the host against the desktop's display: a window's _NET_WM_PID is a pid inside the sandbox's pid
namespace, so windows are found by appearing (a set difference) or by name/class, never by pid.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import subprocess


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



class _ClientMessage(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong),
                ("format", ctypes.c_int), ("data", ctypes.c_long * 5), ("pad", ctypes.c_long * 12)]


def _send_delete(display: str, window: int) -> bool:
    """WM_DELETE_WINDOW to `window` (what a window manager's close button sends), through libX11."""
    path = ctypes.util.find_library("X11")
    if path is None:
        return False
    x11 = ctypes.CDLL(path)
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
    x11.XFlush.argtypes = x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    dpy = x11.XOpenDisplay(display.encode())
    if not dpy:
        return False
    try:
        event = _ClientMessage(type=33, send_event=1, display=dpy, window=window, format=32,  # 33: ClientMessage
                               message_type=x11.XInternAtom(dpy, b"WM_PROTOCOLS", 0))
        event.data[0] = x11.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
        ok = x11.XSendEvent(dpy, window, 0, 0, ctypes.byref(event)) != 0
        x11.XFlush(dpy)
        return ok
    finally:
        x11.XCloseDisplay(dpy)


def close(display: str, window: int) -> bool:
    """Ask `window` to close as a window manager's close button does (WM_DELETE_WINDOW: the application saves its
    state and exits cleanly, as OSWorld's `close_window` with its window manager); without libX11, xdotool
    destroys the window."""
    if _send_delete(display, window):
        return True
    try:
        return _xdotool(display, "windowclose", str(window)).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
