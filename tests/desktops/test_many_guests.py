"""Several guests for one suite (`tasks.desktop_url=A,B`): each task leases a guest no other task holds, a pool's
workers spread over them, a worker that dies frees its guest, and with more workers than guests a task waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers.desktop_fixtures import xvfb_session  # noqa: F401  (fixture)
from helpers.standin_guest import StandinGuest
from helpers.task_desktop import REPO

from conway.desktops import DesktopError
from conway.desktops.lease import GuestLease, guest_urls


def test_leases_hand_out_distinct_guests_and_wait_when_none_is_free(tmp_path) -> None:
    urls = guest_urls("http://a:5000, http://b:5000,http://a:5000")
    assert urls == ["http://a:5000", "http://b:5000"]
    first, second = GuestLease(urls, tmp_path), GuestLease(urls, tmp_path)
    assert {first.acquire(), second.acquire()} == set(urls)
    third = GuestLease(urls, tmp_path, wait_s=0.2, sleep=lambda s: 0.0)
    with pytest.raises(DesktopError, match="none of the 2 guest server"):
        third.acquire()
    first.release()
    assert third.acquire() == "http://a:5000"


def test_a_killed_holder_frees_its_guest(tmp_path) -> None:
    code = ("import sys, time; from pathlib import Path; from conway.desktops.lease import GuestLease\n"
            f"GuestLease(['http://only:5000'], Path({str(tmp_path)!r})).acquire(); print('held', flush=True); "
            "time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(DesktopError):
            GuestLease(["http://only:5000"], tmp_path, wait_s=0.1, sleep=lambda s: 0.0).acquire()
        holder.kill()
        holder.wait(10)
        assert GuestLease(["http://only:5000"], tmp_path, wait_s=5).acquire() == "http://only:5000"
    finally:
        if holder.poll() is None:
            holder.kill()


TASK = {"instruction": "Nothing to do: say you are done.", "config": [{"type": "sleep", "parameters": {"seconds": 1}}],
        "related_apps": ["os"],
        "evaluator": {"func": "check_include_exclude",
                      "result": {"type": "vm_command_line", "command": "echo ok", "shell": True},
                      "expected": {"type": "rule", "rules": {"include": ["ok"], "exclude": []}}}}


@pytest.mark.desktop
def test_a_pool_spreads_a_suite_over_two_guests(xvfb_session, tmp_path) -> None:  # noqa: F811
    guests = [StandinGuest(xvfb_session.display, tmp_path / f"guest-{i}", size=tuple(xvfb_session.size))
              for i in range(2)]
    suite, scripts = tmp_path / "suite", tmp_path / "scripts"
    suite.mkdir()
    scripts.mkdir()
    for i in range(4):
        (suite / f"t{i}.json").write_text(json.dumps({**TASK, "id": f"t{i}"}))
        (scripts / f"t{i}.yaml").write_text("- action:\n    type: finish\n    status: DONE\n")
    out = tmp_path / "report.json"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "home"), "tasks", "run", str(suite),
             "tasks.wait_after_setup_s=0", "tasks.settle_before_eval_s=0", "--desktop-url",
             ",".join(g.url for g in guests), "--mock-scripts", str(scripts), "--workers", "2",
             "--output", str(out)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
            text=True, timeout=300)
    finally:
        for g in guests:
            g.close()
    assert out.is_file(), done.stdout + done.stderr
    cases = json.loads(out.read_text())["cases"]
    assert [c["score"] for c in cases] == [1.0] * 4, done.stdout + done.stderr
    used = {c["desktop"]["url"] for c in cases}
    assert used == {g.url for g in guests}  # both guests served the suite
    assert len(list((tmp_path / "report.tasks" / ".guests").glob("*.lock"))) == 2  # the leases, beside the homes
