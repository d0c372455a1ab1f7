"""The text model that writes memory's summary: the acting model's backend, or `memory.summariser`.

A summary request is plain text for every family: one user turn (no system message, which some chat
templates drop or refuse), no image, no action grammar, no structured output, temperature 0. It goes
through the same backends as decisions (`http_client.HTTPBackend`, `llama_inprocess.LlamaInProcessBackend`),
so a stop aborts it the same way (socket shutdown, llama.cpp's abort callback).

`build_summariser` picks it from the config: `memory.summarise=false` → none; `memory.summariser.endpoint` or
`.model_path` → a model of its own (closed with the run); else the acting model when it is a real one (the
mock has no model to ask: memory is then truncated, marked).
"""

from __future__ import annotations

import os
from pathlib import Path

from conway.config import ConwayConfig
from conway.errors import UserError
from conway.policies.backends.backend import Backend, StructuredSpec
from conway.policies.base import ModelPolicy
from conway.policies.window import FALLBACK_CHARS_PER_TOKEN, TEMPLATE_MARGIN_TOKENS
from conway.protocols import ContextExceeded, Policy, TextAnswer, TextModel
from conway.store.home import Home

__all__ = ["BackendText", "build_summariser"]


class BackendText(TextModel):
    """Plain-text completions from a backend; `owns`: close the backend with it (a summariser of its own)."""

    def __init__(self, backend: Backend, *, seed: int | None = None, owns: bool = False,
                 where: str = "memory.summariser"):
        self.backend = backend
        self.model_id = backend.model_id
        self.seed = seed
        self.owns = owns
        self.where = where

    def complete_text(self, prompt: str, max_tokens: int) -> TextAnswer:
        window = self.backend.context_window()
        if window is not None:  # refused before sending (a long memory.md of the owner's), as a decision would be
            counted = self.backend.count_tokens(prompt)
            n = counted if isinstance(counted, int) else int(len(prompt) / FALLBACK_CHARS_PER_TOKEN) + 1
            if n + max_tokens + TEMPLATE_MARGIN_TOKENS > window.n_ctx:
                raise ContextExceeded(n + max_tokens, window.n_ctx, f"the summary prompt needs ~{n} tokens and its "
                                      f"reply up to {max_tokens}, but {window.source} allows {window.n_ctx}")
        result = self.backend.complete([{"role": "user", "content": prompt}], mode="none", spec=StructuredSpec(),
                                       max_tokens=max_tokens, temperature=0.0, seed=self.seed)
        return TextAnswer(text=result.text, model_id=result.model or self.model_id,
                          finish_reason=result.finish_reason, usage=dict(result.usage))

    def close(self) -> None:
        if self.owns:
            self.backend.close()


def build_summariser(config: ConwayConfig, home: Home, policy: Policy) -> TextModel | None:
    """The summary's model for this run (None: memory is truncated, marked); UserError for a bad summariser."""
    mem = config.memory
    if not mem.summarise:
        return None
    conf = mem.summariser
    try:
        if conf.endpoint:
            return _endpoint(config)
        if conf.model_path:
            return _in_process(config, home)
    except UserError as exc:  # say which model it is: the acting one's messages name policy.*
        raise UserError(f"memory.summariser: {exc}".replace("policy.model_path", "memory.summariser.model_path")) \
            from None
    if isinstance(policy, ModelPolicy):
        return BackendText(policy.backend, seed=config.policy.seed, where="the acting model")
    return None


def _endpoint(config: ConwayConfig) -> TextModel:
    from conway.policies.backends.discovery import discover
    from conway.policies.backends.http_client import HTTPBackend, OpenAIClient

    conf = config.memory.summariser
    key = None
    if conf.api_key_env:
        key = os.environ.get(conf.api_key_env)
        if not key:
            raise UserError(f"api_key_env names {conf.api_key_env}, which is not set in the environment")
    client = OpenAIClient(conf.endpoint or "", api_key=key, timeout_s=config.memory.summary_timeout_s)
    try:
        served = discover(client, conf.model)
    except BaseException:
        client.close()
        raise
    backend = HTTPBackend(client, served.model_id, server=served.server,
                          request_timeout_s=config.memory.summary_timeout_s)
    return BackendText(backend, seed=config.policy.seed, owns=True, where="memory.summariser")


def _in_process(config: ConwayConfig, home: Home) -> TextModel:
    from conway.policies.backends.llama_inprocess import LlamaInProcessBackend
    from conway.runtime.resolver import resolve_local_model
    from conway.runtime.server import default_threads

    conf, rt = config.memory.summariser, config.runtime
    local = resolve_local_model(conf.model_path, None, n_ctx=conf.n_ctx, n_gpu_layers=rt.n_gpu_layers,
                                headroom_gib=rt.headroom_gib, check_memory=rt.check_memory, need_vision=False)
    threads = conf.n_threads or default_threads(rt.n_threads)
    backend = LlamaInProcessBackend(local.model.path, None, model_id=conf.model or Path(local.model.path).stem,
                                    n_ctx=local.estimate.n_ctx, n_threads=threads, n_gpu_layers=rt.n_gpu_layers,
                                    omp_wait_policy=rt.omp_wait_policy, seed=config.policy.seed,
                                    log_path=home.runtime_log, prompt_cache=False)
    return BackendText(backend, seed=config.policy.seed, owns=True, where="memory.summariser")
