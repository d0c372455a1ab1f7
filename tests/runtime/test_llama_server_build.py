"""llama.cpp's C++ llama-server (scripts/build/build_llama_server.sh) serving the tiny VLM.

    scripts/build/build_llama_server.sh                      # once, ~10-25 min on 2 cores
    .venv/bin/python -m pytest tests/runtime/test_llama_server_build.py

Skipped when the binary is missing (default .cache/llama-server/bin/llama-server,
or set LLAMA_SERVER_BIN). Starts the server on a free localhost port with the
committed fixture pair (tests/fixtures/tiny-vlm/), sends one OpenAI-style chat
completion with a PNG data: URL and a GBNF grammar, checks /v1/models, and
shuts the server down. Needs only the standard library.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "tiny-vlm"
MODEL = FIXTURES / "tiny-vlm.gguf"
MMPROJ = FIXTURES / "tiny-vlm-mmproj.gguf"
DEFAULT_BIN = REPO_ROOT / ".cache" / "llama-server" / "bin" / "llama-server"
SERVER_BIN = Path(os.environ.get("LLAMA_SERVER_BIN", str(DEFAULT_BIN)))

CLICK_GRAMMAR = r'''
root ::= "{\"type\":\"click\",\"x\":" coord ",\"y\":" coord "}"
coord ::= [0-9] | [1-9] [0-9] | [1-9] [0-9] [0-9]
'''

pytestmark = [
    pytest.mark.slow,
    pytest.mark.llama,
    pytest.mark.skipif(
        not (SERVER_BIN.is_file() and os.access(SERVER_BIN, os.X_OK)),
        reason=f"llama-server not built ({SERVER_BIN} missing): run scripts/build/build_llama_server.sh or set LLAMA_SERVER_BIN",
    ),
]


def _png(width: int, height: int) -> bytes:
    """White RGB PNG with a red square in the right half."""
    rows = b"".join(
        b"\x00" + b"".join(b"\xdc\x14\x3c" if (width // 2 <= x < width // 2 + 20 and 10 <= y < 30) else b"\xff\xff\xff" for x in range(width))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url: str, body: dict | None = None, timeout: float = 60.0) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [
        str(SERVER_BIN),
        "--model", str(MODEL),
        "--mmproj", str(MMPROJ),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--ctx-size", "1024",
        "--parallel", "1",
        "--threads", "1",
        "--threads-batch", "1",
        "--seed", "0",
        "--no-webui",
    ]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama-server exited with {proc.returncode}:\n{log_path.read_text(errors='replace')[-3000:]}")
            try:
                status, _ = _request(base + "/health", timeout=2)
                if status == 200:
                    break
            except (urllib.error.URLError, ConnectionError, json.JSONDecodeError, TimeoutError):
                pass
            if time.monotonic() - started > 60:
                pytest.fail(f"llama-server not healthy after 60 s:\n{log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _image_messages() -> list[dict]:
    url = "data:image/png;base64," + base64.b64encode(_png(96, 64)).decode()
    return [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": url}},
                {"type": "text", "text": "Click the red square. Answer with one JSON action."},
            ],
        }
    ]


def _assert_click(text: str) -> None:
    action = json.loads(text)
    assert set(action) == {"type", "x", "y"}, action
    assert action["type"] == "click"
    assert isinstance(action["x"], int) and isinstance(action["y"], int)


def test_models_endpoint_lists_the_model(server):
    status, body = _request(server + "/v1/models")
    assert status == 200
    (model,) = body["data"]
    assert model["id"].endswith("tiny-vlm.gguf")
    assert model["meta"]["n_vocab"] == 384


def _chat(server: str, **extra) -> dict:
    status, body = _request(
        server + "/v1/chat/completions",
        {"messages": _image_messages(), "temperature": 0, "max_tokens": 40, **extra},
    )
    assert status == 200, body
    return body


def test_image_chat_completion_with_grammar(server):
    body = _chat(server, grammar=CLICK_GRAMMAR)
    _assert_click(body["choices"][0]["message"]["content"])
    # The image went through the vision encoder: a 96x64 image is 12 image
    # tokens, so the prompt is longer than its text alone.
    assert body["usage"]["prompt_tokens"] > 12


def test_image_chat_completion_with_json_schema(server):
    """OpenAI-style structured output; this server turns the schema into a
    grammar that honours integer minimum/maximum."""
    schema = {
        "type": "object",
        "properties": {
            "type": {"const": "click"},
            "x": {"type": "integer", "minimum": 0, "maximum": 95},
            "y": {"type": "integer", "minimum": 0, "maximum": 63},
        },
        "required": ["type", "x", "y"],
        "additionalProperties": False,
    }
    body = _chat(server, response_format={"type": "json_schema", "json_schema": {"name": "click", "strict": True, "schema": schema}})
    action = json.loads(body["choices"][0]["message"]["content"])
    _assert_click(json.dumps(action))
    assert 0 <= action["x"] <= 95 and 0 <= action["y"] <= 63
