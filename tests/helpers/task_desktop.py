"""What the `conway tasks run` tests need of the machine: a real disposable desktop and the suite's apps."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from conway.sandbox.environment import BubblewrapEnvironment

REPO = Path(__file__).resolve().parents[2]
APPS = (("Xvfb", "xvfb"), ("dbus-daemon", "dbus"), ("xdotool", "xdotool"), ("lxterminal", "lxterminal"),
        ("mousepad", "mousepad"), ("chromium", "chromium"), ("xdg-open", "xdg-utils"))


OSWORLD_APPS = (("soffice", "libreoffice-calc libreoffice-writer libreoffice-impress"), ("gimp", "gimp"),
                ("vlc", "vlc"), ("thunderbird", "thunderbird"), ("socat", "socat"), ("nautilus", "nautilus"))
"""The applications OSWorld's tasks use (scripts/test.sh installs them)."""


def _installed(module: str) -> bool:
    """Found, not imported (pyautogui cannot be imported without a display)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def need_desktop(apps: tuple[tuple[str, str], ...] = ()) -> None:
    """Skip (fail where CONWAY_REQUIRE_DESKTOP=1, as in CI) unless bubblewrap works and the apps are here."""
    missing = [f"{tool} (apt-get install {apt})" for tool, apt in APPS + apps if shutil.which(tool) is None]
    problem = BubblewrapEnvironment.for_workdir(Path("/")).problem()
    gui = [m for m in ("mss", "pyautogui") if not _installed(m)]
    if gui:  # a task acts and is seen through the gui extra: without it every task is not runnable
        missing.append(f"the gui extra is not installed ({', '.join(gui)}; pip install -e '.[gui]')")
    why = "; ".join(missing + ([problem] if problem else []))
    if why:
        if os.environ.get("CONWAY_REQUIRE_DESKTOP"):
            pytest.fail(why)
        pytest.skip(why)
