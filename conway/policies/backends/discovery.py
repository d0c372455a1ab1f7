"""Which model an OpenAI-compatible endpoint serves: `/v1/models`, picked or refused with the list.

* One served model and no `--model`: that one.
* Several and no `--model`: refused, listing them (a served alias need not
  equal a Hugging Face repository id, so Conway never guesses).
* `--model` that is not served: refused, listing what is.
* Unreachable, not OpenAI-compatible, or refusing us: a `UserError` naming the URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conway.errors import UserError
from conway.policies.backends.http_client import EndpointError, OpenAIClient

__all__ = ["Served", "discover", "list_served", "server_kind", "endpoint_error_message"]


@dataclass
class Served:
    base_url: str
    model_id: str
    served: list[str]
    server: str
    """`llama-server`, `llama-cpp-python` or `unknown`."""
    entries: list[dict[str, Any]] = field(default_factory=list)


def server_said(kind: str | None) -> str:
    """The server program as a phrase: `llama-server`, `llama-cpp-python server`, `unknown server` (never
    "llama-server server")."""
    kind = kind or "unknown"
    return kind if kind.endswith("server") else f"{kind} server"


def server_kind(entries: list[dict[str, Any]]) -> str:
    """Guess the server program from /v1/models (llama-server says owned_by=llamacpp)."""
    owners = {str(e.get("owned_by", "")) for e in entries}
    if "llamacpp" in owners:
        return "llama-server"
    if owners == {"me"}:
        return "llama-cpp-python"
    return "unknown"


def endpoint_error_message(exc: EndpointError, base_url: str) -> str:
    text = str(exc)
    if exc.kind == "unreachable":
        return (f"cannot reach the model server at {base_url}: {text.split(': ', 1)[-1]}. "
                "Is it running and is the URL right? (Or let Conway run a local GGUF: policy.model_path=…)")
    if exc.kind == "timeout":
        return f"the model server at {base_url} did not answer in time: {text}"
    if exc.kind == "not-openai":
        return f"{base_url} is not an OpenAI-compatible server: {text}"
    if exc.status in (401, 403):
        return (f"the model server at {base_url} refused us (HTTP {exc.status}): set the API key in the "
                "environment variable that policy.api_key_env names")
    return f"the model server at {base_url} failed: {text}"


def list_served(client: OpenAIClient) -> list[dict[str, Any]]:
    try:
        return client.list_models()
    except EndpointError as exc:
        raise UserError(endpoint_error_message(exc, client.base_url)) from None


def discover(client: OpenAIClient, requested: str | None) -> Served:
    """Resolve the model id to use at this endpoint (UserError with the served list when ambiguous)."""
    entries = list_served(client)
    ids = [e["id"] for e in entries]
    kind = server_kind(entries)
    url = client.base_url
    if not ids:
        raise UserError(f"{url} serves no models (GET /models listed none)")
    if requested:
        if requested in ids:
            return Served(url, requested, ids, kind, entries)
        raise UserError(f"model {requested!r} is not served by {url}; it serves: {', '.join(ids)} "
                        "(pass one of these with --model)")
    if len(ids) == 1:
        return Served(url, ids[0], ids, kind, entries)
    raise UserError(f"{url} serves {len(ids)} models; choose one with --model ID: {', '.join(ids)}")


# --- `conway models` ------------------------------------------------------------------------


def models_report(config: Any) -> dict[str, Any]:
    """What the configured endpoint serves and what the configured local GGUF files are.

    Never raises for a problem with a named file (it is listed under
    `problems`); an unreachable or non-OpenAI endpoint raises UserError.
    """
    from conway.config import api_key
    from conway.runtime.resolver import available_memory, check_fit, estimate_memory, read_gguf

    pol, rt = config.policy, config.runtime
    report: dict[str, Any] = {"endpoint": None, "served": [], "server": None, "local": [], "problems": [],
                              "memory": None}
    if pol.endpoint:
        try:
            client = OpenAIClient(pol.endpoint, api_key=api_key(config), timeout_s=pol.request_timeout_s)
        except ValueError as exc:
            raise UserError(f"--endpoint: {exc}") from None
        try:
            entries = list_served(client)
        finally:
            client.close()
        report["endpoint"] = client.base_url
        report["server"] = server_kind(entries)
        report["served"] = [{"id": e["id"], "owned_by": e.get("owned_by")} for e in entries]
    infos = {}
    for key, what in (("model_path", "model"), ("mmproj_path", "mmproj")):
        path = getattr(pol, key)
        if not path:
            continue
        entry: dict[str, Any] = {"setting": f"policy.{key}", "path": path}
        try:
            info = read_gguf(path, what)
            infos[what] = info
            entry.update(info.summary())
        except UserError as exc:
            entry["problem"] = str(exc)
            report["problems"].append(str(exc))
        report["local"].append(entry)
    if "model" in infos:
        slots = rt.parallel if not pol.endpoint and pol.backend == "http" else 1  # a llama-server Conway starts
        est = estimate_memory(infos["model"], infos.get("mmproj"), rt.n_ctx, slots)
        avail = available_memory(rt.n_gpu_layers)
        try:
            verdict = check_fit(est, avail, rt.headroom_gib, "the local model")
        except UserError as exc:
            verdict = str(exc)
            report["problems"].append(verdict)
        report["memory"] = {"estimate_bytes": est.total, "available_bytes": avail.bytes, "where": avail.where,
                            "verdict": verdict}
    return report


def render_models(report: dict[str, Any]) -> str:
    lines = []
    if report["endpoint"]:
        lines.append(f"endpoint {report['endpoint']} ({server_said(report['server'])}) serves:")
        lines += [f"  {m['id']}" + (f"  (owned by {m['owned_by']})" if m.get("owned_by") else "")
                  for m in report["served"]] or ["  (nothing)"]
    else:
        lines.append("endpoint: none configured (--endpoint URL or policy.endpoint)")
    if report["local"]:
        lines.append("local GGUF files named by the configuration:")
        for e in report["local"]:
            if "problem" in e:
                lines.append(f"  {e['setting']}: {e['path']}  PROBLEM: {e['problem']}")
            else:
                size = e.get("file_bytes", 0) / 1024**2
                lines.append(f"  {e['setting']}: {e['path']}  ({e.get('arch')}, {e.get('kind')}, {size:.1f} MiB"
                             + (f", {e['n_layer']} layers" if e.get("n_layer") else "")
                             + (f", trained context {e['context_length']} tokens" if e.get("context_length") else "")
                             + (", chat template" if e.get("has_chat_template") else "") + ")")
    else:
        lines.append("local GGUF files: none configured (policy.model_path, policy.mmproj_path)")
    if report["memory"]:
        lines.append(f"memory: {report['memory']['verdict']}")
    return "\n".join(lines)
