"""The server checked as well as the request: does it see a screenshot as the family's own processor sees it?

A server can receive exactly the request a preset means to send and still hand the model something else: llama-
server started with a smaller `--image-max-tokens` shrinks every screenshot again, so pixel answers land
elsewhere; a server with another processor resizes otherwise. This asks the server itself, before a run: for
screenshots of several shapes (square, landscape, portrait), each resized by the preset's rule, it counts the
prompt tokens the server bills for the image (a one-token completion with the image, less one without it) and
compares them with what the family's processor makes of that size (`geometry.image_tokens`). A server adds its
image delimiters (llama.cpp: 2), so a count up to `DELIMITERS` above the processor's is the same image; anything
else is flagged in one line with both numbers. `conway models --conformance --check-server` prints the lines.

Not checked here: the rendered chat template (a server started with another template than the model's).
"""

from __future__ import annotations

import base64
import io
from typing import Any

from conway.config import ConwayConfig
from conway.geometry import Size, image_tokens

__all__ = ["SHAPES", "DELIMITERS", "image_token_lines"]

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
