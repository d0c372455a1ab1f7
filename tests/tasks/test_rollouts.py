"""`conway rollouts`: each task K times on its own disposable desktop, sampling seeds recorded and sent, the
requests kept as sent, the checker's score as the reward, a manifest written last; the same rewards per
(task, seed) from a worker pool as from the serial run; bad input in one line; all-equal rewards said.

Real desktops (bubblewrap, Xvfb, a session bus), the real loop and real checkers. The model is a scripted
OpenAI-compatible server (tests/fixtures/scripted_server.py) whose answer depends on the request's seed: the
point is what reaches the model and what is kept, not what a model would say.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer
from helpers.task_desktop import need_desktop
from helpers.task_suites import mock_suite, ok_task

from conway.cli.main import main

WRITE_OK = {"thought": "", "action": {"type": "shell", "command": "echo ok > ~/out.txt"}}
WAIT = {"thought": "", "action": {"type": "wait", "seconds": 0.1}}


def _by_seed(body: dict) -> Reply:
    """Even seeds write the file the checker wants (reward 1), odd ones wait (reward 0)."""
    return Reply.text(json.dumps(WRITE_OK if body.get("seed", 0) % 2 == 0 else WAIT))


def _suite(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    for n in names:
        (folder / f"{n}.json").write_text(json.dumps(ok_task(n)))
    return tmp_path / "suite"


def _rollouts(home: Path, suite: Path, out: Path, url: str, *extra: str) -> int:
    return main(["--home", str(home), "rollouts", str(suite), "policy=generic", f"policy.endpoint={url}",
                 "policy.structured_output=none", "--samples", "2", "--output", str(out), "--max-steps", "1",
                 "--quiet", *extra])


@pytest.mark.desktop
def test_rollouts_keep_requests_seeds_and_rewards_and_a_pool_agrees(tmp_path, capsys):
    need_desktop()
    suite = _suite(tmp_path, ["a", "b"])
    with ScriptedFakeServer(responder=_by_seed) as fake:
        assert _rollouts(tmp_path / "home", suite, tmp_path / "serial", fake.base_url) == 0
        sent = list(fake.chat_requests)
        assert _rollouts(tmp_path / "home", suite, tmp_path / "pooled", fake.base_url, "--workers", "2") == 0
    serial = json.loads((tmp_path / "serial" / "manifest.json").read_text())
    pooled = json.loads((tmp_path / "pooled" / "manifest.json").read_text())
    key = lambda m: sorted((r["task"], r["seed"], r["reward"]) for r in m["rollouts"])  # noqa: E731
    # every rollout its own seed: seed + K * the task's index + sample (the same seeds in every task made the k-th
    # sample of each draw the same random numbers)
    assert key(serial) == key(pooled) == [("a", 0, 1.0), ("a", 1, 0.0), ("b", 2, 1.0), ("b", 3, 0.0)]
    assert serial["tasks"]["a"] == {"rewards": [1.0, 0.0], "seeds": [0, 1], "mean_reward": 0.5, "signal": True}
    assert serial["tasks"]["b"]["seeds"] == [2, 3] and serial["seeds"] == "seed + samples * task index + sample"
    assert serial["signal"] and serial["no_signal"] is None and serial["temperature"] == 1.0
    assert serial["policy"]["endpoint"] == fake.base_url
    assert sorted(b["seed"] for b in sent) == [0, 1, 2, 3] and {b["temperature"] for b in sent} == {1.0}
    # the requests kept are the requests sent, the image written out beside them
    first = serial["rollouts"][0]
    kept = [json.loads(line) for line in (tmp_path / "serial" / first["requests"]["path"]).read_text().splitlines()]
    assert len(kept) == first["requests"]["count"] == 1
    body = next(b for b in sent if b["seed"] == first["seed"])
    image = kept[0]["messages"][-1]["content"][-1]
    url = body["messages"][-1]["content"][-1]["image_url"]["url"]
    data = base64.b64decode(url.split(",", 1)[1])
    folder = (tmp_path / "serial" / first["requests"]["path"]).parent
    assert (folder / image["image_url"]["url"]).read_bytes() == data and image["sha256"] == hashlib.sha256(data).hexdigest()
    assert kept[0]["messages"][0] == body["messages"][0] and kept[0]["answer"] == json.dumps(
        WRITE_OK if first["seed"] % 2 == 0 else WAIT)
    report = json.loads((tmp_path / "serial" / "rollouts.json").read_text())
    assert report["kind"] == "tasks" and [c["reward"] for c in report["cases"]] == [1.0, 0.0, 1.0, 0.0]
    out = capsys.readouterr().out
    assert "a: rewards 1 0" in out and "mean reward 0.500" in out
    # conway view draws the set: per task its rewards, one card (with its session) per rollout
    site = tmp_path / "site"
    assert main(["--home", str(tmp_path / "home"), "view", str(tmp_path / "serial" / "rollouts.json"), "--output",
                 str(site)]) == 0
    page = "\n".join(p.read_text() for p in site.rglob("*.html"))
    assert "rewards · a" in page and "1 0 (mean 0.5)" in page and "sample 1, seed 1" in page
    assert page.count("view --session") >= 4


@pytest.mark.desktop
def test_all_equal_rewards_are_reported_as_no_signal_and_mock_scripts_keep_stand_in_requests(tmp_path, capsys):
    # rollouts had no --mock-scripts (per-task scripts, as tasks run has), and a mock wrote no requests.jsonl
    need_desktop()
    steps = [{"action": {"type": "shell", "command": "echo ok > ~/out.txt"}},
             {"action": {"type": "finish", "status": "DONE", "message": "done"}}]
    suite, scripts = mock_suite(tmp_path, {"t": steps})
    code = main(["--home", str(tmp_path / "home"), "rollouts", str(suite), "--samples", "2", "--output",
                 str(tmp_path / "r"), "--quiet", "--mock-scripts", str(scripts)])
    assert code == 0
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["tasks"]["t"]["rewards"] == [1.0, 1.0] and not manifest["signal"]
    assert manifest["no_signal"].startswith("no signal") and "no signal" in capsys.readouterr().out
    assert manifest["policy"] == {"kind": "mock", "mock_script": None, "mock_scripts": str(scripts.resolve())}
    for rollout in manifest["rollouts"]:  # each decision the script made, as the request a model would have had
        kept = [json.loads(line) for line in
                (tmp_path / "r" / rollout["requests"]["path"]).read_text().splitlines()]
        assert len(kept) == rollout["requests"]["count"] == 2
        assert [k["answer"] for k in kept] == [json.dumps(s["action"]) for s in steps]
        assert all(k["stand_in"].startswith("the mock policy: no model was asked") for k in kept)
        assert kept[0]["seed"] == rollout["seed"] and kept[0]["messages"][0]["role"] == "system"
        image = kept[0]["messages"][-1]["content"][-1]
        folder = (tmp_path / "r" / rollout["requests"]["path"]).parent
        assert (folder / image["image_url"]["url"]).is_file() and image["media_type"].startswith("image/")
    # the report says what the command said: it showed "fail (exit 2)" while rollouts exited 0
    report = json.loads((tmp_path / "r" / "rollouts.json").read_text())
    assert (report["status"], report["exit_code"]) == ("scored", 0)
    assert main(["--home", str(tmp_path / "home"), "report", str(tmp_path / "r" / "rollouts.json")]) == 0
    text = capsys.readouterr().out
    assert "status:   scored (exit 0)" in text
    assert "apps: none (no task of this run names an application)" in text  # not "-" beside "(listed above)"


def test_a_suite_with_no_runnable_task_is_one_line(tmp_path, capsys):
    folder = tmp_path / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    task = ok_task("x")
    task["config"] = [{"type": "teleport", "parameters": {}}]
    (folder / "x.json").write_text(json.dumps(task))
    code = main(["--home", str(tmp_path / "home"), "rollouts", str(tmp_path / "suite"), "--samples", "2",
                 "--output", str(tmp_path / "r"), "--mock"])
    err = capsys.readouterr().err
    assert code == 1 and "has no task that can run here" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("args, says", [(["--samples", "0"], "--samples must be at least 1"),
                                        (["--temperature", "0"], "--temperature 0 samples the same answer"),
                                        (["--screen", "big"], "--screen must look like"),
                                        (["--mock-script", "a.yaml", "--mock-scripts", "."], "not both"),
                                        (["--mock-scripts", "nowhere"], "--mock-scripts")])
def test_bad_arguments_are_refused_before_anything_runs(tmp_path, capsys, args, says):
    suite, _ = mock_suite(tmp_path, {"t": []})
    code = main(["--home", str(tmp_path / "home"), "rollouts", str(suite), "--output", str(tmp_path / "r"), "--mock",
                 *args])
    assert code == 1 and says in capsys.readouterr().err


@pytest.mark.desktop
def test_rollouts_on_a_real_ray_cluster_give_the_serial_rewards_per_task_and_seed(tmp_path, tmp_path_factory):
    need_desktop()
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from helpers.ray_cluster import conway_process, ray_cluster

    suite = _suite(tmp_path, ["a", "b"])
    with ScriptedFakeServer(responder=_by_seed) as fake:
        assert _rollouts(tmp_path / "home", suite, tmp_path / "serial", fake.base_url) == 0
        with ray_cluster(tmp_path_factory.mktemp("ray")) as address:  # the driver in a process of its own
            done = conway_process("--home", str(tmp_path / "home"), "rollouts", str(suite), "policy=generic",
                                  f"policy.endpoint={fake.base_url}", "policy.structured_output=none", "--samples",
                                  "2", "--max-steps", "1", "--output", str(tmp_path / "ray"), "--workers", "2",
                                  "--ray", address, "--quiet")
    manifest = tmp_path / "ray" / "manifest.json"
    assert manifest.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    key = lambda m: sorted((r["task"], r["seed"], r["reward"]) for r in m["rollouts"])  # noqa: E731
    assert key(json.loads(manifest.read_text())) == key(json.loads((tmp_path / "serial" / "manifest.json").read_text()))
    assert json.loads((tmp_path / "ray" / "rollouts.json").read_text())["pool"]["ray"] == address


@pytest.mark.desktop
def test_ctrl_c_during_rollouts_leaves_no_manifest_and_nothing_to_train_on(tmp_path):
    """Stopped while the second rollout runs (a long shell command): exit 130, the finished rollout kept in the
    partial report, no manifest (the trainers read the manifest, so a partial set never trains anything)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    need_desktop()
    suite = _suite(tmp_path, ["a"])
    slow = {"thought": "", "action": {"type": "shell", "command": "sleep 60"}}

    def reply(body: dict) -> Reply:
        return Reply.text(json.dumps(WRITE_OK if body.get("seed", 0) == 0 else slow))

    repo = Path(__file__).resolve().parents[2]
    with ScriptedFakeServer(responder=reply) as fake:
        proc = subprocess.Popen([sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "home"), "rollouts",
                                 str(suite), "policy=generic", f"policy.endpoint={fake.base_url}",
                                 "policy.structured_output=none", "--samples", "2", "--max-steps", "1", "--output",
                                 str(tmp_path / "r")], cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 180
        while not any(b.get("seed") == 1 for b in fake.chat_requests) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.2)
        time.sleep(3)  # the second rollout is in its sleep
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 130, out
    assert not (tmp_path / "r" / "manifest.json").exists()
    assert "no manifest written" in out
    report = json.loads((tmp_path / "r" / "rollouts.json").read_text())
    assert report["status"] == "partial" and [(c["task"], c["reward"]) for c in report["cases"]] == [("a", 1.0)]
    from conway.errors import UserError
    from conway.evals.rollouts import load_rollouts
    with pytest.raises(UserError):
        load_rollouts(tmp_path / "r")
