"""The server checked as well as the request: does it see a screenshot as the family's own processor sees it?

A server can receive exactly the request a preset means to send and still hand the model something else: llama-
server started with a smaller `--image-max-tokens` shrinks every screenshot again, so pixel answers land
elsewhere; a server with another processor resizes otherwise. This asks the server itself, before a run: for
screenshots of several shapes (square, landscape, portrait), each resized by the preset's rule, it counts the
prompt tokens the server bills for the image (a one-token completion with the image, less one without it) and
compares them with what the family's processor makes of that size (`geometry.image_tokens`). A server adds its
image delimiters (llama.cpp: 2), so a count up to `DELIMITERS` above the processor's is the same image; anything
else is flagged in one line with both numbers. `conway models --conformance --check-server` prints the lines.

The chat template is checked too, where the server can render one and the model file is on this machine:
llama-server's `/apply-template` renders a short conversation (system, user, assistant, user) with the template it
was started with, and the same conversation is rendered here with the template the GGUF carries (the one its
converter copied from the model's own processor) by jinja2, as Hugging Face renders it; a server started with
another `--chat-template` differs and is flagged with where.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from conway.config import ConwayConfig
from conway.geometry import Size, image_tokens

__all__ = ["SHAPES", "DELIMITERS", "image_token_lines", "template_line"]

SHAPES: tuple[Size, ...] = ((1024, 1024), (1920, 1080), (1080, 1920))
"""Screens asked about: square, landscape (OSWorld's), portrait; non-square ones catch a server that swaps or
pads the sides."""
DELIMITERS = 4
"""Tokens a server may add around one image (llama.cpp adds a start and an end token: 2)."""


def _png(size: Size) -> str:
    from PIL import Image

    img = Image.new("RGB", size, (40, 90, 160))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _prompt_tokens(client: Any, model: str, content: list[dict[str, Any]]) -> int | None:
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 1, "temperature": 0,
            "cache_prompt": False}
    usage = client.chat(body).usage
    n = usage.get("prompt_tokens")
    return n if isinstance(n, int) else None


def image_token_lines(config: ConwayConfig) -> tuple[list[str], bool]:
    """(one line per shape, whether the server counts every image as the family's processor does). Asks the
    configured endpoint for `len(SHAPES) + 1` one-token completions."""
    from conway.config import api_key
    from conway.policies.backends.discovery import discover
    from conway.policies.backends.http_client import OpenAIClient
    from conway.policies.conformance import rule_for

    pol = config.policy
    rule = rule_for(config)
    if rule.passthrough:
        return [f"image tokens: not checked (the {pol.kind} agent sends the screenshot as captured: no processor "
                "size to hold the server to)"], True
    client = OpenAIClient(pol.endpoint or "", api_key=api_key(config), timeout_s=pol.request_timeout_s)
    try:
        served = discover(client, pol.model)
        text = [{"type": "text", "text": "x"}]
        base = _prompt_tokens(client, served.model_id, text)
        lines, ok = [], True
        for shape in SHAPES:
            sent = rule.target_size(shape)
            n = _prompt_tokens(client, served.model_id, [{"type": "image_url", "image_url": {"url": _png(sent)}},
                                                         *text])
            want = image_tokens(sent, rule.factor)
            if base is None or n is None:
                lines.append(f"image tokens {shape[0]}x{shape[1]}: not checked (the server reports no prompt_tokens)")
                continue
            got = n - base
            same = want <= got <= want + DELIMITERS
            ok = ok and same
            lines.append(f"image tokens {shape[0]}x{shape[1]} sent as {sent[0]}x{sent[1]}: the server counts {got}, "
                         f"the {rule.name} processor {want}" + ("" if same else
                         " — DIFFERENT: the server resizes the screenshot otherwise (llama-server: start it with "
                         f"--image-max-tokens {max(want, config.policy.image_token_cap())} or more)"))
        return lines, ok
    finally:
        client.close()


CONVERSATION = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Open the Files window."},
                {"role": "assistant", "content": "Action: click(start_box='(120,340)')"},
                {"role": "user", "content": "Now save the report."}]
"""Text only, so that every server renders it (images are counted by `image_token_lines`)."""


def template_line(config: ConwayConfig) -> tuple[str, bool]:
    """(one line, whether the server's rendered chat template is the model's own); a check that cannot be made
    says why and passes."""
    import httpx

    from conway.config import api_key
    from conway.policies.backends.discovery import discover
    from conway.policies.backends.http_client import HTTPBackend, OpenAIClient

    pol = config.policy
    client = OpenAIClient(pol.endpoint or "", api_key=api_key(config), timeout_s=pol.request_timeout_s)
    try:
        served = discover(client, pol.model)
        if served.server != "llama-server":
            return f"chat template: not checked ({served.server} renders no template for a client to see)", True
        backend = HTTPBackend(client, served.model_id, server=served.server)
        path = backend.props().get("model_path")
        own = _gguf_template(path)
        if own is None:
            return f"chat template: not checked (the model file {path} is not readable here, or has no template)", True
        root = client.base_url.removesuffix("/v1")
        try:
            rendered = httpx.post(root + "/apply-template", json={"messages": CONVERSATION}, timeout=30).json()["prompt"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            return f"chat template: not checked (llama-server /apply-template did not answer: {exc})", True
    finally:
        client.close()
    try:
        mine = _render(own)
    except Exception as exc:  # a template jinja2 cannot render: nothing to compare with
        return f"chat template: not checked (the GGUF's template does not render here: {exc})", True
    if rendered == mine:
        return "chat template: the server renders the model's own (the GGUF's tokenizer.chat_template)", True
    at = next((i for i, (a, b) in enumerate(zip(rendered, mine)) if a != b), min(len(rendered), len(mine)))
    return (f"chat template: DIFFERENT from the model's own at char {at}: the server renders "
            f"…{rendered[max(0, at - 20):at + 40]!r}…, the GGUF's template …{mine[max(0, at - 20):at + 40]!r}… "
            "(llama-server: start it without --chat-template / --chat-template-file)"), False


def _gguf_template(path: Any) -> str | None:
    if not isinstance(path, str):
        return None
    try:
        from conway.runtime.resolver import gguf_metadata

        template = gguf_metadata(path).get("tokenizer.chat_template")
    except Exception:  # not on this machine, not a GGUF
        return None
    return template if isinstance(template, str) else None


def _render(template: str) -> str:
    """The conversation through the template as Hugging Face's processors render it (jinja2, trimmed blocks)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=CONVERSATION, add_generation_prompt=True, bos_token="",
                                            eos_token="")
