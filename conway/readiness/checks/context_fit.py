"""Does one decision fit the model's context window? The context check of preflight.

window − image − reply − every fixed part the prompt carries must leave at
least `MIN_TEXT_TOKENS` for memory and history; texts are estimated at
`CHARS_PER_TOKEN_ESTIMATE` characters a token.
"""

from __future__ import annotations

from typing import Any

from conway.config import ConwayConfig
from conway.readiness.checks import Check

ASSUMED_SCREEN = (1920, 1080)
MIN_TEXT_TOKENS = 512
"""Fewer tokens than this left for goals, memory and history is not a usable context."""
CHARS_PER_TOKEN_ESTIMATE = 3.0

_REMEDY = {
    "image": "lower policy.image_max_tokens",
    "reply": "lower policy.max_tokens",
    "instructions and action space": "offer fewer tools (tools.enabled)",
    "MCP tool listing": "lower tools.mcp_listing_max_chars or configure fewer MCP servers",
    "skills list": "lower skills.listing_max_chars or remove skills",
    "constitution.md": "shorten constitution.md",
    "goals.md": "shorten goals.md",
    "untrusted-data rule": "raise the window",
    "host facts": "show fewer (agent.host_facts)",
}


def context_check(config: ConwayConfig, n_ctx: int | None, source: str | None, trained: int | None,
                  screen: tuple[int, int] | None = None, parts: dict[str, str] | None = None,
                  window_setting: str = "runtime.n_ctx") -> Check:
    """Does a decision fit the model's window? window − image − reply − every fixed part the prompt carries.

    `parts`: the texts every prompt carries besides the instructions and action space (constitution.md,
    goals.md, the MCP tool listing, the skills list); `screen`: the captured desktop (else 1920x1080,
    assumed); `window_setting`: what sets the window (runtime.n_ctx, or an endpoint server's own -c).
    """
    from conway.geometry import image_tokens
    from conway.policies.families import get_family

    p = config.policy
    if n_ctx is None:
        return Check("context fits", "warn", "the server does not say its context window (no llama-server /props): "
                     "prompts are sized by context.budget_tokens alone, and a length refusal is reported as "
                     "\"context exceeded\"")
    family = get_family(p.kind)
    try:
        adapter = family.make_adapter(p.prompt)
    except ValueError as exc:
        return Check("context fits", "fail", f"policy.prompt: {exc}")
    reply_n = p.resolved_max_tokens
    image_cap = _image_token_cap(config)
    try:
        rule = _resize_rule(config, family, image_cap)
    except ValueError as exc:
        return Check("context fits", "fail", f"policy.resize: {exc}")
    size = screen or ASSUMED_SCREEN
    sent = rule.target_size(size)
    image_n = image_cap if rule.passthrough else image_tokens(sent, rule.factor)
    sizes = _fixed_part_tokens(config, family, adapter, sent, parts)
    text_n = n_ctx - image_n - reply_n - sum(sizes.values())
    carried = " ".join(f"− {name} ~{n}" for name, n in sizes.items())
    numbers = (f"window {n_ctx} tokens ({source}) − image {image_n} ({sent[0]}x{sent[1]} from a "
               f"{size[0]}x{size[1]} screen{'' if screen else ', assumed'}) − reply {reply_n} (policy.max_tokens) "
               f"{carried} leaves ~{text_n} tokens for memory and history")
    data = {"n_ctx": n_ctx, "window_source": source, "image_tokens": image_n, "reply_tokens": reply_n,
            "instruction_tokens_estimate": sizes["instructions and action space"], "part_tokens_estimate": sizes,
            "text_tokens": text_n, "n_ctx_train": trained, "screen": list(size), "screen_assumed": screen is None}
    from conway.policies.conformance import window_refusal

    refusal = window_refusal(config, n_ctx, source or window_setting, screen)
    if refusal:  # the family's full window (its agent's screenshots and answers) does not fit: refused, never shrunk
        return Check("context fits", "fail", refusal, data)
    if text_n < MIN_TEXT_TOKENS:
        return _too_small(numbers, data, {"image": image_n, "reply": reply_n, **sizes}, window_setting)
    notes = _window_notes(config, trained)
    if notes:
        return Check("context fits", "warn", f"{numbers}; " + "; ".join(notes), data)
    return Check("context fits", "ok", numbers, data)


def _image_token_cap(config: ConwayConfig) -> int:
    """The most tokens one screenshot may take; when Conway runs the model, the cap also leaves room for text."""
    from conway.runtime.server import server_window

    p = config.policy
    local = bool(p.model_path) and not p.endpoint
    in_process = local and p.backend != "http"
    window = (config.runtime.n_ctx if in_process else server_window(config, config.runtime.n_ctx)) if local else None
    return p.image_token_cap(in_process=in_process, window=window)


def _resize_rule(config: ConwayConfig, family: Any, image_cap: int) -> Any:
    """The resize rule screenshots go through (the family's unless policy.resize names one); ValueError if unknown."""
    from conway.policies.families import get_resize_rule

    p = config.policy
    rule = family.resize if p.resize == "auto" else get_resize_rule(p.resize)
    return rule if rule.passthrough else rule.with_token_cap(image_cap)


def _fixed_part_tokens(config: ConwayConfig, family: Any, adapter: Any, sent: tuple[int, int],
                       parts: dict[str, str] | None) -> dict[str, int]:
    """Estimated tokens of each text every prompt carries: the instructions and action space, then `parts`."""
    from conway.actions import ACTION_TYPES, describe_action_space
    from conway.geometry import Convention

    p = config.policy
    convention = family.convention if p.convention == "auto" else Convention(p.convention)
    types = list(ACTION_TYPES)
    fixed = adapter.instructions(types, sent, convention) + describe_action_space(types)
    sizes = {"instructions and action space": int(len(fixed) / CHARS_PER_TOKEN_ESTIMATE) + 64}  # + the template
    sizes.update({name: int(len(text) / CHARS_PER_TOKEN_ESTIMATE) for name, text in (parts or {}).items() if text})
    return sizes


def _too_small(numbers: str, data: dict[str, Any], tokens: dict[str, int], window_setting: str) -> Check:
    """The failed check when too little is left for text: it names the largest part and how to shrink it."""
    largest, largest_n = max(tokens.items(), key=lambda kv: kv[1])
    raise_window = (f"raise {window_setting}" + (" (up to what the model was trained for)"
                                                if window_setting == "runtime.n_ctx" else ""))
    return Check("context fits", "fail", f"{numbers} (at least {MIN_TEXT_TOKENS} needed): the largest part is "
                 f"the {largest} (~{largest_n} tokens): {_REMEDY[largest]}, or {raise_window}", data)


def _window_notes(config: ConwayConfig, trained: int | None) -> list[str]:
    """Warnings about the window itself: a local runtime.n_ctx above what the model was trained for."""
    n_ctx = config.runtime.n_ctx
    if trained and n_ctx > trained and config.policy.model_path and not config.policy.endpoint:
        return [f"runtime.n_ctx={n_ctx} exceeds the {trained} tokens the model was trained for: each "
                f"request is held to {trained}"]
    return []
