"""`conway tasks run` in a worker pool: each worker runs its tasks one at a time, each on its own disposable
desktop; the report equals the serial run's; a task whose X server is killed mid-run runs once more.

Real desktops (bubblewrap, Xvfb, a session bus), real worker processes, the real loop with scripted
policies (the point: a script stands in for the model), real checkers.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psutil
import pytest
from helpers.task_desktop import need_desktop
from helpers.task_suites import mock_suite

from conway.config import load_config
from conway.evals.pool import PolicyRecipe, Pool, PoolSpec
from conway.evals.tasks_run import tasks_run
from conway.store.home import Home

pytestmark = pytest.mark.desktop

FINISH = [{"action": {"type": "finish", "status": "DONE", "message": "done"}}]




def _run(root: Path, name: str, suite: Path, mock: Path, workers: int, ray: str | None = None,
         task_timeout_s: float | None = None) -> dict:
    home = Home(root / "home")
    config = load_config(home.config, ["policy=mock"])
    pool = Pool(PoolSpec(workers=workers, ray=ray), PolicyRecipe(config, str(home.root))) if workers > 1 else None
    out = root / f"{name}.json"
    tasks_run(home, config, str(suite), output=str(out), mock_scripts=str(mock), pool=pool, quiet=True,
              window_wait_s=5.0, command_timeout_s=10.0, max_seconds=120, task_timeout_s=task_timeout_s)
    return json.loads(out.read_text())


WRITE_OK = [{"action": {"type": "shell", "command": "echo ok > ~/out.txt"}}] + FINISH


def test_two_workers_score_the_suite_as_the_serial_run(tmp_path):
    need_desktop()
    suite, mock = mock_suite(tmp_path, {f"t{i}": WRITE_OK for i in range(4)} |
                         {"t-wrong": [{"action": {"type": "shell", "command": "echo no > ~/out.txt"}}] + FINISH})
    serial = _run(tmp_path, "serial", suite, mock, 1)
    pooled = _run(tmp_path, "pooled", suite, mock, 2)
    assert [(c["task"], c["outcome"], c.get("score")) for c in pooled["cases"]] == \
           [(c["task"], c["outcome"], c.get("score")) for c in serial["cases"]]
    assert pooled["summary"]["passed"] == serial["summary"]["passed"] == 4
    assert pooled["pool"]["workers"] == 2
    assert pooled["model_id"] == serial["model_id"] == "conway-mock"  # it said "model: -" (the workers decided)
    assert pooled["environment"]["display_size"] == serial["environment"]["display_size"] == "1280x800"  # the workers' desktops said it


def test_the_task_timeout_reaches_the_workers(tmp_path):
    need_desktop()
    hang = [{"action": {"type": "shell", "command": "sleep 600"}}]
    suite, mock = mock_suite(tmp_path, {"a-hangs": WRITE_OK[:1] + hang + FINISH, "b-ok": WRITE_OK})
    started = time.monotonic()
    report = _run(tmp_path, "pooled", suite, mock, 2, task_timeout_s=3)
    assert time.monotonic() - started < 90 and report["pool"]["workers"] == 2
    a, b = report["cases"]
    assert a["timed_out"] is True and a["budget"]["task_timeout_s"] == 3.0 and a["outcome"] == "pass", a
    assert "timed_out" not in b and b["outcome"] == "pass"
    assert report["summary"]["timed_out"] == 1


def test_a_task_whose_x_server_dies_runs_once_more_on_a_fresh_desktop(tmp_path):
    need_desktop()
    slow = [{"action": {"type": "shell", "command": "sleep 6"}}] + WRITE_OK
    suite, mock = mock_suite(tmp_path, {"slow": slow})
    killed: list[int] = []
    stop = threading.Event()
    before = {p.pid for p in psutil.Process().children(recursive=True)}  # the session's own display among them

    def kill_the_first_x_server() -> None:  # the task's desktop (a worker's), a few seconds into its run
        while not stop.is_set() and not killed:
            for p in psutil.Process().children(recursive=True):
                try:
                    if p.pid not in before and p.name() == "Xvfb" and time.time() - p.create_time() > 3:
                        p.kill()
                        killed.append(p.pid)
                        return
                except psutil.NoSuchProcess:
                    continue
            time.sleep(0.2)

    killer = threading.Thread(target=kill_the_first_x_server, daemon=True)
    killer.start()
    try:
        report = _run(tmp_path, "pooled", suite, mock, 2)
    finally:
        stop.set()
        killer.join(timeout=5)
    assert killed
    (case,) = report["cases"]
    assert case["retried"]["attempt"] == 2 and "X server" in case["retried"]["reason"]
    assert case["outcome"] == "pass" and case["score"] == 1


def test_a_task_suite_on_a_real_ray_cluster_scores_as_the_serial_run(tmp_path, tmp_path_factory):
    need_desktop()
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from helpers.ray_cluster import conway_process, ray_cluster

    suite, mock = mock_suite(tmp_path, {f"t{i}": WRITE_OK for i in range(3)})
    serial = _run(tmp_path, "serial", suite, mock, 1)
    out = tmp_path / "ray.json"
    with ray_cluster(tmp_path_factory.mktemp("ray")) as address:  # the driver in a process of its own
        done = conway_process("--home", str(tmp_path / "home"), "tasks", "run", str(suite), "--mock-scripts",
                              str(mock), "--output", str(out), "--workers", "2", "--ray", address, "--quiet")
    assert out.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    pooled = json.loads(out.read_text())
    assert [(c["task"], c.get("score")) for c in pooled["cases"]] == [(c["task"], c.get("score")) for c in serial["cases"]]
    assert pooled["summary"]["passed"] == 3 and pooled["pool"]["ray"] == address
