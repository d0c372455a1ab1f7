"""Accessibility snapshots: a real GTK app under a private D-Bus session, and every fallback."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.desktop_fixtures import APPS, AppLog, XServer, wait_until

from conway.actions import Click
from conway.observe import accessibility as acc
from conway.observe.accessibility import NOT_IMPLEMENTED, AccessibilitySnapshot, render, snapshot
from conway.observe.screen import ScreenObserver
from conway.tools.gui import GuiTool


def _gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# --- fallbacks ---------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_not_implemented_on_other_platforms(monkeypatch: pytest.MonkeyPatch, platform: str) -> None:
    monkeypatch.setattr(acc.sys, "platform", platform)
    snap = snapshot()
    assert not snap.ok and snap.text is None and snap.reason == NOT_IMPLEMENTED
    assert snap.summary() == f"fallback to screenshot only: {NOT_IMPLEMENTED}"
    assert acc.accessibility_problem() == NOT_IMPLEMENTED


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups (POSIX)")
def test_a_hanging_snapshot_is_killed_at_its_time_limit(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    hang = ("import subprocess, sys, time\n"
            f"c = subprocess.Popen(['sleep', '60']); open({str(pidfile)!r}, 'w').write(str(c.pid))\n"
            "time.sleep(60)\n")
    t0 = time.monotonic()
    snap = snapshot(timeout_s=1.0, helper_argv=[sys.executable, "-c", hang])
    elapsed = time.monotonic() - t0
    assert not snap.ok and snap.text is None
    assert snap.reason == "accessibility snapshot timed out after 1 s (helper killed)"
    assert 0.9 <= elapsed < 5, elapsed
    assert snap.pid is not None and _gone(snap.pid)
    child = int(wait_until(lambda: pidfile.exists() and pidfile.read_text(), timeout=5, what="the pid file"))
    wait_until(lambda: _gone(child), timeout=5, what="the helper's own child to be killed too")


def test_a_crashing_or_babbling_helper_falls_back_with_the_reason() -> None:
    crash = [sys.executable, "-c", "import sys; sys.stderr.write('boom: no bus\\n'); sys.exit(3)"]
    snap = snapshot(helper_argv=crash)
    assert not snap.ok and snap.reason == "accessibility helper gave no answer (exit code 3: boom: no bus)"
    snap = snapshot(helper_argv=[sys.executable, "-c", "print('not json')"])
    assert not snap.ok and "gave no answer" in snap.reason
    snap = snapshot(helper_argv=[sys.executable, "-c", "print('{\"ok\": false, \"reason\": \"nope\"}')"])
    assert not snap.ok and snap.reason == "nope"
    snap = snapshot(helper_argv=["/nonexistent/helper"])
    assert not snap.ok and "cannot start" in snap.reason


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux AT-SPI")
def test_no_session_bus_is_a_reason_not_a_daemon(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env["XDG_RUNTIME_DIR"] = str(tmp_path)  # no bus socket there: nothing may be autolaunched
    snap = snapshot(env=env)
    assert not snap.ok and "no D-Bus session bus" in snap.reason


def test_render_is_bounded() -> None:
    nodes = [{"depth": 1, "role": "push button", "name": f"button number {i}", "states": ["focused"],
              "bounds": [i, i, 10, 10]} for i in range(500)]
    snap = AccessibilitySnapshot(ok=True, text=None, reason="active window", nodes=nodes, app="demo")
    text = render(snap, None, max_chars=1000)
    assert len(text) <= 1000 and text.endswith("more characters cut)")
    assert text.splitlines()[1] == '  push button "button number 0" @0,0,10,10 [focused]'


@pytest.mark.desktop
def test_observer_falls_back_and_journals_why(desktop: XServer, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with ScreenObserver(accessibility=True, accessibility_timeout_s=2) as so:
        obs = so.observe()
    assert obs.accessibility is None
    assert obs.meta["accessibility"].startswith("fallback to screenshot only: no D-Bus session bus")
    assert obs.record()["accessibility"] == obs.meta["accessibility"]


# --- a real tree under a private session bus ------------------------------------------


def _atspi_missing() -> str | None:
    if not sys.platform.startswith("linux"):
        return "AT-SPI is Linux only"
    if shutil.which("dbus-run-session") is None:
        return "dbus-run-session not installed (apt-get install dbus-x11)"
    probe = ("import gi; gi.require_version('Atspi', '2.0'); gi.require_version('Gtk', '3.0'); "
             "from gi.repository import Atspi")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return ("AT-SPI packages missing (apt-get install gir1.2-atspi-2.0 gir1.2-gtk-3.0 dbus-x11 "
                f"libgirepository1.0-dev libcairo2-dev pkg-config; pip install 'PyGObject<3.51'): {last}")
    return None


@pytest.fixture
def gtk_app(desktop: XServer, tmp_path: Path):
    missing = _atspi_missing()
    if missing:
        if os.environ.get("CONWAY_REQUIRE_DESKTOP"):
            pytest.fail(missing)
        pytest.skip(missing)
    import psutil

    log_path, addr_path = tmp_path / "gtk.jsonl", tmp_path / "bus-address"
    log_path.write_text("")
    script = (f'printf %s "$DBUS_SESSION_BUS_ADDRESS" > {addr_path}; '
              f'exec "{sys.executable}" "{APPS / "gtk_probe_app.py"}" "{log_path}"')
    env = {k: v for k, v in os.environ.items() if k not in ("DBUS_SESSION_BUS_ADDRESS", "NO_AT_BRIDGE")}
    session = subprocess.Popen(["dbus-run-session", "--", "sh", "-c", script], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = AppLog(log_path)
    try:
        wait_until(lambda: session.poll() is not None or any(e["event"] == "ready" for e in log.events()),
                   timeout=30, what="the GTK app")
        if session.poll() is not None:
            raise AssertionError(f"dbus-run-session exited: {session.stderr.read().decode()[-800:]}")
        address = wait_until(lambda: addr_path.exists() and addr_path.read_text(), what="the bus address")
        yield log, address
    finally:
        # stop the app, the bus and the daemons the bus activated (at-spi), each by pid
        try:
            family = psutil.Process(session.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        for p in family:
            try:
                p.terminate()
            except psutil.NoSuchProcess:
                pass
        if session.poll() is None:
            session.send_signal(signal.SIGTERM)
        try:
            session.wait(timeout=10)
        except subprocess.TimeoutExpired:
            session.kill()
            session.wait()
        _gone_or_kill = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        for p in _gone_or_kill:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass


@pytest.mark.desktop
def test_gtk_tree_lists_controls_and_a_click_through_it_lands(gtk_app, desktop: XServer,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    log, address = gtk_app
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    so = ScreenObserver(accessibility=True, accessibility_timeout_s=10)
    try:
        def tree():
            obs = so.observe()
            return obs if obs.accessibility and '"Save draft"' in obs.accessibility else None

        obs = wait_until(tree, timeout=30, interval=0.2, what="the GTK app in the accessibility tree")
    finally:
        so.close()
    text = obs.accessibility
    assert obs.meta["accessibility"].startswith("ok: ")
    assert 'frame "Conway GTK probe"' in text and 'check box "Remember me"' in text
    assert "screenshot pixels (1280x800)" in text and len(text) <= 6000

    snap = snapshot(geometry=obs.geometry, timeout_s=10)
    assert snap.ok, snap.reason
    node = next(n for n in snap.nodes if n["role"] == "push button" and n["name"] == "Save draft")
    x, y, w, h = node["bounds"]
    gui = GuiTool(pause_s=0.01)
    mark = log.mark()
    result = gui.run(Click(x=x + w / 2, y=y + h / 2), obs.geometry)
    assert result.ok, result.error
    ev = log.wait_for(mark, lambda e: e["event"] == "clicked", what="the GTK button click")
    assert ev["widget"] == "Save draft"
