"""Is the configured model there? Runtime/model readiness for preflight.

Uses the model layer's own pieces, so preflight and `conway run` agree:
`policies.factory.backend_choice` (which backend), `policies.discovery`
(`/v1/models`: reachable, serving the configured model), `runtime.resolver`
(local GGUF + mmproj present and fitting, estimates labelled as such) and
`runtime.server.find_program` (a server program Conway could start). Nothing
here downloads anything or starts a model.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ConwayConfig
from ..errors import UserError
from ..home import Home

PROBE_TIMEOUT_S = 10.0


@dataclass
class Check:
    """One named readiness check: status ok | warn | fail | not_checked, and what was observed."""

    check: str
    status: str
    detail: str
    data: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "detail": self.detail,
                **({"data": self.data} if self.data else {})}


def effective_backend(config: ConwayConfig) -> str:
    """mock | endpoint | server | inprocess | none: where decisions would come from with this config."""
    if config.policy.kind == "mock":
        return "mock"
    from ..policies.factory import backend_choice
    try:
        return backend_choice(config)
    except UserError:
        return "none"


def model_checks(config: ConwayConfig, home: Home) -> list[Check]:
    """Runtime/model readiness: the endpoint serves the model, or the local files are there and fit."""
    p = config.policy
    if p.kind == "mock":
        return [Check("model", "ok", "mock policy: scripted decisions, no model or server needed",
                      {"model_id": "conway-mock"})]
    from ..config import api_key
    from ..policies.factory import backend_choice
    try:
        choice = backend_choice(config)
    except UserError as exc:
        return [Check("model", "fail", str(exc))]
    if choice == "endpoint":
        from ..policies.http_client import OpenAIClient
        from ..policies.discovery import discover
        try:
            client = OpenAIClient(p.endpoint or "", api_key=api_key(config), timeout_s=PROBE_TIMEOUT_S,
                                  connect_timeout_s=PROBE_TIMEOUT_S)
        except (ValueError, UserError) as exc:
            return [Check("endpoint", "fail", f"policy.endpoint: {exc}")]
        try:
            served = discover(client, p.model)
        except UserError as exc:
            return [Check("endpoint serves the model", "fail", str(exc))]
        finally:
            client.close()
        return [Check("endpoint serves the model", "ok",
                      f"{served.base_url} serves {served.model_id} ({served.server} server; "
                      f"served: {', '.join(served.served)})",
                      {"model_id": served.model_id, "served": served.served, "server": served.server})]
    from ..runtime.resolver import resolve_local_model
    rt = config.runtime
    checks = []
    try:
        local = resolve_local_model(p.model_path, p.mmproj_path, n_ctx=rt.n_ctx, n_gpu_layers=rt.n_gpu_layers,
                                    headroom_gib=rt.headroom_gib, check_memory=rt.check_memory)
    except UserError as exc:
        return [Check("local model", "fail", str(exc))]
    model_id = p.model or Path(local.model.path).stem
    checks.append(Check("local model", "ok", f"{local.model.path} ({local.model.arch})"
                        + (f" with projector {local.projector.path}" if local.projector else ""),
                        {"model_id": model_id}))
    checks.append(Check("model fits", "ok", local.verdict))
    if choice == "server":
        from ..runtime.server import find_program
        try:
            prog = find_program(rt)
            checks.append(Check("server program", "ok", f"{prog.kind} ({prog.where}) would be started on "
                                f"{rt.host}"))
        except UserError as exc:
            checks.append(Check("server program", "fail", str(exc)))
    elif importlib.util.find_spec("llama_cpp") is None:
        checks.append(Check("llama-cpp-python", "fail", "in-process inference needs llama-cpp-python: "
                            "pip install -e '.[llama]' (or run a server and give --endpoint)"))
    else:
        checks.append(Check("llama-cpp-python", "ok", "importable (the model loads in this process)"))
    return checks
