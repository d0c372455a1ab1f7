"""preflight: each check on real homes, endpoints and (when Xvfb is here) a real display."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer

from conway.cli.main import main
from conway.store.state import InstanceLock, atomic_write_json

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "fixtures" / "tiny-vlm"


def _preflight(tmp_path: Path, *args: str, name: str = "pf.json") -> tuple[int, dict]:
    out = tmp_path / name
    code = main(["preflight", "--output", str(out), *args])
    return code, (json.loads(out.read_text()) if out.exists() else {})


def _checks(data: dict) -> dict[str, dict]:
    return {c["check"]: c for c in data["cases"]}


def test_fresh_home_with_mock_is_ready(tmp_path, initialized_home, capsys):
    code, data = _preflight(tmp_path, "--mock")
    assert code == 0
    checks = _checks(data)
    assert checks["configuration"]["status"] == "ok"
    assert checks["constitution"]["status"] == "ok"
    assert checks["recovery: pending intent"]["status"] == "ok"
    assert checks["recovery: lock"]["status"] == "ok"
    assert checks["recovery: journal tail"]["status"] == "ok"
    assert checks["memory"]["status"] == "ok" and "GiB available" in checks["memory"]["detail"]
    assert checks["model"]["status"] == "ok"
    assert checks["desktop"]["status"] == "not_checked"
    assert "desktop readiness was not checked" in checks["desktop"]["detail"]
    assert data["summary"] == {"ready": True, "failed": [], "warnings": [], "desktop_checked": False}
    assert data["kind"] == "preflight" and data["model_id"] == "conway-mock"
    assert data["parameters"]["downloads"] == "never"
    out = capsys.readouterr().out
    assert "ready (desktop readiness not checked; add --desktop)" in out


def test_missing_constitution_is_not_ready(tmp_path, conway_home, capsys):
    code, data = _preflight(tmp_path, "--mock")
    assert code == 2
    assert _checks(data)["constitution"]["status"] == "fail"
    assert data["summary"]["failed"] == ["constitution"]
    assert "not ready: constitution" in capsys.readouterr().out


def test_invalid_config_is_a_reason_not_a_crash(tmp_path, initialized_home):
    (initialized_home / "config.yaml").write_text("agent: {no_such_key: 1}\n")
    code, data = _preflight(tmp_path)
    assert code == 2
    checks = _checks(data)
    assert checks["configuration"]["status"] == "fail" and "no_such_key" in checks["configuration"]["detail"]
    assert checks["model"]["status"] == "not_checked"
    assert data["config"] is None


def test_recovery_state_is_reported(tmp_path, initialized_home):
    home = initialized_home
    atomic_write_json(home / "state.json", {"session": "s-old", "status": "running", "pending": {
        "step": 4, "action": {"type": "click", "x": 1, "y": 2}, "summary": "click(x=1, y=2)"}})
    (home / "instance.lock").write_text("12345")  # a lock file nobody holds
    jdir = home / "journal"
    jdir.mkdir(exist_ok=True)
    (jdir / "000001-20260101T000000000000.jsonl").write_bytes(b'{"kind": "intent"}\n{"kind": "res')
    code, data = _preflight(tmp_path, "--mock")
    assert code == 0  # reported, not blocking: the next run records and recovers each
    checks = _checks(data)
    assert checks["recovery: pending intent"]["status"] == "warn"
    assert "click(x=1, y=2)" in checks["recovery: pending intent"]["detail"]
    assert "not replay" in checks["recovery: pending intent"]["detail"]
    # a lock file nobody holds is not a problem (the next run takes it); its pid is mentioned
    assert checks["recovery: lock"]["status"] == "ok"
    assert "not held" in checks["recovery: lock"]["detail"] and "12345" in checks["recovery: lock"]["detail"]
    assert checks["recovery: journal tail"]["status"] == "warn"
    assert "torn" in checks["recovery: journal tail"]["detail"]
    assert set(data["summary"]["warnings"]) == {"recovery: pending intent", "recovery: journal tail"}


def test_an_open_intent_only_the_journal_knows_is_reported(tmp_path, initialized_home):
    """A quick action's intent is not copied into state.json: the journal alone tells preflight about it."""
    home = initialized_home
    atomic_write_json(home / "state.json", {"session": "s-old", "status": "running"})
    jdir = home / "journal"
    jdir.mkdir(exist_ok=True)
    intent = {"kind": "intent", "step": 7, "session": "s-old",
              "payload": {"action": {"type": "key", "keys": "ctrl+s"}, "summary": "key(keys='ctrl+s')"}}
    (jdir / "000001-20260101T000000000000.jsonl").write_text(json.dumps(intent) + "\n")
    code, data = _preflight(tmp_path, "--mock")
    check = _checks(data)["recovery: pending intent"]
    assert code == 0 and check["status"] == "warn", check
    assert "key(keys='ctrl+s')" in check["detail"] and "session s-old" in check["detail"]
    # once the outcome is journaled there is nothing to recover
    with open(jdir / "000001-20260101T000000000000.jsonl", "a") as f:
        f.write(json.dumps({"kind": "result", "step": 7, "session": "s-old", "payload": {"ok": True}}) + "\n")
    code, data = _preflight(tmp_path, "--mock", name="pf2.json")
    assert _checks(data)["recovery: pending intent"]["status"] == "ok"


