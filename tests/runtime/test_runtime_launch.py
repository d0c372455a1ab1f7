"""Starting and stopping a model server: program choice, command line, environment, health wait, stop.

The lifecycle is exercised with a stand-in program (a tiny Python HTTP server
that answers /health like llama-server and records its environment); the real
llama.cpp servers are in test_runtime_server.py.
"""

from __future__ import annotations

import os
import stat
import sys
import time

import pytest

from conway.config import RuntimeConfig, load_config
from conway.errors import UserError
from conway.runtime.server import LocalServer, ServerProgram, build_command, default_threads, find_program, server_env

STAND_IN = '''#!{python}
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
print("stand-in llama-server", " ".join(args), flush=True)
print("OMP_WAIT_POLICY=" + os.environ.get("OMP_WAIT_POLICY", "unset"), flush=True)
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = json.dumps({{"status": "ok"}} if self.path == "/health" else
                          {{"object": "list", "data": [{{"id": "stand-in", "owned_by": "llamacpp"}}]}}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
HTTPServer(("127.0.0.1", port), H).serve_forever()
'''


def stand_in(tmp_path):
    exe = tmp_path / "llama-server"
    exe.write_text(STAND_IN.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def cfg(*extra):
    return load_config(None, ["policy=generic", "policy.model_path=/m/model.gguf", "policy.mmproj_path=/m/mmproj.gguf",
                              *extra])


def test_llama_server_command_line():
    c = cfg("runtime.n_ctx=4096", "runtime.n_threads=3", "runtime.parallel=2", "runtime.n_gpu_layers=-1",
            "policy.image_max_tokens=1024", 'runtime.extra_args=["--flash-attn","on"]')
    cmd = build_command(ServerProgram("llama-server", ["/bin/llama-server"], "x"), c, "127.0.0.1", 8123, "m")
    s = " ".join(cmd)
    for part in ("--model /m/model.gguf", "--mmproj /m/mmproj.gguf", "--host 127.0.0.1", "--port 8123",
                 "--ctx-size 4096", "--threads 3", "--threads-batch 3", "--n-gpu-layers all", "--parallel 2",
                 "--alias m", "--image-max-tokens 1024", "--no-webui"):
        assert part in s, part
    assert cmd[-2:] == ["--flash-attn", "on"]
    # unset, the server is told the family's cap held to half a slot's context: the image Conway resized is not
    # shrunk again, and a 4K screen leaves room for the text in the default 8192-token window
    server = ServerProgram("llama-server", ["/bin/llama-server"], "x")
    assert "--image-max-tokens 4096" in " ".join(build_command(server, cfg(), "127.0.0.1", 8123, "m"))
    roomy = build_command(server, cfg("runtime.n_ctx=65536"), "127.0.0.1", 8123, "m")
    assert "--image-max-tokens 16384" in " ".join(roomy)


def test_llama_cpp_python_command_line():
    c = cfg("runtime.n_threads=1", "runtime.n_threads_batch=2")
    cmd = build_command(ServerProgram("llama-cpp-python", [sys.executable, "-m", "llama_cpp.server"], "x"), c,
                        "127.0.0.1", 8124, "m")
    s = " ".join(cmd)
    for part in ("-m llama_cpp.server", "--model /m/model.gguf", "--clip_model_path /m/mmproj.gguf",
                 "--chat_format mtmd", "--n_threads 1", "--n_threads_batch 2", "--model_alias m", "--port 8124"):
        assert part in s, part


def test_program_preference_and_threads(tmp_path, monkeypatch):
    exe = stand_in(tmp_path)
    assert find_program(RuntimeConfig(llama_server_path=str(exe))).argv0 == [str(exe)]
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = find_program(RuntimeConfig())
    assert found.kind == "llama-server" and found.where == str(exe)
    with pytest.raises(UserError, match="not an executable file"):
        find_program(RuntimeConfig(llama_server_path=str(tmp_path / "nope")))
    assert default_threads(3) == 3 and 1 <= default_threads(None) <= 8
    assert server_env(RuntimeConfig(), {})["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in server_env(RuntimeConfig(omp_wait_policy="unset"), {})


def test_start_waits_for_health_logs_everything_and_stop_ends_it(tmp_path):
    exe = stand_in(tmp_path)
    log = tmp_path / "home" / "llama-runtime.log"
    server = LocalServer.from_config(cfg(f"runtime.llama_server_path={exe}"), log, alias="stand-in")
    url = server.start()
    try:
        assert url == f"http://127.0.0.1:{server.port}/v1" and server.alive()
        pid = server.proc.pid
    finally:
        server.stop()
    server.stop()  # twice is fine
    assert not server.alive()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    text = log.read_text()
    assert "conway starts llama-server" in text and "ready at" in text and "conway stopped llama-server" in text
    assert "OMP_WAIT_POLICY=PASSIVE" in text and "--host 127.0.0.1" in text


def test_a_started_server_ends_when_conway_exits(tmp_path):
    """The atexit hook and the parent-death signal: a Conway process that forgets to stop its server."""
    import subprocess
    exe = stand_in(tmp_path)
    log = tmp_path / "llama-runtime.log"
    code = (
        "import sys\n"
        "from conway.config import load_config\n"
        "from conway.runtime.server import LocalServer\n"
        f"c = load_config(None, ['policy=generic', 'policy.model_path=/m.gguf', 'runtime.llama_server_path={exe}'])\n"
        f"s = LocalServer.from_config(c, __import__('pathlib').Path({str(log)!r}), 'x')\n"
        "s.start()\n"
        "print(s.proc.pid, flush=True)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the server outlived the Conway process that started it")
