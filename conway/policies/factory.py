"""Config → a real model policy: the family's adapter (`policies.families`) on a backend.

Which backend (no guessing; each refusal says what to set):

* `policy.endpoint` set → that OpenAI-compatible server; `/v1/models` picks
  the model (`policy.model` / `--model` when it serves several).
* no endpoint, `policy.model_path` set:
  - `policy.backend=http` → Conway starts a local server (llama-server when
    available, else llama-cpp-python's) on 127.0.0.1, talks HTTP to it, and
    stops it when the policy is closed or the process exits;
  - `policy.backend=auto` or `llama_cpp` → llama-cpp-python in this process
    (the embedded default).
* Local models are checked first: the files exist and are GGUF, a VLM has its
  mmproj, and the memory estimate fits (`runtime/resolver.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.config import ConwayConfig, PolicyConfig, api_key
from conway.errors import UserError
from conway.geometry import Convention
from conway.policies.adapter import Adapter
from conway.policies.base import ModelPolicy
from conway.policies.families import MOCK, get_family, get_resize_rule
from conway.policies.family import Family
from conway.policies.settings import PolicySettings
from conway.protocols import ContextWindow, Policy
from conway.store.home import Home

__all__ = ["build_policy", "build_model_policy", "backend_choice"]


def backend_choice(config: ConwayConfig) -> str:
    """`endpoint`, `server` (Conway starts one) or `inprocess`."""
    pol = config.policy
    if pol.endpoint:
        if pol.backend == "llama_cpp":
            raise UserError("policy.backend=llama_cpp runs the model in-process, but policy.endpoint is also set: "
                            "drop one of them")
        return "endpoint"
    if not pol.model_path:
        raise UserError(f"policy.kind={pol.kind} needs a model: give --endpoint URL of an OpenAI-compatible server, "
                        "or a local GGUF with policy.model_path=FILE (and policy.mmproj_path=FILE for its vision "
                        "projector)")
    return "server" if pol.backend == "http" else "inprocess"


def _settings(config: ConwayConfig, family: Family, meta: dict[str, Any], inprocess: bool = False,
              window: int | None = None) -> PolicySettings:
    """The policy's settings: explicit config values, else the family's defaults (`Family.max_tokens` …)."""
    pol = config.policy
    convention = family.convention if pol.convention == "auto" else Convention(pol.convention)
    resize = family.resize.name if pol.resize == "auto" else pol.resize
    try:
        get_resize_rule(resize)
    except ValueError as exc:
        raise UserError(f"policy.resize: {exc}") from None
    image_cap = pol.image_token_cap(in_process=inprocess, window=window)
    if image_cap < pol.image_token_cap():
        meta = {**meta, "image_max_tokens": f"{image_cap} (held to libmtmd's limit in-process or to half the "
                                            f"context Conway gives the model; the family allows {pol.image_token_cap()})"}
    deviations = tuple(pol.resolved_deviations())
    if deviations and family.conversation.official:
        meta = {**meta, "deviations": list(deviations)}
    return PolicySettings(convention=convention, resize_rule=resize, image_max_tokens=image_cap,
                          structured_output=pol.structured_output, max_tokens=pol.resolved_max_tokens,
                          max_tokens_sent=pol.resolved_max_tokens_sent,
                          temperature=pol.resolved_temperature, seed=pol.seed,
                          image_encoding=pol.resolved_encoding,  # type: ignore[arg-type]
                          sampling=pol.resolved_sampling, retry_unfinished=family.default("retry_unfinished"),
                          deviations=deviations, tool_schema=pol.tool_schema, meta=meta,
                          layout=family.default("layout", pol.prompt))


def build_model_policy(config: ConwayConfig, home: Home) -> ModelPolicy:
    """Build the configured policy; UserError (exit 1) for anything the user must fix."""
    from conway.policies.conformance import sized_runtime

    if config.policy.planner is not None:
        return _planned_policy(config, home)  # type: ignore[return-value]
    family, adapter = _family_adapter(config)
    choice = backend_choice(config)
    _check_tool_schema(config, family, adapter, choice)
    sized = sized_runtime(config)  # a model Conway runs gets the context its preset's full window needs
    policy = _built(sized, home, family, adapter, choice, sized.runtime.n_ctx != config.runtime.n_ctx)
    config = sized
    from conway.policies.deviations import deviation_lines, listed
    if listed(config):
        policy.deviations = deviation_lines(config)
    if family.conversation.official:
        _refuse_short_window(config, policy, choice)
    return policy


def _refuse_short_window(config: ConwayConfig, policy: ModelPolicy, choice: str) -> None:
    """A context too small for the preset's full window is refused here, in one line with the numbers and both
    ways out, before any request: `run`, `probe`, `preflight`'s decision and every evaluation build through here."""
    from conway.policies.conformance import window_refusal

    try:
        window = policy.context_window()
    except Exception:  # asking the server failed: the first decision says so
        return
    if window is None:
        return
    refusal = window_refusal(config, window.n_ctx, window.source, in_process=choice == "inprocess")
    if refusal:
        policy.close()
        raise UserError(refusal)