def test_the_empty_lock_a_clean_run_leaves_is_not_reported(tmp_path, initialized_home):
    from conway.config import load_config
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import resolve_home
    home = resolve_home(None)
    run_agent(home, load_config(home.config, ["policy=mock", "agent.max_steps=1"]),
              RunRequest(single_session=False, quiet=True), say=lambda _s: None)
    assert (initialized_home / "instance.lock").exists()  # the file stays; nobody holds it
    code, data = _preflight(tmp_path, "--mock")
    assert code == 0
    lock = _checks(data)["recovery: lock"]
    assert lock["status"] == "ok" and "stale" not in lock["detail"] and "ended without" not in lock["detail"]
    assert data["summary"]["warnings"] == []


def test_live_lock_holder_reported(tmp_path, initialized_home):
    lock = InstanceLock(initialized_home / "instance.lock")
    lock.acquire()
    try:
        code, data = _preflight(tmp_path, "--mock")
    finally:
        lock.release()
    assert code == 0
    detail = _checks(data)["recovery: lock"]["detail"]
    assert f"pid {os.getpid()}" in detail and "running" in detail


def test_endpoint_serving_the_model_is_ready(tmp_path, initialized_home):
    good = Reply.text('{"thought": "the window", "action": {"type": "click", "x": 100, "y": 100}}')
    with ScriptedFakeServer(models=["served-vlm"], replies=[good]) as server:
        code, data = _preflight(tmp_path, "--endpoint", server.base_url, "policy=generic")
        assert code == 0
        check = _checks(data)["endpoint serves the model"]
        assert check["status"] == "ok" and "served-vlm" in check["detail"]
        assert data["model_id"] == "served-vlm" and data["endpoint"] == server.base_url
        code, data = _preflight(tmp_path, "--endpoint", server.base_url, "--model", "other", "policy=generic",
                                name="other.json")
    assert code == 2
    detail = _checks(data)["endpoint serves the model"]["detail"]
    assert "'other' is not served" in detail and "served-vlm" in detail


def test_unreachable_endpoint_is_not_ready_with_the_reason(tmp_path, initialized_home, capsys):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, data = _preflight(tmp_path, "--endpoint", f"http://127.0.0.1:{port}/v1", "policy=generic")
    assert code == 2
    assert _checks(data)["endpoint serves the model"]["status"] == "fail"
    assert f"127.0.0.1:{port}" in capsys.readouterr().out


def test_no_model_configured(tmp_path, initialized_home):
    code, data = _preflight(tmp_path, "policy=generic")
    assert code == 2
    assert "needs a model" in _checks(data)["model"]["detail"]


