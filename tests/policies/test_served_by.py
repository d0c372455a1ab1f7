"""Every report names what served its model (issue 43): the server and its version or build, the model file and its
digest, the quantisation, the context and the projector, each as the server or the file states it.

A real llama-server and llama-cpp-python in process serve the tiny VLM (real processes, real files); vLLM's answers
are played by the scripted FAKE server (the point of the fake: vLLM is not installed here; the bodies are the shapes
vLLM's OpenAI server answers `/v1/models` and `/version` with).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer
from helpers.tiny_vlm import MMPROJ, MODEL, require_fixtures, wait_context

from conway.config import load_config
from conway.policies.factory import build_model_policy
from conway.store.home import resolve_home

WAIT = '{"thought": "", "action": {"type": "wait"}}'


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_vllm_server_is_named_with_its_version_model_root_and_context():
    entry = {"root": "/models/GUI-Owl-1.5-8B", "max_model_len": 32768, "parent": None}
    with ScriptedFakeServer(models=["gui-owl"], owned_by="vllm", model_fields=entry,
                            gets={"/version": {"version": "0.13.0"}}, replies=[Reply.text(WAIT)]) as fake:
        config = load_config(None, ["policy=generic", f"policy.endpoint={fake.base_url}"])
        with build_model_policy(config, resolve_home(None)) as policy:
            said = policy.served_by()
    assert said["server"] == "vllm" and said["version"] == "0.13.0" and said["model_id"] == "gui-owl"
    assert said["model_file"] == {"path": "/models/GUI-Owl-1.5-8B"}  # on the server's machine: no digest here
    assert said["context"] == {"n_ctx": 32768, "source": "vLLM /v1/models max_model_len"}


def test_a_server_that_says_nothing_is_named_by_what_it_is_and_nothing_is_made_up():
    with ScriptedFakeServer(models=["m"], replies=[Reply.text(WAIT)]) as fake:
        config = load_config(None, ["policy=generic", f"policy.endpoint={fake.base_url}"])
        with build_model_policy(config, resolve_home(None)) as policy:
            assert policy.served_by() == {"server": "fake", "model_id": "m"}


@pytest.mark.llama
def test_in_process_the_files_digests_quantisation_context_and_projector_are_recorded():
    require_fixtures()
    config = load_config(None, ["policy=generic", f"policy.model_path={MODEL}", f"policy.mmproj_path={MMPROJ}",
                                "runtime.n_ctx=2048", "runtime.check_memory=false"])
    with build_model_policy(config, resolve_home(None)) as policy:
        said = policy.served_by()
    assert said["server"] == "llama-cpp-python (in process)" and said["version"]
    assert said["model_file"]["sha256"] == _sha(MODEL) and said["model_file"]["bytes"] == MODEL.stat().st_size
    assert said["model_file"]["quantisation"] and said["projector_file"]["sha256"] == _sha(MMPROJ)
    assert said["context"]["n_ctx"] <= 2048 and said["vision"] is True


@pytest.mark.llama
@pytest.mark.slow
def test_a_llama_server_is_named_by_its_build_model_file_digest_context_and_vision_and_the_report_says_so(tmp_path):
    from test_server_props_llama import _Server

    from conway.evals.report import Report, served_by_of

    with _Server("--mmproj", str(MMPROJ), ctx=4096) as server:
        config = load_config(None, ["policy=generic", f"policy.endpoint={server.base_url}",
                                    "policy.structured_output=none"])
        with build_model_policy(config, resolve_home(None)) as policy:
            policy.decide(wait_context((640, 400)))
            report = Report("vision-check", tmp_path / "r.json", argv=[], config=config)
            report.set_model(policy.model_id, served_by=served_by_of(policy))
            path = report.finish(status="pass", exit_code=0, summary={})
    said = json.loads(path.read_text(encoding="utf-8"))["served_by"]
    assert said["server"] == "llama-server" and said["build"]  # llama-server's /props build_info
    assert said["model_file"]["path"] == str(MODEL) and said["model_file"]["sha256"] == _sha(MODEL)
    assert said["context"]["n_ctx"] == 4096 and said["vision"] is True
    assert said["model"]["n_ctx_train"] > 0  # the /v1/models entry's meta


def test_a_session_journals_what_served_its_model_at_its_start_and_keeps_it_in_its_state(conway_home):
    from helpers.loop_harness import of, run_against

    from conway.store.state import StateStore

    entry = {"root": "/models/m", "max_model_len": 8192}
    with ScriptedFakeServer(owned_by="vllm", model_fields=entry, gets={"/version": {"version": "0.13.0"}},
                            replies=[Reply.text(WAIT)]) as fake:
        _, events, _, _ = run_against(fake, 1)
    start = next(p for p in of(events, "session") if p.get("event") == "start")
    assert start["served_by"]["server"] == "vllm" and start["served_by"]["version"] == "0.13.0"
    home = resolve_home(None)
    state, _ = StateStore(home.state, home.state_previous).load()
    assert state["served_by"] == start["served_by"]  # what `start --task`'s report reads (task_run._model_of)


def test_a_model_files_digest_is_hashed_once_and_kept_for_the_next_run(tmp_path):
    """A multi-GiB model is not read again at every run's start: the digest is kept in the home's
    `model-digests.json`, keyed by the file's path, size and mtime; a changed file is hashed again."""
    import subprocess
    import sys

    from conway.policies.backends.served_by import file_digest

    model, cache = tmp_path / "m.gguf", tmp_path / "model-digests.json"
    model.write_bytes(b"GGUF" + bytes(1000))
    assert file_digest(model, cache) == _sha(model)
    kept = json.loads(cache.read_text(encoding="utf-8"))
    assert list(kept.values()) == [_sha(model)]
    cache.write_text(json.dumps({k: "read-from-the-cache" for k in kept}), encoding="utf-8")
    ask = [sys.executable, "-c", "import sys; from pathlib import Path; from conway.policies.backends.served_by "
           "import file_digest; print(file_digest(sys.argv[1], Path(sys.argv[2])))", str(model), str(cache)]
    assert subprocess.run(ask, capture_output=True, text=True, check=True).stdout.strip() == "read-from-the-cache"
    model.write_bytes(b"GGUF" + bytes(1001))  # another file now: hashed anew
    assert subprocess.run(ask, capture_output=True, text=True, check=True).stdout.strip() == _sha(model)


