"""Is the configured model there? Runtime/model readiness for preflight.

Uses the model layer's own pieces, so preflight and `conway run` agree:
`policies.factory.backend_choice` (which backend), `policies.backends.discovery`
(`/v1/models`: reachable, serving the configured model) plus one real decision
on the probe's synthetic image that must parse (`decision.probe`),
`runtime.resolver` (local GGUF + mmproj present and fitting, estimates
labelled as such) and `runtime.server.find_program` (a server program Conway
could start). Nothing here downloads anything or starts a model.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from conway.config import ConwayConfig
from conway.errors import UserError
from conway.readiness.checks import Check
from conway.store.home import Home

PROBE_TIMEOUT_S = 10.0
DECISION_TIMEOUT_S = 60.0
"""Longest preflight waits for one decision request (a cold model's first answer can be slow)."""


def effective_backend(config: ConwayConfig) -> str:
    """mock | endpoint | server | inprocess | none: where decisions would come from with this config."""
    if config.policy.kind == "mock":
        return "mock"
    from conway.policies.factory import backend_choice
    try:
        return backend_choice(config)
    except UserError:
        return "none"


def decision_check(config: ConwayConfig, home: Home) -> Check:
    """One real decision on the probe's synthetic image (never the desktop): ok only when the answer parses.

    Listing `/v1/models` says nothing about whether chat completions work (a
    server can list its model and answer every request with HTTP 500). The
    request goes through the same policy, output constraint and parser as
    `conway run`; each request is bounded by min(policy.request_timeout_s,
    DECISION_TIMEOUT_S).
    """
    from conway.policies.factory import build_model_policy
    from conway.readiness.checks.decision import probe

    cfg = config.model_copy(deep=True)
    cfg.policy.request_timeout_s = min(config.policy.request_timeout_s, DECISION_TIMEOUT_S)
    try:
        policy = build_model_policy(cfg, home)
    except UserError as exc:
        return Check("model answers a decision", "fail", str(exc))
    try:
        report = probe(policy)
    finally:
        policy.close()
    data = {"latency_s": round(report.latency_s, 3), "structured_output": report.structured_output,
            "answer": report.raw_text[:400]}
    if report.error:
        return Check("model answers a decision", "fail", f"the decision request failed: {report.error}", data)
    if not report.ok:
        why = "; ".join(report.problems) or "no valid action"
        return Check("model answers a decision", "fail", f"the model answered, but not with a valid action: {why} "
                     f"(answer: {report.raw_text[:120]!r})", data)
    return Check("model answers a decision", "ok", f"one decision on a synthetic image in {report.latency_s:.2f} s: "
                 f"{'; '.join(report.actions)} (output constraint: {report.structured_output})", data)


def model_checks(config: ConwayConfig, home: Home, parts: dict[str, str] | None = None,
                 screen: tuple[int, int] | None = None) -> list[Check]:
    """Runtime/model readiness: the endpoint serves the model, or the local files are there and fit.

    `parts` and `screen` size the context check (`context_check`)."""
    p = config.policy
    if p.kind == "mock":
        return [Check("model", "ok", "mock policy: scripted decisions, no model or server needed",
                      {"model_id": "conway-mock"})]
    from conway.config import api_key
    from conway.policies.factory import backend_choice
    try:
        choice = backend_choice(config)
    except UserError as exc:
        return [Check("model", "fail", str(exc))]
    if choice == "endpoint":
        from conway.policies.backends.discovery import discover
        from conway.policies.backends.http_client import OpenAIClient
        try:
            client = OpenAIClient(p.endpoint or "", api_key=api_key(config), timeout_s=PROBE_TIMEOUT_S,
                                  connect_timeout_s=PROBE_TIMEOUT_S)
        except (ValueError, UserError) as exc:
            return [Check("endpoint", "fail", f"policy.endpoint: {exc}")]
        try:
            served = discover(client, p.model)
            from conway.policies.backends.http_client import HTTPBackend
            from conway.policies.factory import _served_meta
            window = HTTPBackend(client, served.model_id, server=served.server,
                                 model_meta=_served_meta(served)).context_window()
        except UserError as exc:
            return [Check("endpoint serves the model", "fail", str(exc))]
        finally:
            client.close()
        return [Check("endpoint serves the model", "ok",
                      f"{served.base_url} serves {served.model_id} ({served.server} server; "
                      f"served: {', '.join(served.served)})",
                      {"model_id": served.model_id, "served": served.served, "server": served.server}),
                context_check(config, window.n_ctx if window else None, window.source if window else None,
                              window.n_ctx_train if window else None, screen=screen, parts=parts,
                              window_setting="the server's own context size (llama-server -c)"),
                decision_check(config, home)]
    from conway.runtime.resolver import resolve_local_model
    rt = config.runtime
    checks = []
    try:
        local = resolve_local_model(p.model_path, p.mmproj_path, n_ctx=rt.n_ctx, n_gpu_layers=rt.n_gpu_layers,
                                    headroom_gib=rt.headroom_gib, check_memory=rt.check_memory,
                                    slots=rt.parallel if effective_backend(config) == "server" else 1)
    except UserError as exc:
        return [Check("local model", "fail", str(exc))]
    model_id = p.model or Path(local.model.path).stem
    checks.append(Check("local model", "ok", f"{local.model.path} ({local.model.arch})"
                        + (f" with projector {local.projector.path}" if local.projector else ""),
                        {"model_id": model_id}))
    checks.append(Check("model fits", "ok", local.verdict))
    trained = local.model.context_length
    window = min(rt.n_ctx, trained) if trained else rt.n_ctx
    checks.append(context_check(config, window, "runtime.n_ctx" + (" held to the GGUF's context_length"
                                                                   if trained and trained < rt.n_ctx else ""),
                                trained, screen=screen, parts=parts))
    if choice == "server":
        from conway.runtime.server import LocalServer
        try:  # the start-up checks `run` makes (host, port, server program), without starting anything
            server = LocalServer.from_config(config, home.runtime_log, alias=model_id)
            checks.append(Check("server program", "ok", f"{server.program.kind} ({server.program.where}) would "
                                f"be started on {server.host}:{server.port if rt.port else '(any free port)'}"))
        except UserError as exc:
            checks.append(Check("server start-up", "fail", str(exc)))
    elif importlib.util.find_spec("llama_cpp") is None:
        checks.append(Check("llama-cpp-python", "fail", "in-process inference needs llama-cpp-python: "
                            "pip install -e '.[llama]' (or run a server and give --endpoint)"))
    else:
        checks.append(Check("llama-cpp-python", "ok", "importable (the model loads in this process)"))
    return checks


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
    from conway.actions import ACTION_TYPES, describe_action_space
    from conway.geometry import Convention, get_rule, image_tokens
    from conway.policies.families import get_family

    p, rt = config.policy, config.runtime
    notes = []
    if trained and rt.n_ctx > trained and config.policy.model_path and not config.policy.endpoint:
        notes.append(f"runtime.n_ctx={rt.n_ctx} exceeds the {trained} tokens the model was trained for: each "
                     f"request is held to {trained}")
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
    from conway.runtime.server import server_window

    local = bool(p.model_path) and not p.endpoint  # Conway runs the model: the cap also leaves room for text
    in_process = local and p.backend != "http"
    window = (config.runtime.n_ctx if in_process else server_window(config, config.runtime.n_ctx)) if local else None
    image_cap = p.image_token_cap(in_process=in_process, window=window)
    rule_name = family.resize if p.resize == "auto" else p.resize
    try:
        rule = get_rule(rule_name)
        if not rule.passthrough:
            rule = rule.with_token_cap(image_cap)
    except ValueError as exc:
        return Check("context fits", "fail", f"policy.resize: {exc}")
    size = screen or ASSUMED_SCREEN
    sent = rule.target_size(size)
    image_n = image_cap if rule.passthrough else image_tokens(sent, rule.factor)
    convention = family.convention if p.convention == "auto" else Convention(p.convention)
    types = list(ACTION_TYPES)
    fixed = adapter.instructions(types, sent, convention) + describe_action_space(types)
    sizes = {"instructions and action space": int(len(fixed) / CHARS_PER_TOKEN_ESTIMATE) + 64}  # + the template
    sizes.update({name: int(len(text) / CHARS_PER_TOKEN_ESTIMATE) for name, text in (parts or {}).items() if text})
    text_n = n_ctx - image_n - reply_n - sum(sizes.values())
    carried = " ".join(f"− {name} ~{n}" for name, n in sizes.items())
    numbers = (f"window {n_ctx} tokens ({source}) − image {image_n} ({sent[0]}x{sent[1]} from a "
               f"{size[0]}x{size[1]} screen{'' if screen else ', assumed'}) − reply {reply_n} (policy.max_tokens) "
               f"{carried} leaves ~{text_n} tokens for memory and history")
    data = {"n_ctx": n_ctx, "window_source": source, "image_tokens": image_n, "reply_tokens": reply_n,
            "instruction_tokens_estimate": sizes["instructions and action space"], "part_tokens_estimate": sizes,
            "text_tokens": text_n, "n_ctx_train": trained, "screen": list(size), "screen_assumed": screen is None}
    if text_n < MIN_TEXT_TOKENS:
        largest, largest_n = max({"image": image_n, "reply": reply_n, **sizes}.items(), key=lambda kv: kv[1])
        raise_window = (f"raise {window_setting}" + (" (up to what the model was trained for)"
                                                    if window_setting == "runtime.n_ctx" else ""))
        return Check("context fits", "fail", f"{numbers} (at least {MIN_TEXT_TOKENS} needed): the largest part is "
                     f"the {largest} (~{largest_n} tokens): {_REMEDY[largest]}, or {raise_window}", data)
    if notes:
        return Check("context fits", "warn", f"{numbers}; " + "; ".join(notes), data)
    return Check("context fits", "ok", numbers, data)
