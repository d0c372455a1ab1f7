"""Real model servers Conway starts itself — llama.cpp's `llama-server` and llama-cpp-python's server —
on the tiny random-weight VLM: an image request returns a grammar-constrained action that parses,
`conway probe` passes, `conway run --max-steps 3` journals three real decisions, and afterwards the
server is gone."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from conftest import run_cli

from conway.actions import _Action
from conway.config import load_config
from conway.store.home import resolve_home
from conway.store.journal import read_journal

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-vlm"
MODEL, MMPROJ = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"

pytestmark = [pytest.mark.llama, pytest.mark.slow]

PROGRAMS = ["llama-server", "llama-cpp-python"]


def require(program: str) -> None:
    if not MODEL.exists() or not MMPROJ.exists():
        pytest.skip("tiny VLM fixtures missing (python -m scripts.build.build_tiny_vlm --out tests/fixtures/tiny-vlm)")
    from conway.config import RuntimeConfig
    from conway.errors import UserError
    from conway.runtime.server import find_program
    try:
        found = find_program(RuntimeConfig(server=program))
    except UserError as exc:
        pytest.skip(f"{program} is not available here: {exc}")
    if found.kind != program:
        pytest.skip(f"{program} is not available here")


def server_args(program: str) -> list[str]:
    return ["policy=generic", "policy.backend=http", f"policy.model_path={MODEL}", f"policy.mmproj_path={MMPROJ}",
            f"runtime.server={program}", "runtime.n_ctx=8192", "runtime.n_threads=1", "policy.max_tokens=1536",
            "runtime.startup_timeout_s=120"]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); check its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        return state != "Z"
    except OSError:
        return False


def started_pids(log: Path) -> list[int]:
    return [int(p) for p in re.findall(r"ready at http://127\.0\.0\.1:\d+/v1 after [\d.]+ s \(pid (\d+)\)",
                                       log.read_text())]


@pytest.mark.parametrize("program", PROGRAMS)
def test_image_request_grammar_action_and_the_server_stops(program, conway_home):
    require(program)
    from conway.policies.factory import build_model_policy
    from conway.readiness.checks.decision import probe_context
    policy = build_model_policy(load_config(None, server_args(program)), resolve_home(None))
    server = policy.server
    pid = server.proc.pid
    try:
        assert server.host == "127.0.0.1" and pid_alive(pid)
        assert policy.backend.server == program
        ctx = probe_context((640, 400))
        d = policy.decide(ctx)
        assert d.meta["structured_output"] == "grammar", policy.backend.structured_report
        assert d.actions and all(isinstance(a, _Action) for a in d.actions), (d.raw_text, d.actions)
        assert d.meta["sent_size"] == [644, 392] and d.usage.get("prompt_tokens", 0) > 322
        if program == "llama-server":
            assert policy.backend.structured_support() == ["grammar", "json_object", "json_schema"]
            assert d.meta["timings"]["prompt_n"] > 0  # llama.cpp timings come back and are recorded
            d2 = policy.decide(ctx)  # same prompt again: cache_prompt reuses it
            assert d2.usage["cached_tokens"] > 300, d2.usage
        else:
            support = policy.backend.structured_support()
            assert "grammar" in support and "json_schema" not in support  # 500s on json_schema
    finally:
        policy.close()
    assert not pid_alive(pid)
    log = (conway_home / "llama-runtime.log").read_text()
    assert f"conway starts {program}" in log and "conway stopped" in log


@pytest.mark.parametrize("program", PROGRAMS)
def test_conway_probe_passes(program, conway_home):
    require(program)
    proc = run_cli("probe", *server_args(program), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "probe: PASS" in proc.stdout and f"on {program}" in proc.stdout and "uses grammar" in proc.stdout
    pids = started_pids(conway_home / "llama-runtime.log")
    assert pids and not any(pid_alive(p) for p in pids)


@pytest.mark.parametrize("program", PROGRAMS)
def test_run_max_steps_3_journals_three_real_decisions_and_the_server_is_gone(program, initialized_home):
    require(program)
    proc = run_cli("run", "--max-steps", "3", *server_args(program), "observe.source=synthetic", "tools.enabled=[]",
                   "agent.idle_backoff_start_s=0.05", "agent.idle_backoff_max_s=0.1", timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = read_journal(initialized_home / "journal").events
    decisions = [e["payload"] for e in events if e["kind"] == "decision"]
    assert len(decisions) == 3, [e["kind"] for e in events]
    for d in decisions:
        assert d["model_id"] == "tiny-vlm" and d["backend"] == "http" and d["server"] == program
        assert d["started_by_conway"] is True and d["structured_output"] == "grammar"
        assert d["actions"] and all("problem" not in a for a in d["actions"]), d
        assert d["usage"]["prompt_tokens"] > 322
    assert "stopped after 3 step(s): max-steps budget (3) reached" in proc.stdout
    pids = started_pids(initialized_home / "llama-runtime.log")
    assert len(pids) == 1
    deadline = time.monotonic() + 5
    while pid_alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(pids[0]), "the model server outlived conway run"


def test_llama_server_that_fails_to_load_shows_its_log(tmp_path, conway_home):
    require("llama-server")
    from helpers.gguf_files import projector, vlm_text_model
    model, mmproj = vlm_text_model(tmp_path / "broken.gguf"), projector(tmp_path / "mmproj.gguf")
    proc = run_cli("probe", "policy=generic", "policy.backend=http", f"policy.model_path={model}",
                   f"policy.mmproj_path={mmproj}", "runtime.server=llama-server", timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "exited with code" in proc.stderr and "last lines of" in proc.stderr and "llama-runtime.log" in proc.stderr


def test_sigterm_to_conway_run_stops_the_server(initialized_home):
    """A cooperative SIGTERM ends the run cleanly and the server Conway started goes with it."""
    require("llama-server")
    import subprocess
    import sys

    from conftest import REPO
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", *server_args("llama-server"),
                             "observe.source=synthetic", "tools.enabled=[]", "agent.idle_backoff_start_s=0.2",
                             "agent.idle_backoff_max_s=0.4"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    log = initialized_home / "llama-runtime.log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (log.exists() and started_pids(log)):
        time.sleep(0.2)
    pids = started_pids(log)
    assert pids, proc.stderr.read() if proc.poll() is not None else "server never became ready"
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    deadline = time.monotonic() + 5
    while pid_alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(pids[0])
