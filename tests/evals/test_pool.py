"""The worker pool: vision-check's cases in worker processes (and Ray actors) give the serial run's report.

Answers come from the FAKE vision fixture server (tests/fixtures/vision_fixture_server.py), which finds the
named colour in each image; the workers are real processes building real generic policies over HTTP, and
the faults are real: a worker SIGKILLed mid-case, a real SIGINT to the driver.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path

import pytest
from fixtures.vision_fixture_server import VisionFixtureServer

from conway.cli.main import main

SIZE = "640x400"


def _run(server: VisionFixtureServer, tmp_path: Path, name: str, *extra: str, samples: int = 6,
         seed: int = 3) -> tuple[int, dict]:
    out = tmp_path / name
    code = main(["vision-check", "--samples", str(samples), "--seed", str(seed), "--size", SIZE, "--output", str(out),
                 "--quiet", "--endpoint", server.base_url, "policy=generic", "policy.structured_output=none", *extra])
    return code, (json.loads(out.read_text()) if out.exists() else {})


def _cases(report: dict) -> list[tuple]:
    """What a case is, apart from timings."""
    return [(c["index"], c["image"]["sha256"], c["predicted"], c["hit"], c["raw_output"]) for c in report["cases"]]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CONWAY_HOME", str(tmp_path / "home"))


def test_workers_give_the_serial_report_case_by_case(tmp_path):
    with VisionFixtureServer(delay_s=0.2) as server:
        code1, serial = _run(server, tmp_path, "serial.json")
        server.max_in_flight = 0
        code2, pooled = _run(server, tmp_path, "pool.json", "--workers", "2")
    assert code1 == code2 == 0
    assert _cases(pooled) == _cases(serial)
    assert pooled["summary"]["hits"] == serial["summary"]["hits"] == 6
    assert pooled["pool"]["workers"] == 2 and serial["pool"]["workers"] == 1
    assert server.max_in_flight == 2  # both workers really asked at once
    assert not any("retried" in c for c in pooled["cases"])
    assert pooled["served_by"] == serial["served_by"] == {"server": "fixture", "model_id": "fake-vision-1"}


def test_a_pooled_report_names_what_served_each_endpoints_workers(tmp_path):
    """The workers' policies never reach the driver: each worker asks its own what served it and the report names
    it; workers served differently (two servers) are each named with their endpoint."""
    with VisionFixtureServer(model_id="model-a") as a, VisionFixtureServer(model_id="model-b") as b:
        urls = a.base_url, b.base_url
        code, report = _run(a, tmp_path, "two.json", "--workers", "2", "--pool-endpoint", urls[0],
                            "--pool-endpoint", urls[1], samples=4)
    assert code == 0 and a.request_count and b.request_count
    assert sorted(report["served_by"], key=lambda s: s["model_id"]) == [
        {"endpoint": urls[0], "server": "fixture", "model_id": "model-a"},
        {"endpoint": urls[1], "server": "fixture", "model_id": "model-b"}]



def test_unusable_answers_cross_the_workers_with_their_causes(tmp_path):
    """A case's error carries its cause (conway.evals.clicks.CaseError): the worker's record must unpickle whole."""
    with VisionFixtureServer(mode="garbage") as server:
        code1, serial = _run(server, tmp_path, "serial.json", samples=3)
        code2, pooled = _run(server, tmp_path, "pool.json", "--workers", "2", samples=3)
    assert code1 == code2
    assert [c["error"] for c in pooled["cases"]] == [c["error"] for c in serial["cases"]]
    assert all(c["error"] for c in pooled["cases"])
    assert pooled["summary"]["model_errors"] == serial["summary"]["model_errors"] != {}

def test_an_endpoint_never_gets_more_requests_than_its_slots(tmp_path):
    with VisionFixtureServer(delay_s=0.2) as server:
        url = server.base_url
        code, report = _run(server, tmp_path, "slots.json", "--workers", "3", "--pool-endpoint", f"{url}@1",
                            samples=4)
    assert code == 0 and len(report["cases"]) == 4
    assert server.max_in_flight == 1
    assert report["pool"]["endpoints"] == [{"url": url, "slots": 1}]


def test_a_worker_killed_mid_case_has_its_case_run_once_more_elsewhere(tmp_path):
    with VisionFixtureServer(delay_s=0.5) as server:
        _, serial = _run(server, tmp_path, "serial.json")
        killed: list[int] = []

        def kill_one(count: int) -> None:
            if count == 8 and not killed:  # the pool's 2nd request: all workers busy
                victim = sorted(multiprocessing.active_children(), key=lambda p: p.name)[0]
                killed.append(victim.pid)
                os.kill(victim.pid, signal.SIGKILL)

        server.on_request = kill_one
        code, pooled = _run(server, tmp_path, "pool.json", "--workers", "2")
    assert killed
    assert code == 0
    assert _cases(pooled) == _cases(serial)  # every case once, none lost, none twice
    retried = [c for c in pooled["cases"] if "retried" in c]
    assert len(retried) == 1
    assert "died (signal 9)" in retried[0]["retried"]["reason"]


def test_ctrl_c_writes_a_partial_report_that_resume_completes(tmp_path):
    with VisionFixtureServer(delay_s=0.3) as server:
        _, serial = _run(server, tmp_path, "serial.json", samples=8)
        first = server.request_count

        def interrupt(count: int) -> None:
            if count == first + 4:
                os.kill(os.getpid(), signal.SIGINT)

        server.on_request = interrupt
        code, partial = _run(server, tmp_path, "partial.json", "--workers", "2", samples=8)
        assert code == 130 and partial["status"] == "partial"
        kept = len(partial["cases"])
        assert 1 <= kept < 8 and len(partial["case_positions"]) == kept
        server.on_request = None
        before = server.request_count
        code, resumed = _run(server, tmp_path, "resumed.json", "--workers", "2", "--resume",
                             str(tmp_path / "partial.json"), samples=8)
        asked = server.request_count - before
    assert code == 0 and resumed["status"] == "pass"
    assert _cases(resumed) == _cases(serial)
    assert asked == 8 - kept  # finished cases are not run again
    assert "kept from the resumed report" in resumed["summary"]["resumed"]


@pytest.mark.parametrize("extra, message", [
    (("--workers", "0"), "--workers must be at least 1"),
    (("--workers", "2", "--parallel", "2"), "use one or the other"),
    (("--pool-endpoint", "ftp://x"), "expected an http(s) URL"),
    (("--pool-endpoint", "http://127.0.0.1:1/v1@x"), "whole number"),
    (("--workers", "2", "--pool-endpoint", "http://127.0.0.1:9/v1@0"), "slots must be at least 1"),
    (("--workers", "2", "--desktops-per-node", "2"), "sizes the private cluster of --ray local"),
    (("--workers", "2", "--ray", "local", "--desktops-per-node", "0"), "--desktops-per-node must be at least 1"),
])
def test_bad_pool_arguments_are_one_line(tmp_path, capsys, extra, message):
    with VisionFixtureServer() as server:
        code, _ = _run(server, tmp_path, "bad.json", *extra)
    assert code == 1
    assert message in capsys.readouterr().err


def test_resume_refuses_a_complete_report_or_another_seed(tmp_path, capsys):
    with VisionFixtureServer() as server:
        _run(server, tmp_path, "done.json", samples=2)
        code, _ = _run(server, tmp_path, "again.json", "--resume", str(tmp_path / "done.json"), samples=2)
        assert code == 1 and "nothing to resume" in capsys.readouterr().err
        report = json.loads((tmp_path / "done.json").read_text())
        report.update(status="partial", case_positions=[0, 1])
        (tmp_path / "fake-partial.json").write_text(json.dumps(report))
        code, _ = _run(server, tmp_path, "seed.json", "--resume", str(tmp_path / "fake-partial.json"), samples=2,
                       seed=99)
        assert code == 1 and "another seed" in capsys.readouterr().err


def test_a_worker_that_cannot_build_its_policy_is_a_setup_error(tmp_path, capsys):
    code = main(["vision-check", "--samples", "2", "--size", SIZE, "--output", str(tmp_path / "x.json"), "--quiet",
                 "--endpoint", "http://127.0.0.1:9/v1", "policy=generic", "--workers", "2"])
    assert code == 1
    assert "could not build the policy" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