def _built(config: ConwayConfig, home: Home, family: Family, adapter: Adapter, choice: str,
           sized: bool = False) -> ModelPolicy:
    """The policy on the backend `choice` names (`sized`: runtime.n_ctx was sized to the preset's window)."""
    if choice == "endpoint":
        return _endpoint_policy(config, family, adapter, home)
    from conway.runtime.resolver import resolve_local_model

    pol, rt = config.policy, config.runtime
    try:
        local = resolve_local_model(pol.model_path, pol.mmproj_path, n_ctx=rt.n_ctx, n_gpu_layers=rt.n_gpu_layers,
                                    headroom_gib=rt.headroom_gib, check_memory=rt.check_memory,
                                    slots=rt.parallel if choice == "server" else 1)
    except UserError as exc:
        if not sized or "memory" not in str(exc).lower():
            raise
        raise UserError(f"runtime.n_ctx was sized to {rt.n_ctx} for the {pol.kind} window (conway models "
                        f"--conformance shows it): {exc}; or set a smaller window, policy.history_images=N (a "
                        "deviation, listed in every report)") from None
    model_id = pol.model or Path(local.model.path).stem
    build = _server_policy if choice == "server" else _inprocess_policy
    policy = build(config, home, family, adapter, local, model_id)
    warning = n_ctx_warning(rt.n_ctx, local.model.context_length, Path(local.model.path).name)
    if warning:
        policy.description.append("warning: " + warning)
    return policy


def _planned_policy(config: ConwayConfig, home: Home) -> Any:
    """`policy.planner`: the planner's policy (a generic one: only its backend is used) and the grounding preset's,
    deciding together (`policies/planned.py`)."""
    from conway.policies.planned import PlannedPolicy

    pol = config.policy
    plan = pol.planner
    assert plan is not None
    if plan.protocol == "gta1" and plan.temperature is not None:
        raise UserError("policy.planner.temperature: the gta1 protocol sends no temperature (GTA1's agent asks its "
                        "o3 planner with none); leave it unset or use protocol=jedi")
    family, adapter = _family_adapter(config)
    if adapter.replays:
        raise UserError(f"policy.planner: the executor must be a grounding preset (policy=jedi-7b, jedi-3b, gta1, "
                        f"holo1.5 or holo2); the {family.name} family decides whole steps itself")
    executor = build_model_policy(config.model_copy(update={"policy": pol.model_copy(update={"planner": None})}),
                                  home)
    planner_pol = PolicyConfig(kind="generic", endpoint=plan.endpoint, model=plan.model, api_key_env=plan.api_key_env,
                               model_path=plan.model_path, mmproj_path=plan.mmproj_path,
                               request_timeout_s=pol.request_timeout_s, seed=pol.seed)
    try:
        planner = build_model_policy(config.model_copy(update={"policy": planner_pol}), home)
    except BaseException:
        executor.close()
        raise
    if plan.protocol == "gta1":
        from conway.policies.planned_gta1 import GTA1PlannedPolicy

        return GTA1PlannedPolicy(planner, executor, max_tokens=plan.max_tokens or 4096, proposals=plan.proposals,
                                 max_steps=plan.max_steps, password=plan.password)
    return PlannedPolicy(planner, executor, max_tokens=plan.max_tokens or 1500,
                         temperature=0.5 if plan.temperature is None else plan.temperature, max_steps=plan.max_steps)


