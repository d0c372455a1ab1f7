"""A small client for OpenAI-compatible `/v1/chat/completions` and `/v1/models` (httpx).

Every failure before an answer exists becomes a `PolicyError` (so the loop's
recovery backoff handles it): refused connections, timeouts, 5xx, 4xx,
malformed or truncated JSON, a reply without choices. HTTP 429 becomes
`RateLimited` with the wait the server asked for (`Retry-After`, or "try again
in N s" in the message). Images travel only as `data:` URLs.

What the client keeps from a reply: the text, hidden reasoning
(`reasoning_content` / `reasoning`, and `<think>` blocks inside the text),
the finish reason, token usage (with cached prompt tokens when the server
says) and llama.cpp's `timings` (prompt/cached/predicted tokens and ms).
Reasoning is returned separately so callers can record it without ever
sending it back.
"""

from __future__ import annotations

import base64
import email.utils
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import httpx

from conway.cancel import Cancel, DecisionAborted, current_cancel
from conway.cancel import http as abortable_http
from conway.policies.backends.backend import Backend
from conway.policies.parsed import split_reasoning
from conway.protocols import ContextExceeded, ContextWindow, PolicyError, RateLimited
from conway.text.html_page import looks_like_html, page_text

__all__ = [
    "ChatResult",
    "OpenAIClient",
    "EndpointError",
    "normalize_base_url",
    "png_data_url",
    "retry_after_seconds",
    "retry_after_source",
]

DEFAULT_RETRY_AFTER_S = 10.0
"""Wait used when a 429 names no delay."""
MAX_RETRY_AFTER_S = 3600.0
"""A server asking for more than this is capped (the loop stays controllable meanwhile)."""


PERMANENT_ADVICE = {
    400: "the server refuses the request itself: check policy.model and the policy's options",
    401: "the server wants credentials: check the API key (policy.api_key_env)",
    403: "the server refuses these credentials: check the API key and its rights",
    404: "check --endpoint / policy.endpoint and policy.model (an unknown model is often a 404)",
    405: "this endpoint does not take chat requests: check --endpoint / policy.endpoint",
    501: "the server does not implement this request: check --endpoint and policy.structured_output",
}
"""HTTP statuses that a retry cannot cure, and what to change."""


class EndpointError(PolicyError):
    """The endpoint could not be used at all (unreachable, not OpenAI-compatible, refused)."""

    def __init__(self, message: str, *, kind: str, status: int | None = None):
        super().__init__(message)
        self.kind = kind
        """`unreachable`, `timeout`, `http`, `not-openai`, `malformed`."""
        self.status = status
        self.permanent = kind == "http" and status in PERMANENT_ADVICE
        self.advice = PERMANENT_ADVICE.get(status, "") if self.permanent else ""
        self.cause = (f"HTTP {status}" if status is not None else
                      {"timeout": "timeout", "unreachable": "unreachable", "malformed": "malformed reply",
                       "not-openai": "malformed reply"}.get(kind, "model error"))


@dataclass
class ChatResult:
    text: str
    reasoning: str | None
    finish_reason: str | None
    model: str | None
    usage: dict[str, Any] = field(default_factory=dict)
    """prompt_tokens, completion_tokens, total_tokens, cached_tokens (when known)."""
    timings: dict[str, Any] = field(default_factory=dict)
    """llama.cpp timings: prompt_n, prompt_ms, cache_n, predicted_n, predicted_ms … (when sent)."""
    latency_s: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


def normalize_base_url(url: str) -> str:
    """`http://h:p` → `http://h:p/v1`; a trailing slash or `/chat/completions` is dropped."""
    u = url.strip().rstrip("/")
    if not re.match(r"^https?://", u, re.I):
        raise ValueError(f"endpoint {url!r} must start with http:// or https://")
    for suffix in ("/chat/completions", "/models"):
        if u.endswith(suffix):
            u = u[: -len(suffix)]
    if re.match(r"^https?://[^/]+$", u, re.I):
        u += "/v1"
    return u


