"""Fixtures and helpers for tests that need a real X display (Xvfb).

Import the fixtures into a test module (``from desktop_fixtures import
xvfb_session, desktop, tk_app``) so pytest finds them.

- `xvfb_session`: one ``Xvfb -displayfd FD -screen 0 1280x800x24 -nolisten
  tcp -noreset`` on a free display for the whole session, stopped by pid at the end.
  Skipped with the reason when Xvfb is missing, unless
  ``CONWAY_REQUIRE_DESKTOP=1`` (CI), where it fails instead.
- `desktop`: sets ``DISPLAY`` for one test only (monkeypatch), so tests
  that expect no display elsewhere in the session are unaffected, and puts
  the pointer back in the middle of the screen afterwards.
- `tk_app`: the Tk probe application (``tests/apps/tk_probe_app.py``),
  started fresh for each test, with its JSON-lines log.

pyautogui binds to one display per process at import, so every in-process
GUI test uses the one session display; tests that need a display of their
own (lost display, no display) run in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import pytest

from conway.machine.xvfb import XServer, start_xvfb

REPO = Path(__file__).resolve().parents[2]
APPS = Path(__file__).resolve().parents[1] / "apps"
T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02,
               what: str = "condition") -> T:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def require(ok: bool, why: str) -> None:
    """Skip the test, saying `why`, unless `ok`; fail it instead where ``CONWAY_REQUIRE_DESKTOP=1`` (CI)."""
    if not ok:
        if os.environ.get("CONWAY_REQUIRE_DESKTOP"):
            pytest.fail(why)
        pytest.skip(why)


def need(tool: str, apt: str) -> None:
    """`require` the program `tool`, naming the apt package `apt` that installs it."""
    require(shutil.which(tool) is not None, f"{tool} not installed (apt-get install {apt})")


def xdotool(display: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["xdotool", *args], env={**os.environ, "DISPLAY": display},
                          capture_output=True, text=True, timeout=10)
    if done.returncode != 0:  # say why: a bare CalledProcessError hides xdotool's message
        raise AssertionError(f"xdotool {' '.join(args)} on {display} failed ({done.returncode}): "
                             f"{done.stderr.strip() or done.stdout.strip()}")
    return done


@pytest.fixture(scope="session")
def xvfb_session() -> Iterator[XServer]:
    need("Xvfb", "xvfb")
    need("xdotool", "xdotool")
    server = start_xvfb()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def desktop(xvfb_session: XServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[XServer]:
    monkeypatch.setenv("DISPLAY", xvfb_session.display)
    w, h = xvfb_session.size
    xdotool(xvfb_session.display, "mousemove", str(w // 2), str(h // 2))
    yield xvfb_session
    # the pointer persists across tests (and processes): never leave it in a corner
    xdotool(xvfb_session.display, "mousemove", str(w // 2), str(h // 2))


class AppLog:
    """The JSON-lines log of a probe application."""

    def __init__(self, path: Path):
        self.path = path

    def events(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.endswith("}"):
                out.append(json.loads(line))
        return out

    def mark(self) -> int:
        return len(self.events())

    def since(self, mark: int, event: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events()[mark:] if event is None or e["event"] == event]

    def wait_for(self, mark: int, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0,
                 what: str = "an app event") -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            return next((e for e in self.events()[mark:] if predicate(e)), None)

        try:
            return wait_until(found, timeout=timeout, what=what)
        except AssertionError as exc:
            tail = self.events()[mark:][-8:]
            raise AssertionError(f"{exc}; recent events: {tail}") from None


@dataclass
class App:
    proc: subprocess.Popen[bytes]
    log: AppLog
    ready: dict[str, Any]

    @property
    def widgets(self) -> dict[str, dict[str, int]]:
        return self.ready["widgets"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_app(script: Path, log_path: Path, env: dict[str, str] | None = None, timeout: float = 15.0,
              args: list[str] | None = None, argv_prefix: list[str] | None = None) -> App:
    log_path.write_text("")
    proc = subprocess.Popen([*(argv_prefix or []), sys.executable, str(script), str(log_path), *(args or [])],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    log = AppLog(log_path)
    try:
        def ready() -> dict[str, Any] | None:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")[-800:] if proc.stderr else ""
                raise AssertionError(f"{script.name} exited with {proc.returncode}: {err}")
            return next((e for e in log.events() if e["event"] == "ready"), None)

        event = wait_until(ready, timeout=timeout, what=f"{script.name} to start")
    except BaseException:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        raise
    return App(proc=proc, log=log, ready=event)


@pytest.fixture
def tk_app(desktop: XServer, tmp_path: Path) -> Iterator[App]:
    app = start_app(APPS / "tk_probe_app.py", tmp_path / "tk_probe.jsonl",
                    env={**os.environ, "DISPLAY": desktop.display})
    try:
        yield app
    finally:
        app.stop()


def find_color_box(image: Any, rgb: tuple[int, int, int], tolerance: int = 24) -> tuple[int, int, int, int] | None:
    """Bounding box ``(x0, y0, x1, y1)`` (inclusive) of the pixels near ``rgb`` in a Pillow image."""
    import numpy as np

    a = np.asarray(image.convert("RGB")).astype(np.int16)
    near = (np.abs(a - np.array(rgb, dtype=np.int16)).max(axis=2) <= tolerance)
    rows = np.flatnonzero(near.any(axis=1))
    cols = np.flatnonzero(near.any(axis=0))
    if rows.size == 0:
        return None
    return int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1])


def run_python(code: str, env: dict[str, str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with the repository importable."""
    env = {**env, "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=str(REPO), capture_output=True,
                          text=True, timeout=timeout)
