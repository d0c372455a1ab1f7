"""Is the configured model there? Shared by preflight, vision-check and acceptance-check.

`model_checks` reports (for preflight); `require_model` raises a UserError
(exit 1: a setup error) when the model cannot be reached at all, so a check
never spends its budget retrying a dead endpoint. Nothing here downloads
anything: it looks at an endpoint's `/models` and at local files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ConwayConfig
from ..errors import UserError
from ..home import Home
from .report import safe_endpoint

GGUF_MAGIC = b"GGUF"
PROBE_TIMEOUT_S = 5.0


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
    """mock | http | llama_cpp | none: where decisions would come from with this config."""
    p = config.policy
    if p.kind == "mock":
        return "mock"
    if p.backend == "http" or (p.backend == "auto" and p.endpoint):
        return "http"
    if p.backend == "llama_cpp" or (p.backend == "auto" and p.model_path):
        return "llama_cpp"
    return "none"


def served_models(endpoint: str, timeout_s: float = PROBE_TIMEOUT_S,
                  api_key: str | None = None) -> tuple[bool, list[str] | None, str]:
    """(reachable, served model ids or None when unknown, detail). Never raises for network trouble."""
    import httpx

    url = endpoint.rstrip("/") + "/models"
    shown = safe_endpoint(url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(url, timeout=timeout_s, headers=headers)
    except httpx.TimeoutException:
        return False, None, f"{shown} did not answer within {timeout_s:g} s"
    except (httpx.HTTPError, OSError, ValueError) as exc:
        return False, None, f"{shown} is not reachable ({type(exc).__name__}: {exc})"
    if resp.status_code != 200:
        return True, None, f"{shown} answered HTTP {resp.status_code} (cannot list served models)"
    try:
        data = resp.json()
        ids = [str(m["id"]) for m in data.get("data", []) if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, TypeError, KeyError):
        return True, None, f"{shown} answered, but not with an OpenAI-style model list"
    return True, ids, f"{shown} serves {', '.join(ids) if ids else 'no models'}"


def _api_key(config: ConwayConfig) -> str | None:
    import os
    name = config.policy.api_key_env
    return os.environ.get(name) if name else None


def _gguf_problem(path_text: str | None, what: str) -> str | None:
    if not path_text:
        return f"no {what} configured"
    path = Path(path_text).expanduser()
    if not path.is_file():
        return f"{what} {path} does not exist"
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        return f"cannot read {what} {path}: {exc.strerror}"
    if magic != GGUF_MAGIC:
        return f"{what} {path} is not a GGUF file"
    return None


def _fit_check(config: ConwayConfig, home: Home) -> Check:
    """Memory fit by the runtime's resolver when present; a labelled rough estimate otherwise."""
    try:
        from ..runtime import resolver  # type: ignore[attr-defined]  # issue 3's resolver, when it lands
        estimate = getattr(resolver, "check_fit", None)
    except ImportError:
        estimate = None
    if estimate is not None:
        try:
            verdict = estimate(config)
        except UserError as exc:
            return Check("model fits", "fail", str(exc))
        ok = bool(getattr(verdict, "fits", True))
        return Check("model fits", "ok" if ok else "fail", str(getattr(verdict, "message", verdict)))
    import psutil
    sizes = [Path(p).expanduser().stat().st_size for p in (config.policy.model_path, config.policy.mmproj_path)
             if p and Path(p).expanduser().is_file()]
    need = sum(sizes) * 1.2 + 512 * 2**20
    have = psutil.virtual_memory().available
    detail = (f"rough estimate (files × 1.2 + 0.5 GiB; the runtime resolver is not available): "
              f"needs ≈{need / 2**30:.2f} GiB, {have / 2**30:.1f} GiB available")
    return Check("model fits", "ok" if need < have else "fail", detail)


def model_checks(config: ConwayConfig, home: Home) -> list[Check]:
    """Runtime/model readiness for preflight."""
    backend = effective_backend(config)
    p = config.policy
    if backend == "mock":
        return [Check("model", "ok", "mock policy: scripted decisions, no model or server needed")]
    if backend == "none":
        return [Check("model", "fail", "no model configured: set policy.endpoint (an OpenAI-compatible server) "
                      "or policy.model_path (+ policy.mmproj_path) for a local GGUF")]
    if backend == "http":
        assert p.endpoint
        reachable, ids, detail = served_models(p.endpoint, api_key=_api_key(config))
        checks = [Check("endpoint reachable", "ok" if reachable else "fail", detail)]
        if not reachable:
            return checks
        if ids is None:
            checks.append(Check("model served", "warn", "the endpoint does not list its models; "
                                f"{'configured model ' + p.model if p.model else 'no model id configured'}"))
        elif p.model:
            ok = p.model in ids
            checks.append(Check("model served", "ok" if ok else "fail",
                                f"{p.model} is served" if ok else
                                f"{p.model} is not served (served: {', '.join(ids) or 'none'})",
                                {"model_id": p.model, "served": ids}))
        elif len(ids) == 1:
            checks.append(Check("model served", "ok", f"the only served model, {ids[0]}, will be used",
                                {"model_id": ids[0], "served": ids}))
        else:
            checks.append(Check("model served", "fail",
                                f"the endpoint serves {len(ids)} models ({', '.join(ids) or 'none'}); "
                                "choose one with --model or policy.model", {"served": ids}))
        return checks
    # llama_cpp: local files
    checks = []
    problem = _gguf_problem(p.model_path, "model GGUF (policy.model_path)")
    checks.append(Check("model file", "fail" if problem else "ok", problem or f"{p.model_path} is a GGUF file"))
    problem = _gguf_problem(p.mmproj_path, "vision projector GGUF (policy.mmproj_path)")
    checks.append(Check("mmproj file", "fail" if problem else "ok",
                        problem or f"{p.mmproj_path} is a GGUF file"))
    if all(c.status == "ok" for c in checks):
        checks.append(_fit_check(config, home))
    return checks


def require_model(config: ConwayConfig, home: Home) -> None:
    """Raise UserError (exit 1) when the configured model cannot be reached or found at all."""
    backend = effective_backend(config)
    if backend == "mock":
        return
    failed = [c for c in model_checks(config, home) if c.status == "fail"]
    if failed:
        raise UserError("the configured model is not ready: " + "; ".join(c.detail for c in failed))
