"""Can this Python read AT-SPI: the one answer the observer's snapshots, a task's terminal text and a task's
accessibility tree all depend on.

Each of them runs a helper script with this interpreter (`sys.executable`) that
imports PyGObject's `gi` and loads the Atspi typelib; without either the helper
reads nothing, and a reader that reads nothing must not pass for one that read
an empty screen. Found, not imported: importing `gi` starts GLib in this process.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Callable

PYGOBJECT = "PyGObject<3.51"
"""What the `atspi` extra installs (3.51 and later need girepository-2.0, which Debian 12 lacks)."""
BUILD_NEEDS = "apt-get install libgirepository1.0-dev libcairo2-dev pkg-config gir1.2-atspi-2.0"
"""What PyGObject builds against and what it loads (it ships no Linux wheel): said with every refusal."""
TYPELIB_DIRS = ("/usr/lib/x86_64-linux-gnu/girepository-1.0", "/usr/lib/aarch64-linux-gnu/girepository-1.0",
                "/usr/lib/girepository-1.0", "/usr/lib64/girepository-1.0", "/usr/local/lib/girepository-1.0")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def atspi_missing(importable: Callable[[str], bool] = _importable,
                  typelib_dirs: tuple[str, ...] | None = None) -> str | None:
    """None when this interpreter can read AT-SPI (PyGObject and the Atspi-2.0 typelib), else why not and how to
    install it, in one line."""
    if not importable("gi"):
        return (f"PyGObject is not installed in this Python ({BUILD_NEEDS}, then pip install 'conway[atspi]')")
    dirs = list(TYPELIB_DIRS if typelib_dirs is None else typelib_dirs)
    dirs += [d for d in os.environ.get("GI_TYPELIB_PATH", "").split(":") if d]
    if not any(Path(d, "Atspi-2.0.typelib").is_file() for d in dirs):
        return "the Atspi-2.0 typelib was not found (apt-get install gir1.2-atspi-2.0)"
    return None


DESKTOP_PYTHON = "/usr/bin/python3"
"""The interpreter a task desktop's readers run with: the system's, inside the desktop's box (docs/desktop.md#the-box)."""
SYSTEM_GI = ("/usr/lib/python3/dist-packages/gi/__init__.py",)
"""Where Debian's python3-gi puts PyGObject for the system's Python."""


def desktop_atspi_missing(gi_paths: tuple[str, ...] = SYSTEM_GI,
                          typelib_dirs: tuple[str, ...] | None = None) -> str | None:
    """None when a task desktop's readers can read AT-SPI: the system's Python with Debian's PyGObject
    (python3-gi) and the Atspi-2.0 typelib (they run inside the desktop's box, not in this interpreter); else why
    not and how to install it, in one line. Found, not imported."""
    if not any(Path(p).is_file() for p in gi_paths):
        return f"the desktop's Python ({DESKTOP_PYTHON}) has no PyGObject (apt-get install python3-gi)"
    return atspi_missing(importable=lambda module: True, typelib_dirs=typelib_dirs)
