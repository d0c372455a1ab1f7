"""The worker pool on a real Ray cluster: two nodes started here on 127.0.0.1 (`ray start`), no dashboard.

vision-check through Ray actors gives the serial run's cases; an actor SIGKILLed mid-case has its case run
once more on another actor. Answers come from the FAKE vision fixture server, as in test_pool.py.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from fixtures.vision_fixture_server import VisionFixtureServer
from helpers.ray_cluster import conway_process, ray_cluster

ray = pytest.importorskip("ray", reason="the ray extra is not installed")
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head and a second node on this machine, each offering one desktop."""
    with ray_cluster(tmp_path_factory.mktemp("ray")) as address:
        yield address


def _run(server, tmp_path, name, *extra, samples=4):
    out = tmp_path / name
    done = conway_process("vision-check", "--samples", str(samples), "--seed", "5", "--size", "640x400", "--output",
                          str(out), "--quiet", "--endpoint", server.base_url, *extra, "policy=generic",
                          "policy.structured_output=none")
    _run.err = done.stderr  # type: ignore[attr-defined]
    return done.returncode, (json.loads(out.read_text()) if out.exists() else {})


def _cases(report):
    return [(c["index"], c["image"]["sha256"], c["predicted"], c["hit"]) for c in report["cases"]]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CONWAY_HOME", str(tmp_path / "home"))


def _actor_pids() -> list[int]:
    import psutil
    return sorted(p.pid for p in psutil.process_iter(["cmdline"])
                  if any("CaseWorker" in part for part in (p.info["cmdline"] or [])))


def test_ray_actors_give_the_serial_report_and_a_lost_actor_costs_one_retry(cluster, tmp_path):
    with VisionFixtureServer(delay_s=0.4) as server:
        _, serial = _run(server, tmp_path, "serial.json")
        server.max_in_flight = 0
        code, pooled = _run(server, tmp_path, "ray.json", "--workers", "2", "--ray", cluster)
        assert code == 0 and _cases(pooled) == _cases(serial)
        assert server.max_in_flight == 2 and pooled["pool"]["ray"] == cluster
        assert pooled["served_by"] == serial["served_by"] and pooled["served_by"]["model_id"]  # asked in the actors

        killed: list[int] = []
        first = server.request_count

        def kill_actor(count: int) -> None:
            if count == first + 2 and not killed and (pids := _actor_pids()):
                killed.append(pids[0])
                os.kill(pids[0], signal.SIGKILL)

        server.on_request = kill_actor
        code, faulty = _run(server, tmp_path, "ray-kill.json", "--workers", "2", "--ray", cluster)
    assert killed
    assert code == 0 and _cases(faulty) == _cases(serial)
    retried = [c for c in faulty["cases"] if "retried" in c]
    assert len(retried) == 1 and "Ray actor lost" in retried[0]["retried"]["reason"]


def test_an_unreachable_cluster_is_one_line(tmp_path):
    with VisionFixtureServer() as server:
        code, _ = _run(server, tmp_path, "x.json", "--ray", "127.0.0.1:1")
    assert code == 1
    assert "cannot join the Ray cluster at 127.0.0.1:1" in _run.err  # type: ignore[attr-defined]


def test_ray_local_starts_a_private_cluster_here_with_its_desktops(tmp_path):
    with VisionFixtureServer(delay_s=0.2) as server:
        _, serial = _run(server, tmp_path, "serial.json")
        code, pooled = _run(server, tmp_path, "local.json", "--workers", "2", "--ray", "local",
                            "--desktops-per-node", "2")
    assert code == 0 and _cases(pooled) == _cases(serial)
    assert pooled["pool"]["ray"] == "local"
