"""A stand-in for PyAutoGUI inside a task's sandbox: the calls OSWorld's task files make, done with xdotool.

OSWorld's setup and postconfig steps run `python -c "import pyautogui; pyautogui.hotkey('ctrl', 's')"` on its
VM, where PyAutoGUI is installed. Debian ships no PyAutoGUI, and the sandbox sees only the system's Python, so
the disposable desktop puts this module on the sandbox's PYTHONPATH under PyAutoGUI's name (`/run/conway/lib`).
It is a stand-in, named as one: it implements the key, click, move, type and scroll calls those steps use (and
`size`, `position`), each one `xdotool` command on the task's display; anything else raises AttributeError.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

FAILSAFE = True
PAUSE = 0.1
STANDIN = True
"""Marks this module as the desktop's stand-in (the real PyAutoGUI has no such name)."""

_KEYS = {"ctrl": "ctrl", "ctrlleft": "Control_L", "ctrlright": "Control_R", "control": "ctrl", "alt": "alt",
         "altleft": "Alt_L", "altright": "Alt_R", "shift": "shift", "shiftleft": "Shift_L", "shiftright": "Shift_R",
         "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape", "tab": "Tab", "space": "space",
         " ": "space", "backspace": "BackSpace", "delete": "Delete", "del": "Delete", "insert": "Insert",
         "up": "Up", "down": "Down", "left": "Left", "right": "Right", "home": "Home", "end": "End",
         "pageup": "Prior", "pgup": "Prior", "pagedown": "Next", "pgdn": "Next", "win": "super", "winleft": "super",
         "super": "super", "command": "super", "capslock": "Caps_Lock", "printscreen": "Print", "menu": "Menu"}
_BUTTONS = {"left": "1", "middle": "2", "right": "3", "primary": "1", "secondary": "3"}


def _xdotool(*args: str) -> None:
    subprocess.run(["xdotool", *args], check=False, timeout=30, stdin=subprocess.DEVNULL)
    if PAUSE:
        time.sleep(PAUSE)


def _key(name: str) -> str:
    low = str(name).lower()
    if low in _KEYS:
        return _KEYS[low]
    if len(low) > 1 and low[0] == "f" and low[1:].isdigit():
        return low.upper()
    return str(name)


def _flat(keys: tuple) -> list[str]:
    out: list[str] = []
    for k in keys:
        out += [str(x) for x in k] if isinstance(k, (list, tuple)) else [str(k)]
    return out


TERMINAL = "lxterminal"
"""The desktop's terminal (`conway.sandbox.desktop.TERMINAL`; this module is the box's and imports nothing of Conway)."""
TERMINAL_WAIT_S = 50.0
"""Inside a setup step's 60 s (OSWorld's command timeout), leaving the step's own sleeps their time."""
TERMINAL_STARTS = 3
"""Under load a starting X client is sometimes refused ("Can't open display"), so one that ends in an error is
started again, as the setup's launch step does; a terminal that ends cleanly has handed its window to a running
one (LXTerminal is one process per display)."""


def _terminal_windows() -> set[str]:
    """The terminal's mapped windows (by their class: a helper window another program maps meanwhile is not it)."""
    done = subprocess.run(["xdotool", "search", "--onlyvisible", "--class", TERMINAL], capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    return set(done.stdout.split())


def _open_terminal(keys: list[str]) -> bool:
    """Ctrl+Alt+T is GNOME's shortcut for a terminal, and the desktop has no GNOME to catch the keys: the stand-in
    does what GNOME does, at the moment the keys are pressed (what a step types after it, `write('stty size')`,
    goes into the terminal, as on OSWorld's VM). The terminal is started in a session of its own, so it outlives
    the step's command; the call returns once its window is shown and has the focus."""
    if sorted(k.lower() for k in keys) != ["alt", "ctrl", "t"] or shutil.which(TERMINAL) is None:
        return False
    before = _terminal_windows()

    def start() -> subprocess.Popen:
        return subprocess.Popen([TERMINAL], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)

    terminal, starts = start(), 1
    deadline = time.monotonic() + TERMINAL_WAIT_S
    while time.monotonic() < deadline:
        new = _terminal_windows() - before
        if new:
            window = min(new, key=int)
            _xdotool("windowraise", window)
            _xdotool("windowfocus", "--sync", window)
            return True
        if terminal.poll() not in (None, 0) and starts < TERMINAL_STARTS:
            terminal, starts = start(), starts + 1
        time.sleep(0.1)
    return True  # no window: the step's check (or its activate_window) says so


def hotkey(*keys, **_ignored) -> None:
    flat = _flat(keys)
    if _open_terminal(flat):
        return
    _xdotool("key", "--clearmodifiers", "+".join(_key(k) for k in flat))


def press(keys, presses: int = 1, interval: float = 0.0, **_ignored) -> None:
    for _ in range(max(1, int(presses))):
        for k in _flat((keys,)):
            _xdotool("key", _key(k))
            time.sleep(interval)


def keyDown(key, **_ignored) -> None:  # PyAutoGUI's name
    _xdotool("keydown", _key(key))


def keyUp(key, **_ignored) -> None:  # PyAutoGUI's name
    _xdotool("keyup", _key(key))


def write(message, interval: float = 0.0, **_ignored) -> None:
    if isinstance(message, (list, tuple)):
        press(message, interval=interval)
        return
    _xdotool("type", "--delay", str(int(interval * 1000) or 12), "--", str(message))


typewrite = write


def moveTo(x=None, y=None, duration: float = 0.0, **_ignored) -> None:  # PyAutoGUI's name
    if x is not None and y is not None:
        _xdotool("mousemove", str(int(x)), str(int(y)))


def click(x=None, y=None, clicks: int = 1, interval: float = 0.0, button: str = "left", **_ignored) -> None:
    if isinstance(x, (list, tuple)):
        x, y = x[0], x[1]
    moveTo(x, y)
    _xdotool("click", "--repeat", str(max(1, int(clicks))), "--delay", str(int(interval * 1000) or 50),
             _BUTTONS.get(str(button), "1"))


def doubleClick(x=None, y=None, **kw) -> None:  # PyAutoGUI's name
    click(x, y, clicks=2, **kw)


def rightClick(x=None, y=None, **kw) -> None:  # PyAutoGUI's name
    click(x, y, button="right", **kw)


def scroll(clicks, x=None, y=None, **_ignored) -> None:
    moveTo(x, y)
    n = int(clicks)
    if n:
        _xdotool("click", "--repeat", str(abs(n)), "4" if n > 0 else "5")


def size() -> tuple[int, int]:
    out = subprocess.run(["xdotool", "getdisplaygeometry"], capture_output=True, text=True, timeout=30).stdout.split()
    return (int(out[0]), int(out[1])) if len(out) == 2 else (0, 0)


def position() -> tuple[int, int]:
    out = subprocess.run(["xdotool", "getmouselocation", "--shell"], capture_output=True, text=True, timeout=30)
    pos = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    return int(pos.get("X", 0)), int(pos.get("Y", 0))


def sleep(seconds: float) -> None:
    time.sleep(seconds)


if not os.environ.get("DISPLAY"):
    raise ImportError("pyautogui (the desktop's stand-in) needs DISPLAY")