def png_data_url(png: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(png).decode("ascii")


_TRY_AGAIN = re.compile(
    r"(?:try again|retry|retry after|wait)\s+(?:in|after)?\s*([0-9]+(?:\.[0-9]+)?)\s*"
    r"(ms|milliseconds?|s|sec|secs|seconds?|m|mins?|minutes?)\b", re.I)


def retry_after_seconds(headers: httpx.Headers | dict[str, str] | None, message: str = "",
                        now: float | None = None) -> float | None:
    """Seconds to wait from `Retry-After` (seconds or an HTTP date) or "try again in N s"."""
    found = retry_after_source(headers, message, now)
    return found[0] if found else None


def retry_after_source(headers: httpx.Headers | dict[str, str] | None, message: str = "",
                       now: float | None = None) -> tuple[float, str] | None:
    """(seconds, where they came from) of the server's requested delay, clamped to 0..MAX_RETRY_AFTER_S.

    A value that is not a finite number (`nan`, garbage) counts as none given.
    """
    value = None
    if headers is not None:
        value = headers.get("retry-after") or headers.get("Retry-After")
    if value:
        value = value.strip()[:100]
        try:
            n = float(value)
            if math.isfinite(n) or n > 0:  # +inf is "absurd", capped; nan is unusable
                return _cap(n), f"Retry-After: {value}"
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if _looks_like_date(value) else None
            if parsed is not None:
                return _cap(parsed.timestamp() - (now if now is not None else time.time())), f"Retry-After: {value}"
    m = _TRY_AGAIN.search(message or "")
    if m:
        n, unit = float(m.group(1)), m.group(2).lower()
        if unit.startswith("ms") or unit.startswith("milli"):
            n /= 1000.0
        elif unit.startswith("m"):
            n *= 60.0
        return _cap(n), f"error message: {m.group(0)!r}"
    return None


def _looks_like_date(v: str) -> bool:
    try:
        return email.utils.parsedate_to_datetime(v) is not None
    except (TypeError, ValueError, IndexError):
        return False


def _cap(seconds: float) -> float:
    return round(min(max(seconds, 0.0), MAX_RETRY_AFTER_S), 3)


def _short(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "…"


class OpenAIClient:
    """One OpenAI-compatible endpoint. `base_url` ends in `/v1`."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 120.0,
                 connect_timeout_s: float = 10.0, transport: httpx.BaseTransport | None = None):
        self.base_url = normalize_base_url(base_url)
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.timeout_s = timeout_s
        # No idle keep-alive connections: every request opens its own, so a stop can shut down exactly
        # the socket of the request in flight (`conway.cancel.http`); a local connect costs well under 1 ms.
        self._http = httpx.Client(headers=headers, transport=transport, follow_redirects=False,
                                  timeout=httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s)),
                                  limits=httpx.Limits(max_keepalive_connections=0))

    def close(self) -> None:
        self._http.close()

    # -- plumbing ----------------------------------------------------------------

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None,
                 timeout_s: float | None = None) -> tuple[httpx.Response, float]:
        url = f"{self.base_url}{path}"
        started = time.perf_counter()
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["content"] = json.dumps(body, ensure_ascii=False).encode("utf-8")
            kwargs["headers"] = {"Content-Type": "application/json"}
        if timeout_s is not None:
            kwargs["timeout"] = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        cancel = current_cancel()
        if cancel is not None:
            cancel.check()  # a stop that came before this request (e.g. between structured-output probes)
        return self._send(method, url, kwargs, timeout_s, cancel), time.perf_counter() - started

    def _send(self, method: str, url: str, kwargs: dict[str, Any], timeout_s: float | None,
              cancel: Cancel | None = None) -> httpx.Response:
        try:
            deadline = timeout_s if timeout_s is not None else self.timeout_s  # for the whole answer
            return abortable_http.send(self._http, method, url, cancel, deadline, **kwargs)
        except abortable_http.RequestAborted as exc:
            raise DecisionAborted(f"the request to {url} was aborted ({exc})") from None
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, url, timeout_s) from None

    def _transport_error(self, exc: httpx.HTTPError, url: str, timeout_s: float | None) -> EndpointError:
        if isinstance(exc, httpx.ConnectTimeout):
            return EndpointError(f"cannot reach {url}: connection timed out", kind="unreachable")
        if isinstance(exc, httpx.ConnectError):
            reason = "connection refused" if "refused" in str(exc).lower() else (str(exc) or "connection failed")
            return EndpointError(f"cannot reach {url}: {reason}", kind="unreachable")
        if isinstance(exc, httpx.TimeoutException):
            t = timeout_s if timeout_s is not None else self.timeout_s
            return EndpointError(f"{url} did not answer within {t:g} s (timeout)", kind="timeout")
        if isinstance(exc, httpx.RemoteProtocolError):
            return EndpointError(f"{url} broke the connection: {exc}", kind="malformed")
        return EndpointError(f"request to {url} failed: {type(exc).__name__}: {exc}", kind="unreachable")

    @staticmethod
    def _error_message(resp: httpx.Response) -> str:
        try:
            data = resp.json()
        except ValueError:
            # an HTML error page (a proxy's, a plain web server's): its words, never its markup, in the one line
            return _short(page_text(resp.text) if looks_like_html(resp.text) else resp.text, 200)
        if isinstance(data, dict):
            err = data.get("error", data)
            if isinstance(err, dict):
                return _short(str(err.get("message") or err.get("detail") or err), 300)
            return _short(str(err), 300)
        return _short(str(data), 300)

    def _check_status(self, resp: httpx.Response, url: str) -> None:
        if resp.status_code == 429:
            msg = self._error_message(resp)
            found = retry_after_source(resp.headers, msg)
            if found is None:
                found = (DEFAULT_RETRY_AFTER_S, f"no delay given: default {DEFAULT_RETRY_AFTER_S:g} s")
                said = f" (no delay given: waiting {DEFAULT_RETRY_AFTER_S:g} s)"
            else:
                said = ""
            raise RateLimited(f"{url} answered 429 Too Many Requests: {msg}{said}", retry_after=found[0],
                              source=found[1])
        if resp.status_code == 400:
            exceeded = context_exceeded_from(resp)
            if exceeded is not None:
                raise exceeded
        if resp.status_code >= 400:
            raise EndpointError(f"{url} answered HTTP {resp.status_code}: {self._error_message(resp)}",
                                kind="http", status=resp.status_code)

    @staticmethod
    def _json(resp: httpx.Response, url: str) -> Any:
        try:
            return json.loads(resp.content)
        except (ValueError, UnicodeDecodeError) as exc:
            ctype = resp.headers.get("content-type", "?")
            raise EndpointError(
                f"{url} sent a body that is not valid JSON ({ctype}, {len(resp.content)} bytes: {exc}); "
                f"it starts: {_short(resp.text, 120)!r}", kind="malformed") from None

    # -- API ---------------------------------------------------------------------

    def list_models(self, timeout_s: float = 15.0) -> list[dict[str, Any]]:
        """GET /models → the served model entries. EndpointError says why not."""
        url = f"{self.base_url}/models"
        resp, _ = self._request("GET", "/models", timeout_s=timeout_s)
        if resp.status_code in (404, 405):
            raise EndpointError(f"{url} answered HTTP {resp.status_code}: this does not look like an "
                                "OpenAI-compatible server (no /v1/models)", kind="not-openai",
                                status=resp.status_code)
        self._check_status(resp, url)
        try:
            data = json.loads(resp.content)
        except (ValueError, UnicodeDecodeError):
            ctype = resp.headers.get("content-type", "?")
            raise EndpointError(f"{url} answered {ctype}, not JSON: this does not look like an OpenAI-compatible "
                                f"server (it starts: {_short(resp.text, 80)!r})", kind="not-openai") from None
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str)
                                                   for e in entries):
            raise EndpointError(f"{url} answered JSON without a `data` list of models: this does not look like "
                                f"an OpenAI-compatible server ({_short(json.dumps(data), 120)})", kind="not-openai")
        return entries

    def get_json(self, path: str, timeout_s: float = 5.0) -> Any | None:
        """GET a server-specific path outside /v1 (e.g. llama-server's /props); None on any failure."""
        root = re.sub(r"/v1$", "", self.base_url)
        try:
            resp = self._http.get(root + path, timeout=timeout_s)
            if resp.status_code != 200:
                return None
            return resp.json()
        except (httpx.HTTPError, ValueError):
            return None

    def chat(self, body: dict[str, Any], timeout_s: float | None = None) -> ChatResult:
        """POST /chat/completions (non-streaming) and read the first choice."""
        url = f"{self.base_url}/chat/completions"
        resp, latency = self._request("POST", "/chat/completions", body, timeout_s=timeout_s)
        self._check_status(resp, url)
        data = self._json(resp, url)
        if not isinstance(data, dict):
            raise EndpointError(f"{url} answered {type(data).__name__}, not a completion object", kind="malformed")
        if "error" in data and not data.get("choices"):
            raise EndpointError(f"{url} reported an error: {self._error_message(resp)}", kind="http")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise EndpointError(f"{url} answered without choices: not an OpenAI chat completion "
                                f"({_short(json.dumps(data), 160)})", kind="malformed")
        choice = choices[0]
        message = choice.get("message") or {}
        if not isinstance(message, dict):
            raise EndpointError(f"{url} answered a choice without a message object", kind="malformed")
        content = message.get("content")
        if isinstance(content, list):  # some servers answer with content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content is not None and not isinstance(content, str):
            raise EndpointError(f"{url} answered message content of type {type(content).__name__}",
                                kind="malformed")
        text = content or ""
        hidden = message.get("reasoning_content") or message.get("reasoning")
        text, think = split_reasoning(text)
        text = text.strip()
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:  # a server that rendered the tool call itself: back to the text form
            text = "\n".join(([text] if text else []) + [tool_call_text(c) for c in calls])
        parts = [p for p in (hidden if isinstance(hidden, str) else None, think) if p]
        reasoning = "\n\n".join(parts) or None
        return ChatResult(text=text, reasoning=reasoning, finish_reason=choice.get("finish_reason"),
                          model=data.get("model") if isinstance(data.get("model"), str) else None,
                          usage=_usage(data.get("usage"), data.get("timings")),
                          timings=_timings(data.get("timings")), latency_s=latency, raw=data)


def tool_call_text(call: Any) -> str:
    """One OpenAI `tool_calls` entry as the `<tool_call>` block the model writes when no server parses it, so the
    family's parser reads it (and refuses it, naming what is wrong) and the history replays it as written.
    Arguments that are not a JSON object stay as they came: the block is then refused as not one JSON object."""
    fn = call.get("function") if isinstance(call, dict) else None
    fn = fn if isinstance(fn, dict) else {}
    name, args = fn.get("name"), fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {args}}}\n</tool_call>'
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


_EXCEEDS = re.compile(r"\((\d+) tokens\).*?context size \((\d+) tokens\)", re.I | re.S)
_VLLM_MAX = re.compile(r"maximum context length is (\d+) tokens", re.I)
_VLLM_ASKED = (  # the forms vLLM's OpenAI server has used, each giving prompt and reply together
    re.compile(r"you requested (\d+) tokens", re.I),  # "… (N in the messages, M in the completion)"
    re.compile(r"too large: (\d+)\..*?request has (\d+) input tokens", re.I | re.S),  # max_tokens, input
    re.compile(r"request has (\d+) input tokens", re.I),
)


def context_exceeded_from(resp: httpx.Response) -> ContextExceeded | None:
    """A refusal for length as ContextExceeded with the numbers: llama-server's "request (N tokens) exceeds the
    available context size (M tokens)", or vLLM's "This model's maximum context length is M tokens. However, …"
    (vLLM states its context nowhere else a client can read, so its refusal is where the numbers come from)."""
    try:
        data = resp.json()
    except ValueError:
        return None
    err = data.get("error", data) if isinstance(data, dict) else None  # vLLM before 0.9: the error at top level
    if not isinstance(err, dict):
        return None
    message = str(err.get("message") or "")
    n, m = err.get("n_prompt_tokens"), err.get("n_ctx")
    if err.get("type") != "exceed_context_size_error":
        match = _EXCEEDS.search(message)
        if not match:
            return _vllm_exceeded(message)
        n, m = int(match.group(1)), int(match.group(2))
    elif not (isinstance(n, int) and isinstance(m, int)):
        match = _EXCEEDS.search(message)
        n, m = (int(match.group(1)), int(match.group(2))) if match else (None, None)
    return ContextExceeded(n, m, "the server refused the request for length (HTTP 400)")


def _vllm_exceeded(message: str) -> ContextExceeded | None:
    """vLLM's length refusal: its maximum context length and what the request asked (prompt and reply)."""
    most = _VLLM_MAX.search(message)
    if not most:
        return None
    asked = None
    for pattern in _VLLM_ASKED:
        found = pattern.search(message)
        if found:
            asked = sum(int(g) for g in found.groups())
            break
    return ContextExceeded(asked, int(most.group(1)), "the server refused the request for length (HTTP 400)")


def _usage(usage: Any, timings: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(usage, dict):
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            if isinstance(usage.get(key), int):
                out[key] = usage[key]
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
            out["cached_tokens"] = details["cached_tokens"]
    if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        out.setdefault("cached_tokens", timings["cache_n"])
    return out


def _timings(timings: Any) -> dict[str, Any]:
    if not isinstance(timings, dict):
        return {}
    keep = ("cache_n", "prompt_n", "prompt_ms", "prompt_per_second", "predicted_n", "predicted_ms",
            "predicted_per_second")
    return {k: timings[k] for k in keep if isinstance(timings.get(k), (int, float))}


# --- the backend the policies use ------------------------------------------------------------

PROBE_MAX_TOKENS = 128
"""Room for the forced answer even with a byte-level tokenizer and the whitespace schema grammars allow."""


def _probe_constraints(nonce: str) -> dict[str, dict[str, Any]]:
    """Request-body additions that force `{"probe": nonce}` when a backend honours them."""
    schema = {"type": "object", "properties": {"probe": {"type": "string", "enum": [nonce]}},
              "required": ["probe"], "additionalProperties": False}
    quoted = nonce.replace("\\", "\\\\").replace('"', '\\"')
    grammar = f'root ::= "{{\\"probe\\": \\"{quoted}\\"}}"\n'
    return {
        "grammar": {"grammar": grammar},
        "json_object": {"response_format": {"type": "json_object", "schema": schema}},
        "json_schema": {"response_format": {"type": "json_schema",
                                            "json_schema": {"name": "probe", "schema": schema, "strict": True}}},
    }


def detect_structured_output(client: OpenAIClient, model: str, *, timeout_s: float | None = None,
                             extra: dict[str, Any] | None = None) -> tuple[list[str], dict[str, str]]:
    """Try each output constraint on a tiny text request and keep the ones the server honours.

    A constraint counts as honoured only when the answer is exactly the JSON
    it forces, holding a random nonce the prompt never mentions (a model that
    ignored the constraint cannot produce it). Returns (honoured modes in
    order of preference, what happened per mode). An HTTP error answer means
    "refused"; a transport failure or a 429 is raised (try again later).
    """
    import secrets

    nonce = "cw" + secrets.token_hex(4)
    supported: list[str] = []
    tried: dict[str, str] = {}
    for mode, addition in _probe_constraints(nonce).items():
        body = {"model": model, "max_tokens": PROBE_MAX_TOKENS, "temperature": 0.0, "stream": False,
                "messages": [{"role": "user", "content": "Reply with a short JSON object."}],
                **(extra or {}), **addition}
        try:
            result = client.chat(body, timeout_s=timeout_s)
        except RateLimited:
            raise
        except EndpointError as exc:
            if exc.kind in ("http", "malformed"):
                tried[mode] = f"refused ({exc})"
                continue
            raise
        try:
            honoured = json.loads(result.text.strip()) == {"probe": nonce}
        except ValueError:
            honoured = False
        tried[mode] = "honoured" if honoured else f"ignored (answered {_short(result.text, 60)!r})"
        if honoured:
            supported.append(mode)
    return supported, tried


class HTTPBackend(Backend):
    """An OpenAI-compatible endpoint as a policy backend."""

    kind = "http"

    def __init__(self, client: OpenAIClient, model_id: str, *, server: str = "unknown",
                 request_timeout_s: float | None = None, known_window: Any = None,
                 model_meta: dict[str, Any] | None = None, model_entry: dict[str, Any] | None = None,
                 local_files: dict[str, str | None] | None = None, digest_cache: Path | None = None):
        self.client = client
        self.model_id = model_id
        self.server = server
        """`llama-server`, `llama-cpp-python` or `unknown` (what /v1/models suggested)."""
        self.request_timeout_s = request_timeout_s
        self.cache_prompt = server == "llama-server"
        self._support: list[str] | None = None
        self.structured_report: dict[str, str] = {}
        self._known_window = known_window
        """A `ContextWindow` Conway knows from the GGUF and runtime.n_ctx (a server it started itself)."""
        self.abortable = abortable_http.on_loopback(client.base_url)
        """A stop shuts the request's socket down once it is connected, and a connect to this machine is tried
        in short slices (`abortable_http.send`), whereas a remote host may hold a connect up to its timeout: that
        request stays on the worker thread, abandoned after a grace (`Policy.abortable`)."""
        self.model_entry = model_entry or {}
        """The served model's /v1/models entry (owned_by; llama-server's `meta`, vLLM's `root`, `max_model_len`)."""
        self._model_meta = model_meta or self.model_entry.get("meta") or {}
        """The /v1/models entry's `meta` (llama-server: n_ctx_train …)."""
        self._local_files = local_files or {}
        """The model and projector files of a server Conway started itself (their digests go into reports)."""
        self._served_by: dict[str, Any] | None = None
        self.digest_cache = digest_cache
        """Where model files' digests are kept between runs (`served_by.file_digest`); None: this process only."""
        self._window: Any = None
        self._token_counts: dict[int, int] = {}
        self._props_body: Any = ...

    def props(self) -> dict[str, Any]:
        """llama-server's GET /props, asked once ({} from any other server, or when it does not answer)."""
        if self._props_body is ...:
            body = self.client.get_json("/props") if self.server == "llama-server" else None
            self._props_body = body if isinstance(body, dict) else {}
        return self._props_body

    def served_by(self) -> dict[str, Any]:
        """What the server says served the model (asked once): `served_by.http_served_by`."""
        if self._served_by is None:
            from conway.policies.backends.served_by import http_served_by
            self._served_by = http_served_by(self, self._local_files, self.digest_cache)
        return self._served_by

    def renders_tools(self) -> bool | None:
        """llama-server's /props `chat_template_caps.supports_tools` (None: not said). The template's capabilities
        are reported with --no-jinja too, where the field is refused (HTTP 500 "tools param requires --jinja
        flag"); a template that says False takes the field and drops it unrendered (llama-server b1-0c1e570, by
        hand on the tiny VLM)."""
        caps = self.props().get("chat_template_caps")
        said = caps.get("supports_tools") if isinstance(caps, dict) else None
        return said if isinstance(said, bool) else None

    def takes_images(self) -> bool | None:
        """llama-server's /props `modalities.vision` (False: started without a projector); None: not said."""
        modalities = self.props().get("modalities")
        vision = modalities.get("vision") if isinstance(modalities, dict) else None
        return vision if isinstance(vision, bool) else None

    def context_window(self) -> Any:
        """Tokens one request may hold: llama-server's per-slot n_ctx (/props, /slots), vLLM's `max_model_len` (its
        /v1/models entry), else what Conway knows.

        llama-server caps each slot at the model's trained context (a log line is its only word on it),
        so /props is the real limit; a server that says nothing leaves the window unknown (None).
        """
        if self._window is not None:
            return self._window
        train = self._model_meta.get("n_ctx_train")
        train = train if isinstance(train, int) and train > 0 else None
        window = None
        if self.server == "llama-server":
            props = self.props()
            settings = props.get("default_generation_settings")
            n = settings.get("n_ctx") if isinstance(settings, dict) else None
            if isinstance(n, int) and n > 0:
                window = ContextWindow(n, "llama-server /props (per-slot n_ctx)", train)
            else:
                slots = self.client.get_json("/slots")
                n = slots[0].get("n_ctx") if isinstance(slots, list) and slots and isinstance(slots[0], dict) \
                    else None
                if isinstance(n, int) and n > 0:
                    window = ContextWindow(n, "llama-server /slots (per-slot n_ctx)", train)
        longest = self.model_entry.get("max_model_len")  # vLLM states its context here (prompt and reply together)
        if window is None and isinstance(longest, int) and not isinstance(longest, bool) and longest > 0:
            window = ContextWindow(longest, "vLLM /v1/models max_model_len", train)
        if window is None and self._known_window is not None:
            window = self._known_window
        self._window = window
        return window

    def count_tokens(self, text: str) -> int | None:
        """Exact token count through llama-server's /tokenize (None elsewhere); stable texts are cached."""
        if self.server != "llama-server":
            return None
        key = hash(text)
        if key in self._token_counts:
            return self._token_counts[key]
        root = re.sub(r"/v1$", "", self.client.base_url)
        try:
            resp = self.client._http.post(root + "/tokenize", json={"content": text, "add_special": False},
                                          timeout=10.0)
            tokens = resp.json().get("tokens") if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        if not isinstance(tokens, list):
            return None
        if len(self._token_counts) > 64:
            self._token_counts.clear()
        self._token_counts[key] = len(tokens)
        return len(tokens)

    def structured_support(self) -> list[str]:
        if self._support is None:
            self._support, self.structured_report = detect_structured_output(
                self.client, self.model_id, timeout_s=self.request_timeout_s)
        return list(self._support)

    def complete(self, messages: list[dict[str, Any]], *, mode: str, spec: Any, max_tokens: int | None,
                 temperature: float | None, seed: int | None,
                 sampling: Mapping[str, Any] | None = None) -> ChatResult:
        body: dict[str, Any] = {"model": self.model_id, "messages": messages,
                                **({"max_tokens": max_tokens} if max_tokens is not None else {}),
                                **({"temperature": temperature} if temperature is not None else {}),
                                **dict(sampling or {}), "stream": False}
        if seed is not None:
            body["seed"] = seed
        if self.server == "llama-server":  # reuse the KV cache of the shared prompt prefix (false: said so, as
            body["cache_prompt"] = self.cache_prompt  # its default is true)
        if getattr(spec, "tools", None):  # the server's chat template renders them (`policy.tool_schema`); callers
            # outside a decision (memory summaries, probes) pass no spec
            body["tools"] = spec.tools
        if mode == "grammar" and spec.grammar:
            body["grammar"] = spec.grammar
        elif mode == "json_object" and spec.schema:
            body["response_format"] = {"type": "json_object", "schema": spec.schema}
        elif mode == "json_schema" and spec.schema:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "conway_action", "schema": spec.schema,
                                                       "strict": True}}
        return self.client.chat(body, timeout_s=self.request_timeout_s)

    def close(self) -> None:
        self.client.close()
