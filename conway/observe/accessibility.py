"""Read-only accessibility snapshots of the foreground application (Linux AT-SPI).

`snapshot()` runs ``_atspi_snapshot.py`` in a subprocess with a time limit
(AT-SPI calls can block for a long time on a wedged application or bus), in
its own process group, and kills the group when the limit passes. Any
failure (other platform, PyGObject or the typelib missing, no session bus,
no accessible application, timeout, crash, bad output) yields an
`AccessibilitySnapshot` with ``text=None`` and the reason, so the caller
falls back to screenshots only and journals why.

The text given to the model is bounded (``max_nodes`` nodes, ``max_chars``
characters) and looks like::

    accessibility tree of "gedit" (active window); bounds are x,y,w,h in screenshot pixels (1280x800)
    frame "notes.txt - gedit" @0,0,1280,800 [active]
      push button "Save" @1100,8,64,32
      text @0,60,1280,700 [editable, focused, multi-line] value="hello"

Bounds are converted from the screen's input coordinates to captured
screenshot pixels when a `ScreenGeometry` is given (they differ on HiDPI
screens), so they match the coordinates GUI actions use.

macOS (AX) and Windows (UIA) are not implemented: the reason says so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conway.geometry import ScreenGeometry, input_to_captured
from conway.machine.atspi import atspi_missing

__all__ = ["AccessibilitySnapshot", "snapshot", "render", "accessibility_problem", "HELPER",
           "NOT_IMPLEMENTED"]

HELPER = Path(__file__).with_name("_atspi_snapshot.py")
NOT_IMPLEMENTED = "accessibility snapshots not implemented on this platform"


@dataclass
class AccessibilitySnapshot:
    ok: bool
    text: str | None
    """What goes into the decision context (None on failure)."""
    reason: str
    """`ok` details or why the snapshot fell back."""
    nodes: list[dict[str, Any]] = field(default_factory=list)
    """Structured nodes; ``bounds`` in screenshot pixels when a geometry was given."""
    app: str | None = None
    elapsed_s: float = 0.0
    truncated: bool = False
    pid: int | None = None
    """The helper subprocess (already ended or killed)."""

    def summary(self) -> str:
        """One line for the journal."""
        if self.ok:
            return f"ok: {len(self.nodes)} nodes of {self.app!r} in {self.elapsed_s * 1000:.0f} ms" + (
                ", truncated" if self.truncated else "")
        return f"fallback to screenshot only: {self.reason}"


def accessibility_problem() -> str | None:
    """Cheap readiness check for `doctor` (does not start a subprocess): None or why not."""
    if not sys.platform.startswith("linux"):
        return NOT_IMPLEMENTED
    if (missing := atspi_missing()) is not None:
        return missing
    bus = Path(os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}", "bus")
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS") and not bus.exists():
        return "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)"
    return None


def _fail(reason: str, t0: float, pid: int | None = None) -> AccessibilitySnapshot:
    return AccessibilitySnapshot(ok=False, text=None, reason=reason, elapsed_s=time.perf_counter() - t0, pid=pid)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    proc.wait()


class _Fallback(Exception):
    """Why the snapshot falls back to screenshots only (and the helper's pid, once it was started)."""

    def __init__(self, reason: str, pid: int | None = None):
        super().__init__(reason)
        self.reason, self.pid = reason, pid


def snapshot(
    timeout_s: float = 3.0,
    max_chars: int = 6000,
    max_nodes: int = 400,
    max_depth: int = 40,
    geometry: ScreenGeometry | None = None,
    app: str | None = None,
    env: dict[str, str] | None = None,
    helper_argv: list[str] | None = None,
    helper_prefix: list[str] | None = None,
) -> AccessibilitySnapshot:
    """Snapshot the foreground application's accessible tree; never raises for runtime failures.

    ``app`` picks an application by name instead of the foreground rule;
    ``env`` replaces the subprocess environment (e.g. another session bus);
    ``helper_argv`` replaces the helper command (tests use it to simulate a
    hang or a crash); ``helper_prefix`` replaces only how the helper is started
    (a task desktop's: inside its box, `DisposableDesktop.helper_argv`), its
    options kept.
    """
    t0 = time.perf_counter()
    if helper_argv is None and not sys.platform.startswith("linux"):
        return _fail(NOT_IMPLEMENTED, t0)
    options = ["--max-nodes", str(max_nodes), "--max-depth", str(max_depth)] + (["--app", app] if app else [])
    argv = helper_argv or [*(helper_prefix or [sys.executable, str(HELPER)]), *options]
    try:
        run_env = _helper_env(env, needs_bus=helper_argv is None and helper_prefix is None)
        proc, out, err = _run_helper(argv, run_env, timeout_s)
        result = _helper_answer(proc, out, err)
    except _Fallback as fallback:
        return _fail(fallback.reason, t0, fallback.pid)
    nodes = list(result.get("nodes") or [])
    if geometry is not None:
        _bounds_to_captured(nodes, geometry)
    snap = AccessibilitySnapshot(ok=True, text=None, reason=str(result.get("rule") or ""), nodes=nodes,
                                 app=result.get("app"), elapsed_s=time.perf_counter() - t0,
                                 truncated=bool(result.get("truncated")), pid=proc.pid)
    snap.text = render(snap, geometry, max_chars)
    return snap


def _helper_env(env: dict[str, str] | None, needs_bus: bool) -> dict[str, str]:
    """The helper's environment, with the session bus's address made explicit when the real helper runs."""
    run_env = dict(os.environ if env is None else env)
    if needs_bus and not run_env.get("DBUS_SESSION_BUS_ADDRESS"):
        # without an address libdbus would autolaunch a bus daemon that outlives us
        bus = Path(run_env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}", "bus")
        if not bus.exists():
            raise _Fallback("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        run_env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={bus}"
    return run_env


def _run_helper(argv: list[str], run_env: dict[str, str],
                timeout_s: float) -> tuple[subprocess.Popen[bytes], bytes, bytes]:
    """Run the helper in its own process group; the whole group is killed past `timeout_s` (or on any exit)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=run_env, start_new_session=True)
    except OSError as exc:
        raise _Fallback(f"cannot start the accessibility helper: {exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise _Fallback(f"accessibility snapshot timed out after {timeout_s:g} s (helper killed)", proc.pid) from None
    except BaseException:
        _kill_group(proc)
        raise
    return proc, out, err


def _helper_answer(proc: subprocess.Popen[bytes], out: bytes, err: bytes) -> dict[str, Any]:
    """The helper's last stdout line as a successful answer; a failure or no answer is a `_Fallback`."""
    tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] if err else []
    try:
        result = json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1])
        if not isinstance(result, dict):
            raise ValueError("not an object")
    except (ValueError, IndexError):
        why = f"exit code {proc.returncode}" + (f": {tail[0][:200]}" if tail else "")
        raise _Fallback(f"accessibility helper gave no answer ({why})", proc.pid) from None
    if not result.get("ok"):
        raise _Fallback(str(result.get("reason") or "unknown failure"), proc.pid)
    return result


