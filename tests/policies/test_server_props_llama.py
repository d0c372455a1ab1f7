"""What a real llama-server's /props says, acted on: the tiny VLM served by llama.cpp's own llama-server.

The tiny VLM's chat template renders no tools (/props `chat_template_caps.supports_tools` false), so `auto` keeps
the tool in the system prompt and `request` is refused before anything is sent; started with `--no-jinja` the
server refuses the `tools` field itself; started without the projector it says `modalities.vision` false and is
sent no screenshot. Every server here is a real process; nothing is faked (the tiny VLM's answers are random, so
only the requests and the refusals are checked, not what it writes).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time

import httpx
import pytest
from helpers.tiny_vlm import MMPROJ, MODEL, llama_server_argv, wait_context

from conway.cli.main import main
from conway.config import load_config
from conway.policies.factory import build_model_policy
from conway.policies.images import ServerTakesNoImages
from conway.policies.output import ToolsNotRendered
from conway.protocols import DecisionContext, PolicyError
from conway.store.home import resolve_home

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """A real llama-server on the tiny VLM, on a free port, stopped by pid."""

    def __init__(self, *args: str, ctx: int = 4096):
        self.port = _free_port()
        cmd = [*llama_server_argv(), "-m", str(MODEL), "--host", "127.0.0.1", "--port", str(self.port), "-c", str(ctx),
               "-t", "1", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def __enter__(self) -> "_Server":
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}")
            time.sleep(0.3)
        raise RuntimeError("llama-server did not become healthy in 120 s")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _context() -> DecisionContext:
    return wait_context((640, 400))


def _policy(server: _Server, *extra: str):
    # one screenshot: Qwen3-VL's own window (5) would not fit the tiny model's 4096 tokens, and the policy
    # would refuse to start (a smaller window set explicitly is a deviation, which these tests do not look at)
    config = load_config(None, ["policy=qwen3-vl", f"policy.endpoint={server.base_url}", "policy.max_tokens=4",
                                "policy.image_max_tokens=256", "policy.history_images=1", *extra])
    return build_model_policy(config, resolve_home(None))


def test_auto_keeps_the_tool_in_the_prompt_where_the_template_renders_none():
    with _Server("--mmproj", str(MMPROJ)) as server, _policy(server) as policy:
        decision = policy.decide(_context())
    assert decision.meta["tool_schema"] == "prompt"
    assert decision.usage.get("prompt_tokens", 0) > 400  # the tool's JSON in the system turn, and the image


def test_request_is_refused_before_sending_where_the_template_would_drop_the_tool():
    with _Server("--mmproj", str(MMPROJ)) as server, _policy(server, "policy.tool_schema=request") as policy:
        with pytest.raises(ToolsNotRendered):
            policy.decide(_context())


def test_a_no_jinja_server_refuses_the_tools_field_with_its_own_words():
    with _Server("--mmproj", str(MMPROJ), "--no-jinja") as server:
        props = httpx.get(f"http://127.0.0.1:{server.port}/props", timeout=5).json()
        assert props["chat_template_caps"]["supports_tools"] is False  # this template; the refusal is the server's
        reply = httpx.post(f"{server.base_url}/chat/completions", timeout=30, json={
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1,
            "tools": [{"type": "function", "function": {"name": "computer_use", "parameters": {"type": "object"}}}]})
    assert reply.status_code == 500 and "tools param requires --jinja flag" in reply.text  # what the fallback reads


def test_a_server_without_the_projector_is_sent_no_screenshot():
    with _Server() as server, _policy(server) as policy:
        with pytest.raises(ServerTakesNoImages) as err:
            policy.decide(_context())
    assert isinstance(err.value, PolicyError) and "--mmproj" in err.value.advice


def test_a_server_started_with_a_small_context_is_refused_up_front_with_the_numbers(tmp_path, initialized_home,
                                                                                      capsys):
    """UI-TARS-1.5's own window (5 screenshots at 1920x1080, ~16.7k tokens) against a real llama-server started
    with -c 2048: preflight fails the context check with what is needed and what the server holds, and names both
    ways out (the server's -c, or smaller parts set explicitly); run refuses with the same line before any
    decision is made."""
    with _Server("--mmproj", str(MMPROJ), ctx=2048) as server:
        out = tmp_path / "pf.json"
        code = main(["preflight", "--output", str(out), "--endpoint", server.base_url, "policy=uitars-1.5-7b"])
        checks = {c["check"]: c for c in json.loads(out.read_text())["cases"]}
        capsys.readouterr()
        run_code = main(["run", "--endpoint", server.base_url, "--max-steps", "1", "policy=uitars-1.5-7b",
                         "observe.source=synthetic"])
    fit = checks["context fits"]
    assert code == 2 and fit["status"] == "fail" and fit["data"]["n_ctx"] == 2048
    needed = re.search(r"window needs (\d+) tokens \(5 screenshot\(s\) x (\d+) tokens \(1932x1092\)", fit["detail"])
    assert needed and int(needed.group(1)) > 2048 and int(needed.group(2)) > 2000, fit["detail"]
    assert "llama-server /props (per-slot n_ctx) allows 2048" in fit["detail"]
    assert re.search(r"raise the server's context \(llama-server -c \d+", fit["detail"])
    # not one screenshot and the reply fit in 2,048: the other way out is a smaller image or reply, set explicitly
    assert "or lower policy.max_tokens or policy.image_max_tokens (deviations, listed in every report)" in fit["detail"]
    err = capsys.readouterr().err.strip().splitlines()
    assert run_code != 0 and len(err) == 1 and err[0] == f"conway: error: {fit['detail']}"
    assert not list((initialized_home / "journal").rglob("*.jsonl")) or \
        '"decision"' not in "".join(f.read_text() for f in (initialized_home / "journal").rglob("*.jsonl"))


def test_holo_s_request_without_max_tokens_and_with_its_schema_field_is_answered_by_llama_server():
    """Holo1.5's notebook sends no max_tokens and its schema in vLLM's `structured_outputs`: a real llama-server
    takes the request as it is (the field unknown to it, ignored) and stops at its own default (`-n 8` here)."""
    with _Server("--mmproj", str(MMPROJ), "-n", "8") as server:
        config = load_config(None, ["policy=holo1.5", f"policy.endpoint={server.base_url}",
                                    "policy.image_max_tokens=256"])
        with build_model_policy(config, resolve_home(None)) as policy:
            assert policy.settings.max_tokens_sent is False
            decision = policy.decide(wait_context((640, 400)))
    assert 0 < decision.usage["completion_tokens"] <= 8, decision.usage  # the server's default, not Conway's 128
