"""The OpenAI-compatible HTTP client against a scripted FAKE server (protocol failures only).

Real inference over HTTP is tested on real llama.cpp servers in
tests/runtime/test_runtime_server.py; here the fake makes the server misbehave on demand.
"""

from __future__ import annotations

import email.utils
import json
import socket
import time

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer, completion

from conway.policies.backends.http_client import (
    EndpointError,
    OpenAIClient,
    detect_structured_output,
    normalize_base_url,
    png_data_url,
    retry_after_seconds,
)
from conway.protocols import PolicyError, RateLimited

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_base_url_normalisation():
    assert normalize_base_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080/v1"
    assert normalize_base_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1"
    assert normalize_base_url("http://h:1/v1/chat/completions") == "http://h:1/v1"
    assert normalize_base_url("https://api.example/openai/v1") == "https://api.example/openai/v1"
    with pytest.raises(ValueError, match="http"):
        normalize_base_url("127.0.0.1:8080")


def test_retry_after_forms():
    assert retry_after_seconds({"retry-after": "7"}) == 7
    assert retry_after_seconds({"Retry-After": "1.5"}) == 1.5
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= retry_after_seconds({"retry-after": date}, now=now) <= 31
    assert retry_after_seconds({}, "Rate limit reached. Please try again in 20s.") == 20
    assert retry_after_seconds({}, "try again in 1.5 seconds") == 1.5
    assert retry_after_seconds({}, "Please try again in 250ms") == 0.25
    assert retry_after_seconds({}, "retry after 2 minutes") == 120
    assert retry_after_seconds({}, "slow down") is None
    assert retry_after_seconds({"retry-after": "999999"}) == 3600  # capped


def test_chat_reads_text_usage_cached_tokens_and_timings():
    timings = {"cache_n": 40, "prompt_n": 12, "prompt_ms": 3.5, "predicted_n": 5, "predicted_ms": 9.0}
    reply = Reply(body=completion('{"thought": "t", "action": {"type": "wait"}}', timings=timings,
                                  usage={"prompt_tokens": 52, "completion_tokens": 5, "total_tokens": 57}))
    with ScriptedFakeServer(replies=[reply]) as fake:
        client = OpenAIClient(fake.base_url)
        png = b"\x89PNG fake bytes"
        body = {**BODY, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": png_data_url(png)}}]}]}
        result = client.chat(body)
    assert result.text.startswith('{"thought"')
    assert result.usage == {"prompt_tokens": 52, "completion_tokens": 5, "total_tokens": 57, "cached_tokens": 40}
    assert result.timings["cache_n"] == 40 and result.timings["prompt_ms"] == 3.5
    sent = fake.chat_requests[0]["messages"][0]["content"][1]["image_url"]["url"]
    assert sent.startswith("data:image/png;base64,")


def test_reasoning_content_and_think_blocks_are_split_off():
    replies = [Reply.text('{"action": {"type": "wait"}}', reasoning="hidden chain"),
               Reply.text('<think>inline musing</think>\n{"action": {"type": "wait"}}')]
    with ScriptedFakeServer(replies=replies) as fake:
        client = OpenAIClient(fake.base_url)
        a = client.chat(BODY)
        b = client.chat(BODY)
    assert a.reasoning == "hidden chain" and "hidden" not in a.text
    assert b.reasoning == "inline musing" and b.text == '{"action": {"type": "wait"}}'


def test_timeout_is_a_policy_error_naming_the_limit():
    with ScriptedFakeServer(replies=[Reply.text("late", delay_s=2.0)]) as fake:
        client = OpenAIClient(fake.base_url, timeout_s=0.4)
        t0 = time.monotonic()
        with pytest.raises(PolicyError, match=r"did not answer within 0.4 s"):
            client.chat(BODY)
        assert time.monotonic() - t0 < 1.8


def test_slow_answer_inside_the_timeout_succeeds_and_latency_is_measured():
    with ScriptedFakeServer(replies=[Reply.text("ok", delay_s=0.5)]) as fake:
        result = OpenAIClient(fake.base_url, timeout_s=5).chat(BODY)
    assert result.text == "ok" and result.latency_s >= 0.5


def test_refused_connection_names_the_url():
    port = closed_port()
    client = OpenAIClient(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(EndpointError, match=rf"cannot reach http://127.0.0.1:{port}/v1/chat/completions") as info:
        client.chat(BODY)
    assert info.value.kind == "unreachable"
    assert isinstance(info.value, PolicyError)


def test_server_error_is_a_policy_error_with_the_message():
    with ScriptedFakeServer(replies=[Reply(status=500, body={"error": {"message": "CUDA out of memory"}})]) as fake:
        with pytest.raises(PolicyError, match="HTTP 500: CUDA out of memory"):
            OpenAIClient(fake.base_url).chat(BODY)


def test_429_honours_retry_after_header_and_message():
    replies = [Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "7"}),
               Reply(status=429, body={"error": {"message": "Rate limit. Please try again in 3s."}}),
               Reply(status=429, body={"error": {"message": "busy"}})]
    with ScriptedFakeServer(replies=replies) as fake:
        client = OpenAIClient(fake.base_url)
        waits = []
        for _ in range(3):
            with pytest.raises(RateLimited) as info:
                client.chat(BODY)
            waits.append(info.value.retry_after)
    assert waits == [7, 3, 10]
    assert "429" in str(info.value) and "no delay given" in str(info.value)