def test_missing_local_model_file(tmp_path, initialized_home):
    code, data = _preflight(tmp_path, "policy=generic", f"policy.model_path={tmp_path / 'nope.gguf'}")
    assert code == 2
    check = _checks(data)["local model"]
    assert check["status"] == "fail" and "nope.gguf" in check["detail"]


@pytest.mark.skipif(not (TINY / "tiny-vlm.gguf").exists() and not list(TINY.glob("*.gguf")),
                    reason="tiny VLM fixtures not built (scripts/build/build_tiny_vlm.py)")
def test_local_tiny_vlm_present_and_fitting(tmp_path, initialized_home):
    ggufs = sorted(TINY.glob("*.gguf"))
    model = next(p for p in ggufs if "mmproj" not in p.name)
    mmproj = next(p for p in ggufs if "mmproj" in p.name)
    code, data = _preflight(tmp_path, "policy=generic", "policy.backend=http", f"policy.model_path={model}",
                            f"policy.mmproj_path={mmproj}", "policy.image_max_tokens=1024", "runtime.n_ctx=4096")
    checks = _checks(data)
    assert checks["local model"]["status"] == "ok"
    assert checks["model fits"]["status"] == "ok" and "estimate" in checks["model fits"]["detail"]
    assert checks["context fits"]["status"] == "ok", checks["context fits"]
    assert "server program" in checks  # ok when llama-server or llama-cpp-python is here, else the reason
    assert code == (0 if checks["server program"]["status"] == "ok" else 2)


def test_a_context_that_cannot_fit_is_not_ready_with_the_numbers(tmp_path, initialized_home, capsys):
    """The tiny VLM was trained for 4,096 tokens: a 1920x1080 screen's image alone takes 2,691 of them."""
    model, mmproj = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"
    code, data = _preflight(tmp_path, "policy=generic", f"policy.model_path={model}", f"policy.mmproj_path={mmproj}",
                            "runtime.n_ctx=16384")
    check = _checks(data)["context fits"]
    assert code == 2 and check["status"] == "fail"
    assert check["detail"].startswith("window 4096 tokens (runtime.n_ctx held to the GGUF's context_length) − "
                                      "image 2691")
    assert check["data"]["n_ctx_train"] == 4096 and check["data"]["text_tokens"] < 512
    assert "not ready: context fits: window 4096 tokens" in capsys.readouterr().out


def test_the_configured_port_already_taken_is_not_ready_like_run(tmp_path, initialized_home):
    import socket
    model, mmproj = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        code, data = _preflight(tmp_path, "policy=generic", "policy.backend=http", f"policy.model_path={model}",
                                f"policy.mmproj_path={mmproj}", f"runtime.port={port}", "policy.image_max_tokens=1024")
    check = _checks(data)["server start-up"]
    assert code == 2 and check["status"] == "fail" and f"port {port} on 127.0.0.1 is already in use" in check["detail"]


def test_an_unwritable_tools_workdir_is_not_ready(tmp_path, initialized_home):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        code, data = _preflight(tmp_path, "--mock", f"tools.workdir={locked / 'work'}")
    finally:
        locked.chmod(0o700)
    check = _checks(data)["tools working directory"]
    if os.geteuid() == 0:  # root writes anywhere: the check passes, honestly
        assert check["status"] == "ok"
    else:
        assert code == 2 and check["status"] == "fail" and "not writable" in check["detail"]


def test_the_report_records_the_command_s_whole_duration(tmp_path, initialized_home):
    from datetime import datetime, timezone
    before = datetime.now(timezone.utc)
    code, data = _preflight(tmp_path, "--mock")
    after = datetime.now(timezone.utc)
    started = datetime.fromisoformat(data["started_at"])
    ended = datetime.fromisoformat(data["ended_at"])
    assert data["duration_s"] == pytest.approx((ended - started).total_seconds(), abs=0.01)
    assert before <= started < ended <= after  # the checks run between the two (no timed bound: machines are noisy)


