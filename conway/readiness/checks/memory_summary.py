"""Who writes memory's summary (docs/architecture.md#memory): the acting model, `memory.summariser`, or nobody.

A configured summariser is tried as `run` would meet it, without loading or asking it: an endpoint must answer
/v1/models and serve its model (its API key variable set), a local GGUF must be there and fit. Nothing else is
checked here: the acting model has its own checks.
"""

from __future__ import annotations

import os

from conway.config import ConwayConfig
from conway.errors import UserError
from conway.readiness.checks import Check

NAME = "memory summariser"
TIMEOUT_S = 10.0


def summariser_check(config: ConwayConfig) -> Check:
    mem, conf = config.memory, config.memory.summariser
    if not mem.summarise:
        return Check(NAME, "ok", "memory.summarise=false: past memory.max_chars, memory.md is truncated (marked)")
    if conf.endpoint:
        return _endpoint(config)
    if conf.model_path:
        return _local(config)
    if config.policy.kind == "mock":
        return Check(NAME, "ok", "the mock policy has no model: past memory.max_chars, memory.md is truncated (marked)")
    return Check(NAME, "ok", f"the acting model summarises memory.md past {mem.max_chars} characters")


def _endpoint(config: ConwayConfig) -> Check:
    from conway.policies.backends.discovery import discover
    from conway.policies.backends.http_client import OpenAIClient

    conf = config.memory.summariser
    key = os.environ.get(conf.api_key_env) if conf.api_key_env else None
    if conf.api_key_env and not key:
        return Check(NAME, "fail", f"memory.summariser.api_key_env names {conf.api_key_env}, which is not set")
    client = OpenAIClient(conf.endpoint or "", api_key=key, timeout_s=TIMEOUT_S, connect_timeout_s=TIMEOUT_S)
    try:
        served = discover(client, conf.model)
    except UserError as exc:
        return Check(NAME, "fail", f"memory.summariser: {exc}")
    finally:
        client.close()
    return Check(NAME, "ok", f"memory.summariser: {served.base_url} serves {served.model_id} ({served.server} "
                             "server)", {"model_id": served.model_id, "endpoint": served.base_url})


def _local(config: ConwayConfig) -> Check:
    from conway.runtime.resolver import resolve_local_model

    conf, rt = config.memory.summariser, config.runtime
    try:
        local = resolve_local_model(conf.model_path, None, n_ctx=conf.n_ctx, n_gpu_layers=rt.n_gpu_layers,
                                    headroom_gib=rt.headroom_gib, check_memory=rt.check_memory, need_vision=False)
    except UserError as exc:
        return Check(NAME, "fail", f"memory.summariser: {exc}")
    return Check(NAME, "ok", f"memory.summariser: {local.model.path} ({local.model.arch}), in-process; "
                             f"{local.verdict}", {"model_path": local.model.path})
