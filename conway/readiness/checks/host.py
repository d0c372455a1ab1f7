"""The machine: host facts, optional extras, the display, accessibility, memory and one real screenshot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conway.machine.extras import EXTRAS as EXTRAS  # doctor lists them; tasks read them from below
from conway.machine.facts import host_facts as host_facts  # doctor's and reports' name for it
from conway.readiness.checks import Check

DESKTOP_TIMEOUT_S = 20.0

_SCREENSHOT = """\
import sys
import mss
import mss.tools
with mss.MSS() as m:
    mon = m.monitors[1]
    shot = m.grab(mon)
    mss.tools.to_png(shot.rgb, shot.size, output=sys.argv[1])
    print(shot.size.width, shot.size.height, mon["width"], mon["height"], mon["left"], mon["top"])
"""


def module_check(module: str) -> Check:
    """Installed or not, with its version. Found, not imported: pyautogui cannot even be
    imported without a display, and that is the display's problem (`display_check`)."""
    import importlib.metadata as md
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return Check(module, "fail", "not installed")
    for dist in md.packages_distributions().get(module, []):
        try:
            return Check(module, "ok", md.version(dist))
        except md.PackageNotFoundError:
            continue
    return Check(module, "ok", "installed")


def extras_checks() -> dict[str, list[Check]]:
    """Each optional extra → one `module_check` per module it brings."""
    return {extra: [module_check(m) for m in modules] for extra, modules in EXTRAS.items()}


def display_check() -> Check:
    """Can this process reach a display: the environment, the platform check, then mss listing the monitors."""
    if sys.platform.startswith("linux"):
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            return Check("display", "fail", "no DISPLAY set")
        if os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("DISPLAY"):
            return Check("display", "fail",
                         "Wayland without XWayland DISPLAY: native Wayland input is not implemented")
    try:
        from conway.machine.platform import display_problem
    except ImportError:  # the gui extra is missing; the mss probe below says so
        display_problem = None
    if display_problem is not None:
        problem = display_problem()
        if problem:
            return Check("display", "fail", problem)
    try:
        proc = subprocess.run([sys.executable, "-c", "import mss; m = mss.MSS(); print(m.monitors[1])"],
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return Check("display", "fail", "screenshot probe timed out")
    if proc.returncode == 0:
        return Check("display", "ok", f"display reachable, primary monitor {proc.stdout.strip()}")
    return Check("display", "fail", (proc.stderr.strip().splitlines() or ["unreachable"])[-1][:160])


def accessibility_check() -> Check:
    """AT-SPI accessibility snapshots can be taken here (they stay off unless observe.accessibility=true)."""
    try:
        from conway.observe.accessibility import accessibility_problem
        problem = accessibility_problem()
    except ImportError as exc:
        problem = str(exc)
    if problem:
        return Check("accessibility", "fail", problem)
    return Check("accessibility", "ok", "AT-SPI available (off by default: observe.accessibility=true)")


def memory_check() -> Check:
    import psutil
    vm = psutil.virtual_memory()
    return Check("memory", "ok", f"{vm.available / 2**30:.1f} GiB available of {vm.total / 2**30:.1f} GiB",
                 {"available_bytes": vm.available, "total_bytes": vm.total})


def desktop_check(timeout_s: float = DESKTOP_TIMEOUT_S) -> Check:
    """One screenshot in a subprocess with a deadline; the temporary image is deleted, never sent anywhere."""
    tmpdir = Path(tempfile.mkdtemp(prefix="conway-preflight-"))
    shot = tmpdir / "screen.png"
    try:
        try:
            proc = subprocess.run([sys.executable, "-c", _SCREENSHOT, str(shot)], capture_output=True, text=True,
                                  timeout=timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return Check("desktop", "fail", f"the screenshot did not finish within {timeout_s:g} s")
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]
            hint = "" if os.environ.get("DISPLAY") or not sys.platform.startswith("linux") else " (no DISPLAY set)"
            return Check("desktop", "fail", f"screenshot failed{hint}: {last}")
        if not shot.is_file() or shot.stat().st_size == 0:
            return Check("desktop", "fail", "the screenshot process produced no image")
        parts = proc.stdout.split()
        data = {}
        if len(parts) >= 6:
            w, h, lw, lh, left, top = (int(v) for v in parts[:6])
            data = {"captured_size": [w, h], "logical_size": [lw, lh], "origin": [left, top]}
            detail = f"captured {w}x{h} (input space {lw}x{lh} at {left},{top})"
        else:
            detail = "captured"
        return Check("desktop", "ok", detail + "; the temporary image was deleted and not sent to a model", data)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