def test_desktop_without_display_fails_clearly(tmp_path, initialized_home, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    code, data = _preflight(tmp_path, "--mock", "--desktop")
    assert code == 2
    check = _checks(data)["desktop"]
    assert check["status"] == "fail" and "screenshot failed" in check["detail"]
    assert data["summary"]["desktop_checked"] is True


@pytest.fixture
def xvfb_display():
    if not shutil.which("Xvfb"):
        pytest.skip("Xvfb is not installed")
    from conway.machine.xvfb import start_xvfb
    server = start_xvfb(800, 600)
    try:
        yield server.display
    finally:
        server.stop()


@pytest.mark.desktop
def test_desktop_screenshot_is_taken_and_deleted(tmp_path, initialized_home, monkeypatch, xvfb_display):
    monkeypatch.setenv("DISPLAY", xvfb_display)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    code, data = _preflight(tmp_path, "--mock", "--desktop")
    assert code == 0
    check = _checks(data)["desktop"]
    assert check["status"] == "ok" and check["data"]["captured_size"] == [800, 600]
    assert "deleted and not sent to a model" in check["detail"]
    assert list(scratch.iterdir()) == []  # the temporary image and its folder are gone


@pytest.mark.parametrize("where", ["exists", "in_home"])
def test_output_refused(tmp_path, initialized_home, capsys, where):
    out = tmp_path / "pf.json" if where == "exists" else initialized_home / "pf.json"
    if where == "exists":
        out.write_text("{}")
    assert main(["preflight", "--mock", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert ("already exists" if where == "exists" else "inside the Conway home") in err


def test_preflight_without_output_prints_the_checks_and_writes_nothing(tmp_path, initialized_home, capsys,
                                                                         monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["preflight", "--mock"]) == 0
    out = capsys.readouterr().out
    assert "configuration" in out and "constitution" in out and "ready" in out and "report:" not in out
    assert list(here.iterdir()) == []


def test_preflight_report_to_standard_output(initialized_home):
    from conftest import run_cli
    r = run_cli("preflight", "--mock", "--output", "/dev/stdout", env={"CONWAY_HOME": str(initialized_home)})
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)  # the report alone: the table went to stderr
    assert report["kind"] == "preflight" and report["status"] == "ready"
    assert "constitution" in r.stderr and "ready" in r.stderr


# --- one real decision: listing the model is not enough ---------------------------------------------------

GOOD = '{"thought": "the window", "action": {"type": "click", "x": 100, "y": 100}}'


@pytest.mark.parametrize("reply,reason", [
    (Reply(status=500, body={"error": {"message": "CUDA out of memory"}}), "HTTP 500: CUDA out of memory"),
    (Reply(body="<html>gateway error</html>", content_type="text/html"), "not valid JSON"),
    (Reply.text("I am sorry, I cannot help with screenshots."), "not with a valid action"),
    (Reply.text(GOOD, delay_s=3.0), "did not answer within 1 s"),
], ids=["http-500", "garbage-body", "prose-answer", "timeout"])
def test_a_server_that_lists_its_model_but_cannot_decide_is_not_ready(tmp_path, initialized_home, capsys,
                                                                      reply, reason):
    with ScriptedFakeServer(replies=[reply]) as fake:
        code, data = _preflight(tmp_path, "--endpoint", fake.base_url, "policy=generic",
                                "policy.structured_output=none", "policy.request_timeout_s=1")
        sent = len(fake.chat_requests)
    assert code == 2
    checks = _checks(data)
    assert checks["endpoint serves the model"]["status"] == "ok"
    check = checks["model answers a decision"]
    assert check["status"] == "fail" and reason in check["detail"], check
    assert sent >= 1  # a real chat completion was asked for
    assert "not ready: model answers a decision" in capsys.readouterr().out


def test_ready_only_when_one_real_decision_parses(tmp_path, initialized_home):
    with ScriptedFakeServer(replies=[Reply.text(GOOD)]) as fake:
        code, data = _preflight(tmp_path, "--endpoint", fake.base_url, "policy=generic",
                                "policy.structured_output=none")
        body = fake.chat_requests[-1]
    assert code == 0, data["summary"]
    check = _checks(data)["model answers a decision"]
    assert check["status"] == "ok" and "click(" in check["detail"]
    image = [p for p in body["messages"][-1]["content"] if p["type"] == "image_url"]
    assert image and image[0]["image_url"]["url"].startswith("data:image/")  # the probe's synthetic image


def test_the_context_check_counts_the_tool_listings_and_names_the_largest_part(tmp_path, initialized_home):
    """Two MCP servers and a long skills list: every prompt carries them, so the window cannot hold a decision."""
    import sys

    import yaml
    for i in range(60):
        folder = initialized_home / "skills" / f"skill-{i:02d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: skill-{i:02d}\ndescription: Handles task family {i} - "
                                         + "how to file, tidy and check the reports of this kind. " * 3
                                         + "\n---\nbody\n")
    fixture = str(REPO / "tests" / "fixtures" / "mcp_server.py")
    (initialized_home / "config.yaml").write_text(yaml.safe_dump({"tools": {"mcp_servers": [
        {"name": "one", "command": sys.executable, "args": [fixture]},
        {"name": "two", "command": sys.executable, "args": [fixture]}]}}))
    model, mmproj = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"
    code, data = _preflight(tmp_path, "policy=generic", f"policy.model_path={model}", f"policy.mmproj_path={mmproj}",
                            "runtime.n_ctx=4096", "policy.image_max_tokens=256", "skills.listing_max_chars=20000")
    check = _checks(data)["context fits"]
    parts = check["data"]["part_tokens_estimate"]
    assert parts["MCP tool listing"] > 300 and parts["skills list"] > 2000 and parts["constitution.md"] > 0
    assert parts["untrusted-data rule"] > 100 and parts["host facts"] > 20  # in every prompt's stable part too
    assert code == 2 and check["status"] == "fail"
    assert f"the largest part is the skills list (~{parts['skills list']} tokens): lower skills.listing_max_chars" \
        in check["detail"]


def test_the_context_check_uses_the_captured_desktop(tmp_path, initialized_home, desktop):
    """The Xvfb desktop is 1280x800: the image is sized from it, not from an assumed 1920x1080."""
    model, mmproj = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"
    code, data = _preflight(tmp_path, "--desktop", "policy=generic", f"policy.model_path={model}",
                            f"policy.mmproj_path={mmproj}", "runtime.n_ctx=4096")
    check = _checks(data)["context fits"]
    assert _checks(data)["desktop"]["data"]["captured_size"] == [1280, 800]
    assert check["data"]["screen"] == [1280, 800] and check["data"]["screen_assumed"] is False
    assert "from a 1280x800 screen)" in check["detail"]


def test_against_an_endpoint_the_advice_is_the_server_s_own_context_size(tmp_path, initialized_home):
    props = {"default_generation_settings": {"n_ctx": 2048}}
    with ScriptedFakeServer(models=["served-vlm"], owned_by="llamacpp", props=props) as server:
        code, data = _preflight(tmp_path, "--endpoint", server.base_url, "policy=generic")
    check = _checks(data)["context fits"]
    assert code == 2 and check["status"] == "fail" and check["data"]["n_ctx"] == 2048
    assert "raise the server's own context size (llama-server -c)" in check["detail"]
    assert "runtime.n_ctx" not in check["detail"]


def test_goals_md_as_a_folder_is_not_ready_like_run(tmp_path, initialized_home, capsys):
    (initialized_home / "goals.md").unlink()
    (initialized_home / "goals.md").mkdir()
    code, data = _preflight(tmp_path, "--mock")
    assert code == 2
    layout = _checks(data)["home layout"]
    assert layout["status"] == "fail" and "goals.md is a folder" in layout["detail"]
    assert data["summary"]["failed"] == ["home layout"]
    assert "not ready: home layout" in capsys.readouterr().out
    assert main(["run", "--mock", "--max-steps", "1"]) == 1  # what run says about the same home
    assert "goals.md is a folder" in capsys.readouterr().err
