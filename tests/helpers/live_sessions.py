"""Running `conway run` sessions in child processes on an Xvfb display, for the live view, takeover and video tests.

The policy is the scripted mock (named as such: the model is not the point of these tests); the observer is the
real screen of the display, so takeovers, the live view and videos see what a person would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conway.store.home import Home
from conway.store.journal import read_journal
from conway.store.state import StateStore

REPO = Path(__file__).resolve().parents[2]


def conway_env(display: str | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    env.pop("DISPLAY", None)
    if display:
        env["DISPLAY"] = display
    return env


def conway(home: Path, *args: str, display: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(home), *args], cwd=REPO,
                          env=conway_env(display), capture_output=True, text=True, timeout=timeout)


@dataclass
class Session:
    home: Home
    proc: subprocess.Popen[str]

    def state(self) -> dict[str, Any]:
        return StateStore(self.home.state, self.home.state_previous).load()[0]

    def status(self) -> str | None:
        return self.state().get("status")

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        evs = read_journal(self.home.journal_dir).events if self.home.journal_dir.exists() else []
        return [e for e in evs if kind is None or e.get("kind") == kind]

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return (self.proc.stdout.read() if self.proc.stdout else "") or ""


def start_session(home: Path, display: str | None, steps: list[dict[str, Any]], *extra: str,
                  repeat: bool = True) -> Session:
    """`conway run` with a mock script on `display` (its screen observed; None: the synthetic observer)."""
    assert conway(home, "init").returncode == 0
    script = home / "mock.yaml"
    script.write_text(yaml.safe_dump({"steps": steps, "repeat": repeat}), encoding="utf-8")
    source = "observe.source=screen" if display else "observe.source=synthetic"
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli", "--home", str(home), "run", "--mock-script",
                             str(script), *extra, source, "agent.idle_backoff_start_s=0.5", "agent.idle_backoff_max_s=1",
                             "agent.max_model_wait_s=1"],
                            cwd=REPO, env=conway_env(display), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    s = Session(Home(home), proc)
    deadline = time.monotonic() + 60
    while s.status() not in ("running", "paused", "taken over"):
        if proc.poll() is not None:
            raise AssertionError(f"the session ended at start: {proc.stdout.read() if proc.stdout else ''}")
        if time.monotonic() > deadline:
            raise AssertionError("the session did not start within 60 s")
        time.sleep(0.1)
    return s


def human_actions(session: Session) -> list[dict[str, Any]]:
    return [e["payload"]["action"] for e in session.events("human")]


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1)
