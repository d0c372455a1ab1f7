"""conway.machine.xvfb: the one private-display starter the demos, benchmarks and desktop tests share."""

from __future__ import annotations

import shutil

import pytest

from conway.machine.xvfb import XvfbError, start_xvfb


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
