"""Every bad input of the models issue: `conway` exits 1 with a message that says what to fix.

Run as real `conway` processes. The servers here are a scripted FAKE (for
"not OpenAI-compatible" and "model not served") and a stand-in program that
dies at start; real llama.cpp servers are in test_runtime_server.py.
"""

from __future__ import annotations

import socket
import stat

from conftest import run_cli
from fixtures.scripted_server import ScriptedFakeServer
from helpers.gguf_files import huge_model, projector, vlm_text_model


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_user_error(proc, *needles: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for n in needles:
        assert n in proc.stderr, (n, proc.stderr)


def test_unreachable_endpoint_names_the_url(initialized_home):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    for cmd in (["probe"], ["run", "--max-steps", "1"], ["models"]):
        proc = run_cli(*cmd, "--endpoint", url)
        assert_user_error(proc, f"cannot reach the model server at {url}", "connection refused")


def test_a_server_that_is_not_openai_compatible():
    with ScriptedFakeServer(not_openai=True) as fake:
        proc = run_cli("probe", "--endpoint", fake.base_url)
    assert_user_error(proc, f"{fake.base_url} is not an OpenAI-compatible server", "text/html")


def test_model_not_served_lists_what_is():
    with ScriptedFakeServer(models=["qwen2.5-vl-7b", "ui-tars-1.5-7b"]) as fake:
        proc = run_cli("probe", "--endpoint", fake.base_url, "--model", "opencua-7b")
        assert_user_error(proc, "model 'opencua-7b' is not served by", "it serves: qwen2.5-vl-7b, ui-tars-1.5-7b")
        proc = run_cli("probe", "--endpoint", fake.base_url)
        assert_user_error(proc, "serves 2 models; choose one with --model ID: qwen2.5-vl-7b, ui-tars-1.5-7b")


def test_missing_or_non_gguf_model_path(tmp_path):
    proc = run_cli("probe", "policy=generic", f"policy.model_path={tmp_path / 'missing.gguf'}")
    assert_user_error(proc, f"model file {tmp_path / 'missing.gguf'} does not exist")
    fake_model = tmp_path / "model.bin"
    fake_model.write_bytes(b"PK\x03\x04 a zip, not a model")
    proc = run_cli("probe", "policy=generic", f"policy.model_path={fake_model}")
    assert_user_error(proc, f"model file {fake_model} is not a GGUF file", "b'PK\\x03\\x04'")
    proc = run_cli("models", "policy=generic", f"policy.model_path={fake_model}")
    assert_user_error(proc, "is not a GGUF file")
    assert "PROBLEM" in proc.stdout


def test_vlm_without_its_mmproj(tmp_path):
    model = vlm_text_model(tmp_path / "Qwen2.5-VL-7B-Q4_K_M.gguf")
    projector(tmp_path / "mmproj-Qwen2.5-VL-7B-f16.gguf")
    proc = run_cli("probe", "policy=generic", f"policy.model_path={model}")
    assert_user_error(proc, "is a vision-language model (qwen2vl) but no mmproj was given",
                      "policy.mmproj_path", "mmproj-Qwen2.5-VL-7B-f16.gguf")


def test_a_model_that_will_not_fit_says_the_numbers(tmp_path):
    model = huge_model(tmp_path / "big.gguf")
    mmproj = projector(tmp_path / "mmproj.gguf")
    proc = run_cli("probe", "policy=generic", f"policy.model_path={model}", f"policy.mmproj_path={mmproj}",
                   "runtime.n_ctx=131072")
    assert_user_error(proc, "will not fit", "KV cache 800.00 GiB for 131072 tokens", "of available RAM",
                      "headroom", "estimates", "runtime.n_ctx")


def stand_in_server(tmp_path, body: str):
    """A stand-in `llama-server` program (a shell script), so start-up failures can be provoked exactly."""
    exe = tmp_path / "llama-server"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def small_vlm(tmp_path):
    return vlm_text_model(tmp_path / "vlm.gguf"), projector(tmp_path / "mmproj.gguf")


def test_a_server_that_dies_at_start_shows_the_last_log_lines(tmp_path, conway_home):
    model, mmproj = small_vlm(tmp_path)
    exe = stand_in_server(tmp_path, 'echo "loading model from $2"\necho "llama_model_load: error loading model: '
                                    'missing tensor token_embd.weight"\nexit 3\n')
    proc = run_cli("probe", "policy=generic", "policy.backend=http", f"policy.model_path={model}",
                   f"policy.mmproj_path={mmproj}", f"runtime.llama_server_path={exe}")
    assert_user_error(proc, "exited with code 3 during start-up", "llama-runtime.log",
                      "error loading model: missing tensor token_embd.weight")
    log = (conway_home / "llama-runtime.log").read_text()
    assert "conway starts llama-server" in log and "--host 127.0.0.1" in log


def test_a_server_that_never_gets_ready_hits_the_deadline(tmp_path):
    model, mmproj = small_vlm(tmp_path)
    exe = stand_in_server(tmp_path, 'echo "warming up forever"\nexec sleep 60\n')
    proc = run_cli("probe", "policy=generic", "policy.backend=http", f"policy.model_path={model}",
                   f"policy.mmproj_path={mmproj}", f"runtime.llama_server_path={exe}", "runtime.startup_timeout_s=1.5")
    assert_user_error(proc, "did not become ready within 1.5 s", "warming up forever")


def test_the_port_in_use(tmp_path):
    model, mmproj = small_vlm(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run_cli("probe", "policy=generic", "policy.backend=http", f"policy.model_path={model}",
                       f"policy.mmproj_path={mmproj}", f"runtime.port={port}")
    assert_user_error(proc, f"port {port} on 127.0.0.1 is already in use", "runtime.port")


def test_a_non_loopback_host_needs_allow_remote(tmp_path):
    model, mmproj = small_vlm(tmp_path)
    proc = run_cli("probe", "policy=generic", "policy.backend=http", f"policy.model_path={model}",
                   f"policy.mmproj_path={mmproj}", "runtime.host=0.0.0.0")
    assert_user_error(proc, "not a loopback address", "runtime.allow_remote")


def test_endpoint_with_the_mock_is_refused():
    proc = run_cli("probe", "--mock", "--endpoint", "http://127.0.0.1:1/v1")
    assert_user_error(proc, "--endpoint was given but the policy is the offline mock")


def test_no_model_at_all():
    proc = run_cli("probe", "policy=generic")
    assert_user_error(proc, "needs a model", "--endpoint URL", "policy.model_path")
