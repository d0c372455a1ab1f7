"""What a task's desktop adds for OSWorld's task files (`conway/sandbox/guest.py`), tried inside a real desktop:
the programs in /run/conway/bin, the PyAutoGUI stand-in, one private network for every command of a desktop,
`pkill` done from outside, and the home an Ubuntu user has."""

from __future__ import annotations

import os
import time
from typing import Callable

import pytest

from conway.sandbox.desktop import HOME_FOLDERS, DisposableDesktop
from conway.sandbox.guest import OFFICE_SETTINGS
from conway.sandbox.setup import run_setup

pytestmark = pytest.mark.desktop


@pytest.fixture
def desk(open_desk: Callable[..., DisposableDesktop]) -> DisposableDesktop:
    return open_desk("guest-1")


def test_the_desktop_has_osworlds_program_names_and_an_ubuntu_home(desk: DisposableDesktop) -> None:
    done = desk.run("for p in google-chrome vlc sudo python; do command -v $p; done; echo pw | sudo -S -u root printf '%s' ran; echo; "
                    "python -c 'import pyautogui; print(pyautogui.STANDIN, pyautogui.size())'", shell=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == ["/run/conway/bin/google-chrome", "/run/conway/bin/vlc", "/run/conway/bin/sudo",
                         "/run/conway/bin/python"]
    assert lines[4] == "ran" and lines[5] == f"True {desk.size}"
    assert all((desk.home / d).is_dir() for d in HOME_FOLDERS)
    assert "WarnAlienFormat" in (desk.home / OFFICE_SETTINGS).read_text()
    # the guest folder is read-only to the task
    assert desk.run("touch /run/conway/bin/x", shell=True).returncode != 0


def test_commands_of_one_desktop_share_a_loopback_and_pkill_ends_what_matches(desk: DisposableDesktop) -> None:
    if os.geteuid() != 0:
        pytest.skip("one network per desktop needs root (nsenter); elsewhere each command has its own loopback")
    run_setup([{"type": "launch", "parameters": {"command": ["socat", "tcp-listen:18765,fork,reuseaddr",
                                                             "system:echo served-by-socat"]}}], desk)
    deadline, out = time.monotonic() + 20, ""
    while time.monotonic() < deadline and "served-by-socat" not in out:
        out = desk.run(["socat", "-", "tcp:localhost:18765"], timeout_s=5).stdout
        time.sleep(0.2)
    assert "served-by-socat" in out  # started by one step, reached by another command
    assert desk.kill_matching("^socat$") >= 1
    assert desk.run(["socat", "-", "tcp:localhost:18765"], timeout_s=5).returncode != 0
    with pytest.raises(ValueError, match="pkill pattern"):
        desk.kill_matching("(")