def _bounds_to_captured(nodes: list[dict[str, Any]], geometry: ScreenGeometry) -> None:
    """Convert each node's bounds in place from the screen's input coordinates to screenshot pixels."""
    for n in nodes:
        b = n.get("bounds")
        if b:
            x0, y0 = input_to_captured(b[0], b[1], geometry)
            x1, y1 = input_to_captured(b[0] + b[2], b[1] + b[3], geometry)
            n["bounds"] = [round(x0), round(y0), round(x1 - x0), round(y1 - y0)]


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def render(snap: AccessibilitySnapshot, geometry: ScreenGeometry | None = None, max_chars: int = 6000) -> str:
    """The snapshot as indented text, cut to ``max_chars`` with a marker."""
    space = (f"screenshot pixels ({geometry.captured_w}x{geometry.captured_h})" if geometry
             else "screen coordinates")
    lines = [f"accessibility tree of {_q(snap.app or '?')} ({snap.reason}); bounds are x,y,w,h in {space}"]
    for n in snap.nodes:
        parts = ["  " * int(n.get("depth", 0)) + str(n.get("role", ""))]
        if n.get("name"):
            parts.append(_q(n["name"]))
        if n.get("bounds"):
            parts.append("@" + ",".join(str(v) for v in n["bounds"]))
        if n.get("states"):
            parts.append("[" + ", ".join(n["states"]) + "]")
        if n.get("value"):
            parts.append("value=" + _q(str(n["value"])[:80]))
        lines.append(" ".join(parts))
    if snap.truncated:
        lines.append(f"... (tree cut at {len(snap.nodes)} nodes)")
    text = "\n".join(lines)
    if len(text) > max_chars:
        marker = f"\n... ({len(text) - max_chars} more characters cut)"
        cut = text[: max(0, max_chars - len(marker))]
        text = cut[: cut.rfind("\n")] + marker if "\n" in cut else cut + marker
    return text
