"""acceptance-check in the worker pool: two workers, one check each, verified as the serial run verifies them.

The model is a FAKE scripted HTTP server (tests/fixtures/scripted_server.py) whose responder reads the
request's prompt: which task it is (the goal names the note or the program) and how many steps the session
has taken (its "recent steps" list), and answers that task's next action. The loop, tools, workers and
Conway's own verification are real.
"""

from __future__ import annotations

import json
import pickle
import re
import shlex
import sys
import threading
from pathlib import Path

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer

from conway.cli.main import main
from conway.evals.acceptance_check import AcceptanceSuite, make_checks, make_tasks

SEED = 11


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CONWAY_HOME", str(tmp_path / "home"))


def _prompt(body: dict) -> str:
    parts = []
    for m in body["messages"]:
        c = m["content"]
        parts += [c] if isinstance(c, str) else [x.get("text", "") for x in c if isinstance(x, dict)]
    return "\n".join(parts)


def _action(body: dict) -> tuple[str, int, dict]:
    """(task, steps taken, the action that task's next step is)."""
    t = make_tasks(SEED)
    prompt = _prompt(body)
    steps = len(re.findall(r"^- step \d+:", prompt, flags=re.M))
    py = shlex.quote(sys.executable)
    if t.note_name in prompt:
        task, script = "file", [{"type": "append_file", "path": t.note_name, "text": t.note_content},
                                {"type": "read_file", "path": t.note_name}]
    elif t.program_copy in prompt:
        task, script = "program", [{"type": "shell", "command": f"cp {t.program_source} {t.program_copy}"},
                                   {"type": "shell", "command": f"{py} {t.program_copy}"}]
    else:
        raise AssertionError("a prompt that names neither task")
    action = script[steps] if steps < len(script) else {"type": "finish", "status": "DONE", "message": "done"}
    return task, steps, action


class Model:
    """The responder; with `gate`, the file task's answers wait until the program task has asked (so a run that
    finishes both proves two workers ran them at once)."""

    def __init__(self, gate: bool):
        self.gate = gate
        self.program_asked = threading.Event()
        self.seen: list[tuple[str, int]] = []

    def __call__(self, body: dict) -> Reply:
        task, steps, action = _action(body)
        self.seen.append((task, steps))
        if task == "program":
            self.program_asked.set()
        elif self.gate and not self.program_asked.wait(60):
            action = {"type": "finish", "status": "FAIL", "message": "the other worker never asked"}
        return Reply.text(json.dumps({"thought": f"{task} step {steps + 1}", "action": action}))


def _check(tmp_path: Path, name: str, model: Model, *pool: str) -> tuple[int, dict]:
    out = tmp_path / f"{name}.json"
    with ScriptedFakeServer(responder=model) as server:
        code = main(["acceptance-check", "--endpoint", server.base_url, "--seed", str(SEED), "--max-steps", "5",
                     "--output", str(out), *pool, "policy.structured_output=none"])
    return code, json.loads(out.read_text())


def _verdicts(report: dict) -> list[tuple]:
    return [(c["check"], c["verified"], c["observed"], (c["declared"] or {}).get("status"), c["steps"])
            for c in report["cases"]]


def test_two_workers_verify_both_checks_as_the_serial_run_does(tmp_path):
    serial_code, serial = _check(tmp_path, "serial", Model(gate=False))
    model = Model(gate=True)
    code, pooled = _check(tmp_path, "pooled", model, "--workers", "2")
    assert serial_code == code == 0
    assert _verdicts(pooled) == _verdicts(serial)
    assert [c["verified"] for c in pooled["cases"]] == [True, True]
    assert pooled["summary"] == {**serial["summary"]}
    assert pooled["pool"]["workers"] == 2 and serial["pool"] == {"workers": 1, "parallel": 1}
    assert {task for task, _ in model.seen} == {"file", "program"}