def test_truncated_json_body_is_a_policy_error():
    body = json.dumps(completion("x"))
    replies = [Reply(body=body, truncate_to=len(body) // 2),  # connection closed mid-body
               Reply(body=body[: len(body) // 2])]  # complete response, broken JSON
    with ScriptedFakeServer(replies=replies) as fake:
        client = OpenAIClient(fake.base_url)
        with pytest.raises(PolicyError):
            client.chat(BODY)
        with pytest.raises(PolicyError, match="not valid JSON"):
            client.chat(BODY)


def test_reply_without_choices_is_malformed():
    with ScriptedFakeServer(replies=[Reply(body={"object": "chat.completion", "choices": []})]) as fake:
        with pytest.raises(PolicyError, match="without choices"):
            OpenAIClient(fake.base_url).chat(BODY)


def test_list_models_and_not_openai_servers():
    with ScriptedFakeServer(models=["a", "b"]) as fake:
        assert [m["id"] for m in OpenAIClient(fake.base_url).list_models()] == ["a", "b"]
    with ScriptedFakeServer(not_openai=True) as fake:
        with pytest.raises(EndpointError, match="does not look like an OpenAI-compatible server") as info:
            OpenAIClient(fake.base_url).list_models()
        assert info.value.kind == "not-openai"


def test_detect_structured_output_keeps_only_what_is_honoured():
    """The fake honours a grammar (echoing the forced JSON), ignores json_object, 500s json_schema —
    what llama-cpp-python's server does with the last one."""

    def responder(body):
        if "grammar" in body:
            forced = body["grammar"].split("::=", 1)[1].strip()
            return Reply.text(json.loads(forced))  # the GBNF literal is a JSON string literal here
        fmt = body.get("response_format", {})
        if fmt.get("type") == "json_schema":
            return Reply(status=500, body={"error": {"message": "json_schema not supported"}})
        return Reply.text('{"something": "else"}')

    with ScriptedFakeServer(responder=responder) as fake:
        supported, tried = detect_structured_output(OpenAIClient(fake.base_url), "fake-model")
    assert supported == ["grammar"]
    assert tried["grammar"] == "honoured"
    assert tried["json_object"].startswith("ignored")
    assert tried["json_schema"].startswith("refused") and "500" in tried["json_schema"]


def test_retry_after_values_that_are_not_a_delay():
    from conway.policies.backends.http_client import retry_after_source
    assert retry_after_source({"retry-after": "nan"}) is None  # unusable: the caller's default applies
    assert retry_after_source({"retry-after": "-inf"}) is None
    assert retry_after_source({"retry-after": "-5"}) == (0.0, "Retry-After: -5")
    assert retry_after_source({"retry-after": "inf"}) == (3600, "Retry-After: inf")
    assert retry_after_source({}, "try again in 2s")[1].startswith("error message")


def test_rate_limit_wait_bounds():
    from conway.loop.ratelimit import rate_limit_wait
    assert rate_limit_wait(0, 0, 300) == (1.0, "the server asked 0 s (server); raised to the 1 s minimum")
    assert rate_limit_wait(7, 0, 300)[0] == 7
    assert rate_limit_wait(7, 20, 300)[0] == 20
    assert rate_limit_wait(5000, 0, 300)[0] == 300
    assert rate_limit_wait(5000, 900, 300)[0] == 300
    assert rate_limit_wait(float("nan"), 0, 300)[0] == 1.0
    assert rate_limit_wait(None, 0, 0.5)[0] == 1.0  # the floor wins over a tiny cap


class _Trickler:
    """A FAKE model server that sends headers at once, then its body one byte every 0.1 s: forever
    (`endless`) or a long valid answer (the whole of it takes ~60 s)."""

    def __init__(self, endless: bool):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        body = json.dumps(completion("x" * 600)).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if not endless:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for i in range(10**9 if endless else len(body)):
                        self.wfile.write(body[i:i + 1] if not endless else b" ")
                        self.wfile.flush()
                        time.sleep(0.1)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.mark.parametrize("endless", [False, True])
def test_the_timeout_bounds_the_whole_answer_not_each_read(endless):
    """Item 25.13: a body that trickles (or never ends) kept the request alive past request_timeout_s."""
    import threading
    server = _Trickler(endless)
    client = OpenAIClient(server.base_url, timeout_s=1.0)
    box = {}

    def ask():
        try:
            client.chat(BODY)
        except PolicyError as exc:
            box["error"] = exc

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    worker.join(timeout=30)  # the answer would take a minute (or forever); the limit is 1 s
    still_reading = worker.is_alive()
    server.httpd.shutdown()
    assert not still_reading
    assert "did not answer within 1 s (timeout)" in str(box["error"])
