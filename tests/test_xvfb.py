"""conway.machine.xvfb: the one private-display starter the demos, benchmarks and desktop tests share."""

from __future__ import annotations

import shutil

import pytest
from helpers.desktop_fixtures import need

from conway.machine.xvfb import XVFB_ENV_KEYS, XvfbError, start_xvfb


@pytest.mark.desktop
def test_a_private_display_has_the_asked_size_and_stops():
    if not shutil.which("Xvfb"):
        pytest.skip("Xvfb is not installed")
    import mss

    server = start_xvfb(320, 200)
    try:
        with mss.MSS(display=server.display.encode()) as sct:
            assert (sct.monitors[1]["width"], sct.monitors[1]["height"]) == (320, 200)
    finally:
        server.stop()
    assert server.proc.poll() is not None


def test_without_xvfb_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(XvfbError, match="Xvfb is not installed .*apt-get install xvfb"):
        start_xvfb(320, 200)


@pytest.mark.desktop
def test_xvfb_gets_an_allowlisted_environment_never_conways_secrets(monkeypatch):
    """An API key under a name no filter would guess must not reach the X server a task desktop talks to: its
    /proc/PID/environ is readable by anything running as the same user."""
    need("Xvfb", "xvfb")  # fails rather than skips where CI runs (CONWAY_REQUIRE_DESKTOP)
    monkeypatch.setenv("ZQX_UPSTREAM_CREDENTIAL", "hunter2-not-for-x")
    monkeypatch.setenv("LANG", "C.UTF-8")
    server = start_xvfb(320, 200)
    try:
        raw = open(f"/proc/{server.proc.pid}/environ", "rb").read()
    finally:
        server.stop()
    env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    assert b"hunter2-not-for-x" not in raw and b"ZQX_UPSTREAM_CREDENTIAL" not in env
    assert set(env) <= {k.encode() for k in XVFB_ENV_KEYS}
    assert env[b"LANG"] == b"C.UTF-8" and env[b"PATH"]  # what it does need still reaches it