def _family_adapter(config: ConwayConfig) -> tuple[Family, Adapter]:
    """The configured family and its adapter for the configured prompt."""
    pol = config.policy
    try:
        family = get_family(pol.kind)
    except ValueError as exc:
        raise UserError(f"policy.kind: {exc}") from None
    try:
        adapter = family.make_adapter(pol.prompt)
    except ValueError as exc:
        raise UserError(f"policy.prompt: {exc}") from None
    if family.thought_language:  # the runner's language, English only as the deviation `english_thoughts`
        adapter.language = "English" if "english_thoughts" in pol.resolved_deviations() else family.thought_language
    return family, adapter


def _check_tool_schema(config: ConwayConfig, family: Family, adapter: Adapter, choice: str) -> None:
    """`policy.tool_schema=request` needs a family that calls a tool and a server that renders tools."""
    pol = config.policy
    if pol.tool_schema == "request" and adapter.request_tools is None:
        raise UserError(f"policy.tool_schema=request: the {family.name} family calls no tool (only qwen25vl and "
                        "qwen3vl do); leave it auto")
    if pol.tool_schema == "request" and choice not in ("endpoint", "server"):
        raise UserError("policy.tool_schema=request needs an HTTP server that renders tools (vLLM, llama-server "
                        "--jinja); in-process llama-cpp-python does not: leave it auto")


def digest_cache(home: Home) -> Path:
    """Where the digests of model files are kept between runs (reports name the file that served: `served_by`)."""
    return home.root / "model-digests.json"


def _endpoint_policy(config: ConwayConfig, family: Family, adapter: Adapter, home: Home) -> ModelPolicy:
    """The policy on a server someone else runs (`policy.endpoint`)."""
    from conway.policies.backends.discovery import discover, server_said
    from conway.policies.backends.http_client import HTTPBackend, OpenAIClient

    pol = config.policy
    try:
        client = OpenAIClient(pol.endpoint or "", api_key=api_key(config), timeout_s=pol.request_timeout_s)
    except ValueError as exc:
        raise UserError(f"--endpoint: {exc}") from None
    try:
        served = discover(client, pol.model)
    except BaseException:
        client.close()
        raise
    backend = HTTPBackend(client, served.model_id, server=served.server, request_timeout_s=pol.request_timeout_s,
                          model_meta=_served_meta(served), model_entry=_served_entry(served),
                          digest_cache=digest_cache(home))
    policy = ModelPolicy(adapter, backend, _settings(config, family, {
        "endpoint": served.base_url, "server": served.server}))
    policy.description = [f"model {served.model_id} at {served.base_url} ({server_said(served.server)})"]
    return policy