def test_the_checks_and_the_suite_cross_a_process(tmp_path):
    """What a worker is sent must pickle: the checks' prepare/verify and the suite (its `say` included)."""
    from conway.config import load_config
    from conway.store.home import Home
    checks = pickle.loads(pickle.dumps(make_checks(make_tasks(SEED))))
    work = tmp_path / "work"
    work.mkdir()
    checks[1].prepare(work)
    assert (work / make_tasks(SEED).program_source).is_file()
    assert checks[1].verify(work, [])[0] is False and checks[0].verify(work, [])[0] is False
    config = load_config(Home(tmp_path / "home").config, [])
    suite = pickle.loads(pickle.dumps(AcceptanceSuite(config, tmp_path, 5, 60.0, 2, print)))
    assert suite.say is print


def test_resume_of_a_complete_acceptance_report_is_refused(tmp_path, capsys):
    code, _ = _check(tmp_path, "done", Model(gate=False))
    assert code == 0
    with ScriptedFakeServer(responder=Model(gate=False)) as server:
        code = main(["acceptance-check", "--endpoint", server.base_url, "--output", str(tmp_path / "again.json"),
                     "--resume", str(tmp_path / "done.json"), "policy.structured_output=none"])
    assert code == 1
    assert "nothing to resume" in capsys.readouterr().err


def test_ctrl_c_gives_a_partial_report_that_a_pool_resumes_with_its_seed(tmp_path):
    """Serial run stopped as the second check starts; `--resume` (no --seed) runs only that check in a pool."""
    import os
    import signal

    class StopAtProgram(Model):
        def __call__(self, body: dict) -> Reply:
            if _action(body)[0] == "program" and not self.program_asked.is_set():
                self.program_asked.set()
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C, as the terminal sends it to the command
            return super().__call__(body)

    model = Model(gate=False)
    with ScriptedFakeServer(responder=StopAtProgram(gate=False)) as server:  # one endpoint: the same config
        def check(name: str, *extra: str) -> tuple[int, dict]:
            out = tmp_path / f"{name}.json"
            code = main(["acceptance-check", "--endpoint", server.base_url, "--max-steps", "5", "--output", str(out),
                         *extra, "policy.structured_output=none"])
            return code, json.loads(out.read_text())

        code, partial = check("partial", "--seed", str(SEED))
        assert code == 130 and partial["status"] == "partial"
        assert [c["check"] for c in partial["cases"]] == ["file_roundtrip"] and partial["case_positions"] == [0]
        assert "1 of 2 case(s) finished" in partial["summary"]["interrupted"]
        server.responder = model
        code, resumed = check("resumed", "--workers", "2", "--resume", str(tmp_path / "partial.json"))
    assert code == 0 and resumed["seed"] == SEED
    assert [c["verified"] for c in resumed["cases"]] == [True, True]
    assert {task for task, _ in model.seen} == {"program"}  # the finished check was not run again
    assert "kept from the resumed report" in resumed["summary"]["resumed"]


def test_ray_actors_verify_both_checks_as_the_serial_run_does(tmp_path):
    """The same two checks as Ray actors of a private cluster here (--ray local): the serial verdicts."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    from helpers.ray_cluster import conway_process

    assert ray
    _, serial = _check(tmp_path, "serial", Model(gate=False))
    out = tmp_path / "ray.json"
    with ScriptedFakeServer(responder=Model(gate=True)) as server:  # the driver in a process of its own
        done = conway_process("acceptance-check", "--endpoint", server.base_url, "--seed", str(SEED), "--max-steps",
                              "5", "--output", str(out), "--workers", "2", "--ray", "local",
                              "--desktops-per-node", "2", "policy.structured_output=none")
    pooled = json.loads(out.read_text())
    assert done.returncode == 0 and _verdicts(pooled) == _verdicts(serial), done.stderr[-2000:]
    assert pooled["pool"]["ray"] == "local"
