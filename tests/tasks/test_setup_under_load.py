"""A task's setup on a loaded machine: the wait for an application's window stretches with the load (what a task
run asks for), so a slow start under training is not an error; the message says how long and why (no desktop)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from conway.sandbox import setup, windows
from conway.sandbox.setup import SetupError, SetupLimits, run_setup

LAUNCH = [{"type": "launch", "parameters": {"command": ["sleep", "30"]}}]


class Clock:
    """The setup's clock, advanced only by its own sleeps: a wait's length is read off it (no real waiting)."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(setup.time, "monotonic", lambda: c.now)
    monkeypatch.setattr(setup.time, "sleep", c.sleep)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(windows, "visible_windows", lambda display: [])  # no window ever opens
    return c


def _env() -> SimpleNamespace:
    return SimpleNamespace(display=":99", spawn=lambda argv, shell=False: None)


def test_the_window_wait_stretches_with_the_load(clock, monkeypatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (5.0, 1.0, 1.0))  # 2.5 runnable per CPU
    with pytest.raises(SetupError, match=r"waited 75 s: 30 s × 2\.5 for the machine's load\)$"):
        run_setup(LAUNCH, _env(), SetupLimits(window_wait_s=30, scale_with_load=True))
    assert clock.now == pytest.approx(75.0, abs=0.2)


def test_the_stretch_is_capped_and_an_idle_machine_waits_the_set_time(clock, monkeypatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (100.0, 1.0, 1.0))
    with pytest.raises(SetupError, match=rf"waited {30 * setup.MAX_LOAD_FACTOR:.0f} s: "):
        run_setup(LAUNCH, _env(), SetupLimits(window_wait_s=30, scale_with_load=True))
    assert clock.now == pytest.approx(30 * setup.MAX_LOAD_FACTOR, abs=0.2)
    clock.now = 0.0
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 1.0, 1.0))
    with pytest.raises(SetupError, match=r"waited 30 s\)$"):
        run_setup(LAUNCH, _env(), SetupLimits(window_wait_s=30, scale_with_load=True))
    assert clock.now == pytest.approx(30.0, abs=0.2)


def test_a_machine_growing_busy_during_the_wait_is_waited_for(clock, monkeypatch) -> None:
    # idle when VLC starts, 6 runnable per 2 CPUs from the 20th second: the wait follows the load it sees
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5 if clock.now < 20 else 6.0, 1.0, 1.0))
    with pytest.raises(SetupError, match=r"waited 180 s: 60 s × 3\.0 for the machine's load\)$"):
        run_setup([{"type": "launch", "parameters": {"command": ["vlc"]}}], _env(),
                  SetupLimits(window_wait_s=30, scale_with_load=True))
    assert clock.now == pytest.approx(180.0, abs=0.2)


def test_a_window_that_shows_ends_the_wait_at_once(clock, monkeypatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (100.0, 1.0, 1.0))
    monkeypatch.setattr(windows, "visible_windows", lambda display: [7] if clock.now >= 2.0 else [])
    run_setup(LAUNCH, _env(), SetupLimits(window_wait_s=30, scale_with_load=True))
    assert clock.now == pytest.approx(2.0, abs=0.2)


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


class Starts:
    """A desktop whose launched programs end at once with `statuses` in turn (None: it runs), and whose window
    shows for the start numbered `shows` (from 1), if any: a fake of the box's spawn and its exit status."""

    def __init__(self, statuses: list[int | None], shows: int | None) -> None:
        self.display, self.statuses, self.shows, self.started = ":99", statuses, shows, 0

    def spawn(self, argv, shell=False) -> int:
        self.started += 1
        return self.started

    def spawned_exit(self, pid: int) -> int | None:
        return self.statuses[pid - 1]

    def windows(self, display) -> list[int]:
        return [7] if self.shows is not None and self.started >= self.shows else []


def test_a_program_that_ends_in_error_before_its_window_is_started_again(clock, monkeypatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 1.0, 1.0))
    env = Starts([1, None], shows=2)  # "Can't open display" once, then it runs and shows
    monkeypatch.setattr(windows, "visible_windows", env.windows)
    run_setup(LAUNCH, env, SetupLimits(window_wait_s=30))
    assert env.started == 2 and clock.now < 5  # no window wait was sat out
    env = Starts([1, 1, 1], shows=None)
    monkeypatch.setattr(windows, "visible_windows", env.windows)
    with pytest.raises(SetupError, match=r"ended with status 1 before showing a window, 3 times"):
        run_setup(LAUNCH, env, SetupLimits(window_wait_s=30))
    assert env.started == setup.LAUNCH_TRIES


def test_a_program_that_ends_well_may_have_handed_its_window_on(clock, monkeypatch) -> None:
    # status 0 (a launcher that passed the file to a running instance): its window is still waited for
    env = Starts([0], shows=None)
    monkeypatch.setattr(windows, "visible_windows", env.windows)
    with pytest.raises(SetupError, match=r"never opened its window .*waited 30 s\)$"):
        run_setup(LAUNCH, env, SetupLimits(window_wait_s=30))
    assert env.started == 1 and clock.now == pytest.approx(30.0, abs=0.2)
