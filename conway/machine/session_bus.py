"""Never start a D-Bus session bus by accident.

A program that wants the session bus and finds none (no DBUS_SESSION_BUS_ADDRESS,
no `$XDG_RUNTIME_DIR/bus`) while DISPLAY is set autolaunches one: `dbus-launch
--autolaunch` forks a `dbus-daemon --session` that outlives everything and writes
`~/.dbus/session-bus/` into the real home. Python's `webbrowser` lookup does it
(`xdg-settings get default-web-browser` asks the bus), so any command that looked
for a browser with DISPLAY set left both behind. Where there is no bus to find,
the programs Conway starts for such a lookup are told there is none.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ADDRESS = "DBUS_SESSION_BUS_ADDRESS"
NO_BUS = "disabled:"
"""An address libdbus and GDBus both take as set but cannot connect to: neither autolaunches then."""
_lock = threading.Lock()


def session_bus_known() -> bool:
    """A session bus is named (DBUS_SESSION_BUS_ADDRESS) or sits where libdbus and GDBus look before they
    autolaunch one (`$XDG_RUNTIME_DIR/bus`)."""
    if os.environ.get(ADDRESS):
        return True
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return bool(runtime) and Path(runtime, "bus").exists()


@contextmanager
def no_bus_autolaunch() -> Iterator[None]:
    """While inside, the programs this process starts cannot autolaunch a session bus (a bus that exists is
    left as it is). os.environ is changed for the while, not passed: `webbrowser` starts its helpers with it."""
    with _lock:
        if session_bus_known():
            yield
            return
        os.environ[ADDRESS] = NO_BUS
        try:
            yield
        finally:
            if os.environ.get(ADDRESS) == NO_BUS:
                del os.environ[ADDRESS]