def _server_policy(config: ConwayConfig, home: Home, family: Family, adapter: Adapter, local: Any,
                   model_id: str) -> ModelPolicy:
    """The policy on a local server Conway starts (`policy.backend=http`), stopped when the policy is closed."""
    from conway.policies.backends.discovery import discover
    from conway.policies.backends.http_client import HTTPBackend, OpenAIClient
    from conway.runtime.server import LocalServer, server_window

    pol, rt = config.policy, config.runtime
    trained = local.model.context_length
    server = LocalServer.from_config(config, home.runtime_log, alias=model_id, n_ctx=local.estimate.n_ctx)
    url = server.start()
    try:
        client = OpenAIClient(url, timeout_s=pol.request_timeout_s)
        served = discover(client, model_id)
    except BaseException:
        server.stop()
        raise
    known = ContextWindow(min(rt.n_ctx, trained) if trained else rt.n_ctx,
                          "runtime.n_ctx" + (" held to the GGUF's context_length" if trained and trained < rt.n_ctx
                                             else ""), trained)
    backend = HTTPBackend(client, served.model_id, server=server.program.kind,
                          request_timeout_s=pol.request_timeout_s, known_window=known,
                          model_meta=_served_meta(served), model_entry=_served_entry(served),
                          local_files={"model": local.model.path,
                                       "projector": local.projector.path if local.projector else None},
                          digest_cache=digest_cache(home))
    # llama-cpp-python's server opens libmtmd as in-process inference does, with its image-token limit
    policy = ModelPolicy(adapter, backend, _settings(config, family, {
        "endpoint": url, "server": server.program.kind, "started_by_conway": True},
        inprocess=server.program.kind == "llama-cpp-python", window=server_window(config, local.estimate.n_ctx)),
        on_close=[server.stop])
    policy.server = server  # type: ignore[attr-defined]
    policy.description = [f"model {model_id} on {server.program.kind} at {url}, started by Conway in "
                          f"{server.started_s:.1f} s (log: {home.runtime_log})", local.verdict]
    return policy


def _inprocess_policy(config: ConwayConfig, home: Home, family: Family, adapter: Adapter, local: Any,
                      model_id: str) -> ModelPolicy:
    """The policy on llama-cpp-python in this process (the embedded default)."""
    from conway.policies.backends.llama_inprocess import LlamaInProcessBackend
    from conway.runtime.server import default_threads

    pol, rt = config.policy, config.runtime
    threads = default_threads(rt.n_threads)
    backend = LlamaInProcessBackend(
        local.model.path, local.projector.path if local.projector else None, model_id=model_id,
        n_ctx=local.estimate.n_ctx,  # held to the trained context: a KV cache past it is never used
        n_threads=threads, n_threads_batch=rt.n_threads_batch or threads, n_gpu_layers=rt.n_gpu_layers,
        chat_handler=rt.chat_handler, chat_format=rt.chat_format, omp_wait_policy=rt.omp_wait_policy,
        seed=pol.seed, log_path=home.runtime_log, prompt_cache=rt.prompt_cache)
    backend.digest_cache = digest_cache(home)
    meta: dict[str, Any] = {"model_path": local.model.path, "threads": threads}
    if backend.note:
        meta["note"] = backend.note
    policy = ModelPolicy(adapter, backend, _settings(config, family, meta, inprocess=True, window=local.estimate.n_ctx))
    policy.description = [f"model {model_id} in-process (llama-cpp-python, {threads} thread(s), loaded in "
                          f"{backend.load_s:.1f} s; diagnostics: {home.runtime_log})", local.verdict]
    return policy


def n_ctx_warning(n_ctx: int, trained: int | None, name: str) -> str | None:
    """A warning when runtime.n_ctx asks for more context than the model was trained for."""
    if not trained or n_ctx <= trained:
        return None
    return (f"runtime.n_ctx={n_ctx} exceeds the {trained} tokens {name} was trained for (GGUF context_length): "
            f"each request and its KV cache are held to {trained} tokens; set runtime.n_ctx={trained} to say so")


def _served_entry(served: Any) -> dict[str, Any]:
    """The served model's whole /v1/models entry (what `served_by` reads: owned_by, vLLM's root and max_model_len)."""
    return next((e for e in served.entries if e.get("id") == served.model_id), {})


def _served_meta(served: Any) -> dict[str, Any]:
    """The `meta` of the served model's /v1/models entry (llama-server: n_ctx_train …)."""
    for entry in served.entries:
        if entry.get("id") == served.model_id and isinstance(entry.get("meta"), dict):
            return entry["meta"]
    return {}


def build_policy(config: ConwayConfig, home: Home) -> Policy:
    """The configured policy: the offline mock, or a real model behind llama.cpp or an HTTP server."""
    if config.policy.kind == MOCK:
        from conway.policies.mock import MockPolicy, load_script
        script = load_script(config.policy.mock_script) if config.policy.mock_script else None
        return MockPolicy(script)
    return build_model_policy(config, home)