def test_models_conformance_names_what_serves_the_model():
    from conftest import run_cli

    entry = {"root": "/models/qwen3-vl-8b", "max_model_len": 65536}
    with ScriptedFakeServer(models=["q"], owned_by="vllm", model_fields=entry,
                            gets={"/version": {"version": "0.13.0"}}) as fake:
        proc = run_cli("models", "--conformance", "policy=qwen3-vl", f"policy.endpoint={fake.base_url}")
    lines = proc.stdout.splitlines()
    assert lines[1] == ("served by: vllm version 0.13.0; model file /models/qwen3-vl-8b; context 65536 (vLLM "
                        "/v1/models max_model_len)"), proc.stdout + proc.stderr


def test_a_vllm_context_too_small_for_the_agents_window_is_refused_before_anything_is_sent(conway_home):
    """vLLM states its context in its /v1/models entry (`max_model_len`): the window is checked against it before
    the first request, as against llama-server's /props, instead of learning it from a refusal."""
    from conway.errors import UserError

    with ScriptedFakeServer(models=["u"], owned_by="vllm", model_fields={"max_model_len": 8192},
                            replies=[Reply.text("Thought: x\nAction: wait()")]) as fake:
        config = load_config(None, ["policy=uitars-1.5-7b", f"policy.endpoint={fake.base_url}"])
        with pytest.raises(UserError) as refused:
            build_model_policy(config, resolve_home(None))
        assert fake.chat_requests == []
    said = str(refused.value)
    assert "\n" not in said and "vLLM /v1/models max_model_len allows 8192" in said and "policy.history_images=" in said
