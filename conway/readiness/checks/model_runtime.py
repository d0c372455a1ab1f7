"""Is the configured model there? Runtime/model readiness for preflight.

Uses the model layer's own pieces, so preflight and `conway run` agree:
`policies.factory.backend_choice` (which backend), `policies.discovery`
(`/v1/models`: reachable, serving the configured model) plus one real decision
on the probe's synthetic image that must parse (`decision.probe`),
`runtime.resolver` (local GGUF + mmproj present and fitting, estimates
labelled as such) and `runtime.server.find_program` (a server program Conway
could start); whether a decision fits the window is `context_fit`. Nothing here
downloads anything or starts a model.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from conway.config import ConwayConfig
from conway.errors import UserError
from conway.readiness.checks import Check
from conway.readiness.checks.context_fit import context_check
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
    if config.policy.kind == "mock":
        return [Check("model", "ok", "mock policy: scripted decisions, no model or server needed",
                      {"model_id": "conway-mock"})]
    from conway.policies.factory import backend_choice
    try:
        choice = backend_choice(config)
    except UserError as exc:
        return [Check("model", "fail", str(exc))]
    if choice == "endpoint":
        return _endpoint_checks(config, home, parts, screen)
    return _local_model_checks(config, home, choice, parts, screen)


def _endpoint_checks(config: ConwayConfig, home: Home, parts: dict[str, str] | None,
                     screen: tuple[int, int] | None) -> list[Check]:
    """policy.endpoint: it serves the configured model, a decision fits its window, and one decision parses."""
    from conway.config import api_key
    from conway.policies.backends.discovery import discover
    from conway.policies.backends.http_client import OpenAIClient
    p = config.policy
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


def _local_model_checks(config: ConwayConfig, home: Home, choice: str, parts: dict[str, str] | None,
                        screen: tuple[int, int] | None) -> list[Check]:
    """A local GGUF: the files are there and fit, a decision fits the window, and what would run it is there."""
    from conway.policies.conformance import sized_runtime
    from conway.runtime.resolver import resolve_local_model
    config = sized_runtime(config, screen)  # the context Conway gives the model: its preset's full window
    p, rt = config.policy, config.runtime
    try:
        local = resolve_local_model(p.model_path, p.mmproj_path, n_ctx=rt.n_ctx, n_gpu_layers=rt.n_gpu_layers,
                                    headroom_gib=rt.headroom_gib, check_memory=rt.check_memory,
                                    slots=rt.parallel if effective_backend(config) == "server" else 1)
    except UserError as exc:
        return [Check("local model", "fail", str(exc))]
    model_id = p.model or Path(local.model.path).stem
    checks = [Check("local model", "ok", f"{local.model.path} ({local.model.arch})"
                    + (f" with projector {local.projector.path}" if local.projector else ""),
                    {"model_id": model_id}),
              Check("model fits", "ok", local.verdict)]
    trained = local.model.context_length
    window = min(rt.n_ctx, trained) if trained else rt.n_ctx
    checks.append(context_check(config, window, "runtime.n_ctx" + (" held to the GGUF's context_length"
                                                                   if trained and trained < rt.n_ctx else ""),
                                trained, screen=screen, parts=parts))
    checks.append(_runner_check(config, home, choice, model_id))
    return checks


def _runner_check(config: ConwayConfig, home: Home, choice: str, model_id: str) -> Check:
    """What would run the local model: a server program Conway could start, or llama-cpp-python in process."""
    if choice == "server":
        from conway.runtime.server import LocalServer
        try:  # the start-up checks `run` makes (host, port, server program), without starting anything
            server = LocalServer.from_config(config, home.runtime_log, alias=model_id)
            return Check("server program", "ok", f"{server.program.kind} ({server.program.where}) would "
                         f"be started on {server.host}:{server.port if config.runtime.port else '(any free port)'}")
        except UserError as exc:
            return Check("server start-up", "fail", str(exc))
    if importlib.util.find_spec("llama_cpp") is None:
        return Check("llama-cpp-python", "fail", "in-process inference needs llama-cpp-python: "
                     "pip install -e '.[llama]' (or run a server and give --endpoint)")
    return Check("llama-cpp-python", "ok", "importable (the model loads in this process)")
