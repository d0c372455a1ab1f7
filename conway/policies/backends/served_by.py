"""What served the model, as the server (or the model file) says it: recorded with every report and session.

A published score that does not reproduce is often the serving stack's doing (another server version, another
quantisation, a context or projector unlike the authors'), so a number is only comparable with what served it.
Each fact is taken where it is stated, never guessed: llama-server's `/props` (`build_info`, `model_path`, the
per-slot `n_ctx`, `modalities`) and its `/v1/models` entry (`meta`: trained context, parameters, size); vLLM's
`/v1/models` entry (`root`, `max_model_len`) and `/version`; llama-cpp-python's version in process; and, for a
model file on this machine (in process, a server Conway started, or a server whose `/props` names a readable
file), the file's size, sha256 and its GGUF's quantisation (`general.file_type`). What no source states is left
out, not filled in.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["file_facts", "http_served_by", "file_digest", "served_line"]

_DIGESTS: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()
_CHUNK = 4 << 20


def file_digest(path: str | os.PathLike[str], cache: Path | None = None) -> str:
    """The sha256 of a file, hashed once for an unchanged file (path, size, mtime): in this process, and across
    runs through `cache` (a JSON file in Conway's home, `model-digests.json`), so a multi-GiB model is read once,
    not at every run's start (hashing 4 GiB takes seconds)."""
    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    name = "|".join(map(str, key))
    with _LOCK:
        if key in _DIGESTS:
            return _DIGESTS[key]
    known = _read_cache(cache)
    if isinstance(known.get(name), str):
        with _LOCK:
            _DIGESTS[key] = known[name]
        return known[name]
    h = hashlib.sha256()
    with p.open("rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    with _LOCK:
        _DIGESTS[key] = h.hexdigest()
    _write_cache(cache, {**known, name: _DIGESTS[key]})
    return _DIGESTS[key]


def _read_cache(cache: Path | None) -> dict[str, Any]:
    if cache is None:
        return {}
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: hashed again and written anew
    return data if isinstance(data, dict) else {}


def _write_cache(cache: Path | None, data: dict[str, Any]) -> None:
    """Written whole and renamed into place (a reader never sees half of it); a home that cannot take it only
    means the next run hashes again."""
    if cache is None:
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=".digests-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=0, sort_keys=True)
        os.replace(tmp, cache)
    except OSError:
        pass


def _quantisation(path: Path) -> str | None:
    """The GGUF's `general.file_type` by llama.cpp's name (`Q4_K_M`, `F16` …); None when it does not say."""
    try:
        from gguf import LlamaFileType  # type: ignore[import-untyped]

        from conway.runtime.resolver import gguf_metadata

        value = gguf_metadata(path).get("general.file_type")
        if not isinstance(value, int):
            return None
        return LlamaFileType(value).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except Exception:  # not a GGUF, an unknown file type, a file being replaced: the fact is not stated
        return None


def file_facts(path: str | None, cache: Path | None = None) -> dict[str, Any] | None:
    """A model or projector file on this machine: path, bytes, sha256, quantisation; None when there is none
    readable here (a remote server's file is named by its path alone, elsewhere)."""
    if not path:
        return None
    p = Path(path).expanduser()
    if not p.is_file():
        return None
    try:
        out: dict[str, Any] = {"path": str(p), "bytes": p.stat().st_size, "sha256": file_digest(p, cache)}
    except OSError:
        return None
    quant = _quantisation(p)
    if quant:
        out["quantisation"] = quant
    return out


def http_served_by(backend: Any, local: dict[str, str | None] | None = None,
                   cache: Path | None = None) -> dict[str, Any]:
    """What an OpenAI-compatible server says served `backend.model_id`: the program and its version or build,
    the model file (and, where it is readable here, its digest and quantisation), the context one request gets,
    the trained context, and the projector. `local`: the files of a server Conway started itself."""
    local = local or {}
    props = backend.props() if backend.server == "llama-server" else {}
    entry = backend.model_entry or {}
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    out: dict[str, Any] = {"server": backend.server if backend.server != "unknown" else
                           (entry.get("owned_by") or "unknown"), "model_id": backend.model_id}
    if isinstance(props.get("build_info"), str):
        out["build"] = props["build_info"]
    if out["server"] == "vllm" or entry.get("owned_by") == "vllm":
        version = backend.client.get_json("/version")
        if isinstance(version, dict) and isinstance(version.get("version"), str):
            out["version"] = version["version"]
    named = props.get("model_path") if isinstance(props.get("model_path"), str) else entry.get("root")
    model = file_facts(local.get("model") or named, cache)
    if model is not None:
        out["model_file"] = model
    elif isinstance(named, str):
        out["model_file"] = {"path": named}  # on the server's machine: no digest can be taken here
    projector = file_facts(local.get("projector"), cache)
    if projector is not None:
        out["projector_file"] = projector
    window = backend.context_window()
    if window is not None:
        out["context"] = {"n_ctx": window.n_ctx, "source": window.source}
    if isinstance(entry.get("max_model_len"), int):
        out.setdefault("context", {"n_ctx": entry["max_model_len"], "source": "vLLM /v1/models max_model_len"})
    for key in ("n_ctx_train", "n_params", "size"):
        if isinstance(meta.get(key), int):
            out.setdefault("model", {})[key] = meta[key]
    vision = backend.takes_images()
    if vision is not None:
        out["vision"] = vision
    return out


def served_line(said: dict[str, Any]) -> str:
    """`served_by` as one line for the console (`conway models --conformance`)."""
    parts = [str(said.get("server", "unknown")) + "".join(f" {k} {said[k]}" for k in ("version", "build") if k in said)]
    model = said.get("model_file") or {}
    if model:
        extra = [model[k] if k == "quantisation" else f"sha256 {model[k][:12]}…"
                 for k in ("quantisation", "sha256") if k in model]
        parts.append(f"model file {model['path']}" + (f" ({', '.join(extra)})" if extra else ""))
    if "projector_file" in said:
        parts.append(f"projector {said['projector_file']['path']}")
    if "context" in said:
        parts.append(f"context {said['context']['n_ctx']} ({said['context']['source']})")
    if "vision" in said:
        parts.append("takes images" if said["vision"] else "takes NO images")
    return "; ".join(parts)
