"""A task's setup on a loaded machine: the wait for an application's window stretches with the load (what a task
run asks for), so a slow start under training is not an error; the message says how long and why (no desktop)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from conway.sandbox import setup, windows
from conway.sandbox.setup import SetupError, SetupLimits, run_setup

LAUNCH = [{"type": "launch", "parameters": {"command": ["sleep", "30"]}}]


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The window waits asked of the display (each one times out: no window ever opens)."""
    asked: list[float] = []
    monkeypatch.setattr(windows, "visible_windows", lambda display: [])
    monkeypatch.setattr(windows, "wait_for_new_window", lambda display, before, timeout: asked.append(timeout))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    return asked


def _env() -> SimpleNamespace:
    return SimpleNamespace(display=":99", spawn=lambda argv, shell=False: None)


def test_the_window_wait_stretches_with_the_load(waits, monkeypatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (5.0, 1.0, 1.0))  # 2.5 runnable per CPU
    with pytest.raises(SetupError, match=r"waited 75 s: 30 s × 2\.5 for the machine's load\)$"):
        run_setup(LAUNCH, _env(), SetupLimits(window_wait_s=30, scale_with_load=True))
    assert waits == [75.0]


def test_the_stretch_is_capped_and_an_idle_machine_waits_the_set_time(waits, monkeypatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (100.0, 1.0, 1.0))
    with pytest.raises(SetupError):
        run_setup(LAUNCH, _env(), SetupLimits(window_wait_s=30, scale_with_load=True))
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 1.0, 1.0))
    with pytest.raises(SetupError, match=r"waited 30 s\)$"):
        run_setup(LAUNCH, _env(), SetupLimits(window_wait_s=30, scale_with_load=True))
    assert waits == [30 * setup.MAX_LOAD_FACTOR, 30.0]


def test_a_task_run_asks_for_the_stretch(monkeypatch, tmp_path) -> None:
    from conway.config import load_config
    from conway.evals.tasks_run import TaskCase, TasksSuite
    seen: list[SetupLimits] = []

    def fake_setup(steps, env, limits=None):
        seen.append(limits)
        raise SetupError("stop here")

    monkeypatch.setattr(setup, "run_setup", fake_setup)
    suite = TasksSuite(config=load_config(None, ["policy=mock"]), folder=tmp_path, report_dir=tmp_path, total=1)
    case = TaskCase(index=0, task=SimpleNamespace(id="t", config=[]))
    from conway.desktops import DesktopRequest
    from conway.desktops.local import LocalDesktop

    desk = LocalDesktop(None, DesktopRequest("t"))  # the local provider, not started: setup is stopped first
    with pytest.raises(SetupError):
        suite._on_desktop(None, case, {}, desk, None, tmp_path, 1, 1.0)
    assert seen[0].scale_with_load and seen[0].window_wait_s == suite.window_wait_s
