"""In-process llama.cpp through llama-cpp-python: `llama_cpp.Llama` with a multimodal chat handler.

The embedded default for a local GGUF + mmproj: no server, no port. The
vision handler is llama-cpp-python's `MTMDChatHandler` (it renders the GGUF's
own chat template and feeds the image through libmtmd) unless
`runtime.chat_handler` names a family handler (`qwen2.5-vl`, `llava-1-5` …).
A model without a projector runs text-only with `runtime.chat_format` (e.g.
`gemma`): images are then left out of the prompt.

`OMP_WAIT_POLICY=PASSIVE` is set before llama.cpp is first loaded (idle OpenMP
threads otherwise spin; measured 10x slower on a busy 2-core machine) and the
thread counts are explicit. llama.cpp and libmtmd print diagnostics on the
process's stderr even when asked not to: while loading, file descriptor 2 is
captured into the home's `llama-runtime.log` (`conway.runtime.runtime_log`:
filtered, redacted, capped, 0600); while deciding it is discarded (libmtmd's
`add_text:` lines print the whole prompt).

Per decision the backend records timings: image encode (libmtmd's vision
encoder), prefill (text and image embeddings; the image's share separately),
decode, the rest (grammar sampling, template, Python), time to first token,
and how many prompt tokens were evaluated vs reused.

Prompt cache: llama-cpp-python 0.3.36's vision handlers clear the KV cache on
every request. With a vision handler this backend evaluates the prompt itself
through `llama_prompt_cache.MtmdPromptCache` (the handler's template and
libmtmd's tokenizer, the longest common prefix with the KV cache kept, only
the tail evaluated) and then samples with `Llama.create_completion`;
`runtime.prompt_cache=false` evaluates every prompt in full. Text-only models
go through `create_chat_completion`, whose own prefix matching reuses the cache.
Structured output: a GBNF `LlamaGrammar`, or a JSON schema via
`response_format: json_object` (OpenAI's `json_schema` is ignored in-process).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

from conway.cancel import Cancel, DecisionAborted, current_cancel
from conway.errors import UserError
from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.policies.backends.llama_prompt_cache import MtmdPromptCache
from conway.protocols import ContextExceeded, ContextWindow, PolicyError
from conway.runtime.runtime_log import MAX_BYTES, RuntimeLog

__all__ = ["LlamaInProcessBackend", "HANDLERS", "prepare_llama_env", "quiet_stderr"]

HANDLERS = {
    "auto": "MTMDChatHandler",
    "mtmd": "MTMDChatHandler",
    "qwen2.5-vl": "Qwen25VLChatHandler",
    "llava-1-5": "Llava15ChatHandler",
    "llava-1-6": "Llava16ChatHandler",
    "minicpm-v-2.6": "MiniCPMv26ChatHandler",
    "gemma4": "Gemma4ChatHandler",
    "moondream": "MoondreamChatHandler",
    "nanollava": "NanoLlavaChatHandler",
}
"""runtime.chat_handler names → llama_cpp.llama_chat_format classes."""


def prepare_llama_env(omp_wait_policy: str) -> str | None:
    """Set OMP_WAIT_POLICY before llama.cpp loads; returns a note when it is too late to matter."""
    if omp_wait_policy == "unset":
        return None
    if "llama_cpp" in sys.modules:
        current = os.environ.get("OMP_WAIT_POLICY")
        if current != omp_wait_policy:
            return (f"llama.cpp was already loaded with OMP_WAIT_POLICY={current or 'unset'}; "
                    f"{omp_wait_policy} applies from the next process")
        return None
    os.environ["OMP_WAIT_POLICY"] = omp_wait_policy
    return None


@contextlib.contextmanager
def quiet_stderr(log: RuntimeLog | None, keep: bool = True) -> Iterator[None]:
    """Capture file descriptor 2 (C-level diagnostics) for the duration: into `log` (filtered, redacted,
    capped: `RuntimeLog`), or discarded when `keep` is false (while deciding libmtmd prints whole prompts).
    Without a log, fd 2 is left alone."""
    if log is None:
        yield
        return
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    saved = os.dup(2)
    try:
        with (tempfile.TemporaryFile() if keep else open(os.devnull, "wb")) as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                try:
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
                os.dup2(saved, 2)
                if keep:
                    sink.seek(0)
                    log.write(sink.read(MAX_BYTES))
    finally:
        os.close(saved)


class _TimedMtmd:
    """Stands in for the handler's `mtmd_cpp` module to time the vision encoder (best effort)."""

    def __init__(self, module: Any, perf: Any):
        self._module = module
        self._perf = perf
        self.image_ms = 0.0
        self.image_decode_ms = 0.0
        self.images = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def mtmd_helper_eval_chunk_single(self, mctx: Any, lctx: Any, *args: Any) -> Any:
        # llama.cpp books compute time into its perf counters only at a synchronize: settle the text
        # before the image first, and the image's own decode right after, so each lands in its place.
        before = self._perf(lctx, sync=True)
        t0 = time.perf_counter()
        result = self._module.mtmd_helper_eval_chunk_single(mctx, lctx, *args)
        after = self._perf(lctx, sync=True)
        wall = (time.perf_counter() - t0) * 1000.0
        decoded = after - before
        self.image_decode_ms += decoded
        self.image_ms += max(0.0, wall - decoded)
        self.images += 1
        return result

    def reset(self) -> None:
        self.image_ms = self.image_decode_ms = 0.0
        self.images = 0


_EXCEEDS = (re.compile(r"Prompt exceeds n_ctx: (\d+) > (\d+)"),
            re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)"))


def context_exceeded_from(message: str) -> ContextExceeded | None:
    """llama-cpp-python's length refusals ("Prompt exceeds n_ctx: N > M" …) as ContextExceeded."""
    for pattern in _EXCEEDS:
        match = pattern.search(message)
        if match:
            return ContextExceeded(int(match.group(1)), int(match.group(2)), "llama.cpp refused the prompt")
    return None


def _failure(exc: Exception, cancel: Cancel | None) -> Exception:
    """What a llama.cpp error during a completion means: a stop's abort, the context exceeded, or a failure."""
    if cancel is not None and cancel.is_set():  # our abort callback ended llama_decode
        return DecisionAborted(f"llama.cpp decision aborted ({cancel.reason})")
    exceeded = context_exceeded_from(str(exc))
    if exceeded is not None:
        return exceeded
    return PolicyError(f"llama.cpp failed on this request: {exc}")


_LLAMA_NAMES = {"repetition_penalty": "repeat_penalty"}
"""Sampling parameters llama-cpp-python names otherwise than an OpenAI-compatible request."""
_LLAMA_KNOBS = {"top_p", "top_k", "min_p", "typical_p", "frequency_penalty", "presence_penalty", "repeat_penalty"}
"""The sampling parameters llama-cpp-python takes; a server's own fields (DashScope's `vl_high_resolution_images`)
mean nothing in process."""


class LlamaInProcessBackend(Backend):
    """A GGUF model (+ mmproj) loaded in this process."""

    kind = "llama_cpp"

    def __init__(self, model_path: str, mmproj_path: str | None, *, model_id: str | None = None, n_ctx: int = 8192,
                 n_threads: int = 1, n_threads_batch: int | None = None, n_gpu_layers: int = 0,
                 chat_handler: str = "auto", chat_format: str | None = None, omp_wait_policy: str = "PASSIVE",
                 seed: int | None = None, log_path: Path | None = None, prompt_cache: bool = True,
                 flash_attn: bool | None = None, encoder_flash_attn: bool = True,
                 kv_overrides: dict[str, int | float | bool | str] | None = None):
        self.note = prepare_llama_env(omp_wait_policy)
        try:
            import llama_cpp
            from llama_cpp import llama_chat_format
        except ImportError as exc:
            raise UserError(f"in-process inference needs llama-cpp-python (pip install -e '.[llama]'): {exc}") from None
        self._llama_cpp = llama_cpp
        self.model_id = model_id or Path(model_path).stem
        self.model_path = model_path
        self.mmproj_path = mmproj_path
        self.digest_cache: Path | None = None
        """Where model files' digests are kept between runs (the factory sets the home's)."""
        self.log_path = log_path
        self.log = RuntimeLog(log_path) if log_path is not None else None
        if self.log is not None:
            self.log.begin(f"conway loads {model_path} in-process (mmproj {mmproj_path}, n_ctx {n_ctx}, threads "
                           f"{n_threads}/{n_threads_batch or n_threads}, OMP_WAIT_POLICY="
                           f"{os.environ.get('OMP_WAIT_POLICY', 'unset')})")
        self.n_threads = n_threads
        # Flash attention (None: the rule measured in docs/measurements.md): the language model on CPU
        # decodes ~3x slower with it and prefills no faster, so only offloaded layers get it; the vision
        # encoder always does (2.6x faster on CPU; llama-server's default, auto, turns it on for both).
        self.flash_attn = bool(n_gpu_layers) if flash_attn is None else flash_attn
        self._timed: _TimedMtmd | None = None
        handler = self._chat_handler(llama_chat_format, mmproj_path, chat_handler) if mmproj_path else None
        kwargs: dict[str, Any] = dict(model_path=str(model_path), n_ctx=n_ctx, n_threads=n_threads,
                                      n_threads_batch=n_threads_batch or n_threads,
                                      n_gpu_layers=-1 if n_gpu_layers == -1 else n_gpu_layers, verbose=False,
                                      flash_attn=self.flash_attn)
        if kv_overrides:
            kwargs["kv_overrides"] = dict(kv_overrides)
        if handler is not None:
            kwargs["chat_handler"] = handler
        elif chat_format:
            kwargs["chat_format"] = chat_format
        if seed is not None:
            kwargs["seed"] = seed
        self._load(kwargs, handler, encoder_flash_attn, prompt_cache)
        self._lock = threading.Lock()  # one llama.cpp context: callers from several threads take turns
        self._cancel: Cancel | None = None
        self._abort_cb = None
        set_abort = getattr(llama_cpp, "llama_set_abort_callback", None)
        if set_abort is not None:  # a stop ends llama_decode (the prompt, the next token) at its next graph node
            self._abort_cb = llama_cpp.ggml_abort_callback(self._should_abort)
            set_abort(self.llm._ctx.ctx, self._abort_cb, None)
        atexit.register(self.close)  # free llama.cpp before interpreter teardown (else noisy __del__)

    def _chat_handler(self, llama_chat_format: Any, mmproj_path: str, chat_handler: str) -> Any:
        """The vision chat handler `runtime.chat_handler` names, its projector loaded; libmtmd's image calls timed
        through it (`_TimedMtmd`) where the handler exposes them."""
        cls_name = HANDLERS.get(chat_handler)
        if cls_name is None:
            raise UserError(f"runtime.chat_handler={chat_handler!r} is unknown; known: {', '.join(HANDLERS)}")
        cls = getattr(llama_chat_format, cls_name, None)
        if cls is None:
            raise UserError(f"this llama-cpp-python has no {cls_name} (runtime.chat_handler={chat_handler})")
        with quiet_stderr(self.log):
            handler = cls(clip_model_path=str(mmproj_path), verbose=False)
        if hasattr(handler, "_mtmd_cpp"):
            self._timed = _TimedMtmd(handler._mtmd_cpp, self._p_eval_ms)
            handler._mtmd_cpp = self._timed
        return handler

    def _load(self, kwargs: dict[str, Any], handler: Any, encoder_flash_attn: bool, prompt_cache: bool) -> None:
        """Load the model (and start the vision encoder); a UserError with the log's last lines when it fails."""
        t0 = time.perf_counter()
        try:
            with quiet_stderr(self.log):
                self.llm = self._llama_cpp.Llama(**kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            tail = ""
            if self.log is not None:
                tail = f"; last lines of {self.log_path}:\n{self.log.tail(15)}"
            raise UserError(f"llama.cpp could not load {self.model_path}: {exc}{tail}") from None
        if handler is not None and encoder_flash_attn and hasattr(handler, "_init_mtmd_context"):
            self._init_encoder(handler)
        self.load_s = time.perf_counter() - t0
        self.has_vision = handler is not None
        self.prompt: MtmdPromptCache | None = None
        if handler is not None and MtmdPromptCache.supports(handler):
            self.prompt = MtmdPromptCache(self.llm, handler, reuse=prompt_cache)

    def _init_encoder(self, handler: Any) -> None:
        """Start libmtmd's vision encoder now, with flash attention whatever the language model uses.

        The handler starts it on first use with the model's own switch (`context_params` is only read
        by then: the language model's context exists already and keeps its own)."""
        lc, params = self._llama_cpp, self.llm.context_params
        saved = params.flash_attn_type
        params.flash_attn_type = lc.LLAMA_FLASH_ATTN_TYPE_ENABLED
        try:
            with quiet_stderr(self.log):
                handler._init_mtmd_context(self.llm)
        except ValueError as exc:
            self.llm.close()
            raise UserError(f"libmtmd could not load the projector {self.mmproj_path}: {exc}") from None
        finally:
            params.flash_attn_type = saved

    # -- cancellation -------------------------------------------------------------------

    def _should_abort(self, _data: Any) -> bool:
        """llama.cpp's abort callback, polled during every llama_decode: the prompt's and each new token's."""
        cancel = self._cancel
        return cancel is not None and cancel.is_set()

    # -- perf counters ------------------------------------------------------------------

    def _perf(self) -> Any:
        return self._llama_cpp.llama_perf_context(self.llm._ctx.ctx)

    def _p_eval_ms(self, lctx: Any, sync: bool = False) -> float:
        try:
            if sync:
                self._llama_cpp.llama_synchronize(lctx)
            return float(self._llama_cpp.llama_perf_context(lctx).t_p_eval_ms)
        except Exception:
            return 0.0

    # -- context ------------------------------------------------------------------------

    def served_by(self) -> dict[str, Any]:
        """llama-cpp-python in this process: its version, the model and projector files (digest, quantisation)
        and the context one request gets (`served_by.py`)."""
        from conway.policies.backends.served_by import file_facts

        out: dict[str, Any] = {"server": "llama-cpp-python (in process)",
                               "version": str(getattr(self._llama_cpp, "__version__", "?")), "model_id": self.model_id}
        for key, path in (("model_file", self.model_path), ("projector_file", self.mmproj_path)):
            facts = file_facts(path, self.digest_cache)
            if facts is not None:
                out[key] = facts
        window = self.context_window()
        out["context"] = {"n_ctx": window.n_ctx, "source": window.source}
        out["vision"] = self.mmproj_path is not None
        return out

    def context_window(self) -> Any:
        """This process's n_ctx, held to the model's trained context (llama.cpp would run past it, badly)."""
        n_ctx = int(self.llm.n_ctx())
        try:
            train = int(self.llm._model.n_ctx_train())
        except Exception:
            train = None
        if train and train < n_ctx:
            return ContextWindow(train, f"the model's trained context (n_ctx_train; runtime.n_ctx is {n_ctx})",
                                 train)
        if train and train == n_ctx:  # Conway loads a runtime.n_ctx past it held to it (conway.runtime.resolver)
            return ContextWindow(train, "the model's trained context (n_ctx_train)", train)
        return ContextWindow(n_ctx, "llama.cpp n_ctx (in-process)", train)

    def count_tokens(self, text: str) -> int | None:
        """Exact token count with the model's own tokenizer."""
        try:
            return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        except Exception:
            return None

    # -- backend protocol -----------------------------------------------------------------

    def structured_support(self) -> list[str]:
        return ["grammar", "json_object"]

    def _messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.has_vision:
            return messages
        # Text-only model: flatten content parts and leave images out. The system text moves to the
        # front of the first user turn (chat formats like gemma drop system messages), which keeps the
        # stable part first.
        def flat(content: Any) -> Any:
            if isinstance(content, list):  # content parts (a family's trained layout sends its texts so)
                return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
            return content

        system = "\n\n".join(flat(m["content"]) for m in messages if m.get("role") == "system" and m.get("content"))
        out = []
        for m in messages:
            if m.get("role") == "system":
                continue
            content = flat(m.get("content"))
            if system and m.get("role") == "user":
                content, system = f"{system}\n\n{content}", ""
            out.append({**m, "content": content})
        return out

    def complete(self, messages: list[dict[str, Any]], *, mode: str, spec: Any, max_tokens: int | None,
                 temperature: float | None, seed: int | None,
                 sampling: Mapping[str, Any] | None = None) -> ChatResult:
        """`temperature` None: llama.cpp's default; `max_tokens` None: until the model stops or the context ends;
        `sampling`: `top_p`, `frequency_penalty` (llama.cpp's `frequency_penalty` and the OpenAI one are the same
        rule); a server's request fields (vLLM's `structured_outputs`, not numbers) mean nothing here."""
        named = {_LLAMA_NAMES.get(k, k): v for k, v in (sampling or {}).items()}
        knobs = {**({"temperature": temperature} if temperature is not None else {}),
                 **{k: v for k, v in named.items() if k in _LLAMA_KNOBS and isinstance(v, (int, float))
                    and not isinstance(v, bool)}}
        if seed is None and isinstance(named.get("seed"), int):  # a family's own seed (GUI-Owl's DashScope path)
            seed = named["seed"]
        if "top_k" in knobs:
            knobs["top_k"] = int(knobs["top_k"])
        with self._lock:
            return self._complete(messages, mode=mode, spec=spec, max_tokens=max_tokens, knobs=knobs, seed=seed)

    def _complete(self, messages: list[dict[str, Any]], *, mode: str, spec: Any, max_tokens: int | None,
                  knobs: dict[str, float], seed: int | None) -> ChatResult:
        grammar, response_format = self._output_grammar(mode, spec)
        if self._timed is not None:
            self._timed.reset()
        cancel = current_cancel()
        if cancel is not None:
            cancel.check()
        self._llama_cpp.llama_perf_context_reset(self.llm._ctx.ctx)
        first_token: list[float] = []

        def first_token_clock(_ids: Any, _logits: Any) -> bool:
            if not first_token:
                first_token.append(time.perf_counter())
            return False

        t0 = time.perf_counter()
        self._cancel = cancel
        try:
            with quiet_stderr(self.log, keep=False):  # libmtmd's add_text lines print the whole prompt
                out, text, run = self._generate(messages, grammar, response_format, max_tokens, knobs, seed,
                                                first_token_clock)
        except (ValueError, RuntimeError) as exc:  # e.g. "Prompt exceeds n_ctx"
            raise _failure(exc, cancel) from None
        finally:
            self._cancel = None
        if cancel is not None:
            cancel.check()  # the stop came during the last token
        latency = time.perf_counter() - t0
        return self._result(out, text, run, latency, first_token[0] - t0 if first_token else None)

    def _output_grammar(self, mode: str, spec: Any) -> tuple[Any, dict[str, Any] | None]:
        """(llama.cpp grammar, chat `response_format`) for the structured output `mode` asks for."""
        grammar = None
        response_format = None
        try:
            if mode == "grammar" and spec.grammar:
                with quiet_stderr(self.log):
                    grammar = self._llama_cpp.LlamaGrammar.from_string(spec.grammar, verbose=False)
            elif mode == "json_object" and spec.schema:
                response_format = {"type": "json_object", "schema": spec.schema}
                if self.prompt is not None:
                    from llama_cpp.llama_chat_format import _grammar_for_response_format
                    with quiet_stderr(self.log):
                        grammar = _grammar_for_response_format(response_format)  # what the chat handler does
        except (ValueError, RuntimeError) as exc:
            raise PolicyError(f"llama.cpp rejected the output grammar: {exc}") from None
        return grammar, response_format

    def _generate(self, messages: list[dict[str, Any]], grammar: Any, response_format: dict[str, Any] | None,
                  max_tokens: int | None, knobs: dict[str, float], seed: int | None,
                  first_token_clock: Any) -> tuple[dict[str, Any], str, Any]:
        """(llama.cpp's output, its text, the prompt cache's run or None): through the prompt cache when there is
        one (the first token timed), else through llama-cpp-python's chat completion."""
        if self.prompt is not None:
            run = self.prompt.prepare(messages)
            out = self.llm.create_completion(
                prompt=run.prompt_ids, max_tokens=max_tokens, seed=seed, **knobs,
                grammar=grammar, stopping_criteria=self._llama_cpp.StoppingCriteriaList([first_token_clock]))
            return out, out["choices"][0].get("text") or "", run
        kwargs: dict[str, Any] = dict(messages=self._messages(messages), max_tokens=max_tokens,
                                      grammar=grammar, **knobs)
        if response_format is not None:
            kwargs["response_format"] = response_format
        if seed is not None:
            kwargs["seed"] = seed
        out = self.llm.create_chat_completion(**kwargs)
        return out, out["choices"][0]["message"].get("content") or "", None

    def _result(self, out: dict[str, Any], text: str, run: Any, latency: float,
                ttft_s: float | None) -> ChatResult:
        """The answer with its usage and timings, read from llama.cpp's perf counters (and the prompt cache's run)."""
        from conway.policies.parsed import split_reasoning

        perf = self._perf()
        choice = out["choices"][0]
        text, reasoning = split_reasoning(text)
        usage = {k: v for k, v in (out.get("usage") or {}).items() if isinstance(v, int)}
        timings: dict[str, Any] = {
            "total_ms": round(latency * 1000, 3),
            "prefill_ms": round(perf.t_p_eval_ms, 3),
            "prompt_evaluated_n": int(perf.n_p_eval),
            "decode_ms": round(perf.t_eval_ms, 3),
            "predicted_n": int(perf.n_eval),
        }
        image_ms = self._image_timings(run, usage, timings)
        if ttft_s is not None:
            timings["ttft_ms"] = round(ttft_s * 1000, 3)
        # grammar-constrained sampling, detokenizing, the chat template and Python around them
        timings["other_ms"] = round(max(0.0, latency * 1000 - image_ms - perf.t_p_eval_ms - perf.t_eval_ms), 3)
        if run is None:
            prompt_tokens = usage.get("prompt_tokens")
            if isinstance(prompt_tokens, int):
                usage["cached_tokens"] = max(0, prompt_tokens - int(perf.n_p_eval))
        return ChatResult(text=text.strip(), reasoning=reasoning, finish_reason=choice.get("finish_reason"),
                          model=self.model_id, usage=usage, timings=timings, latency_s=latency, raw=out)

    def _image_timings(self, run: Any, usage: dict[str, Any], timings: dict[str, Any]) -> float:
        """Adds the prompt cache's token counts and the images' encode and decode times; returns the encode ms."""
        image_ms = 0.0
        if run is not None:
            # text + image tokens as llama-server counts them; what stayed in the KV cache is "cached"
            usage["prompt_tokens"] = run.prompt_tokens
            usage["cached_tokens"] = run.reused_tokens
            usage["total_tokens"] = run.prompt_tokens + usage.get("completion_tokens", 0)
            timings["prompt_evaluated_n"] = run.evaluated_tokens
            timings["prompt_cache"] = run.reuse
            timings.update(run.timings)
            if run.images_encoded or run.images_from_memory:
                image_ms = run.image_encode_ms
                timings["image_encode_ms"] = round(image_ms, 3)
                timings["prefill_image_ms"] = round(run.image_decode_ms, 3)
                if run.images_from_memory:
                    timings["images_from_memory"] = run.images_from_memory
        elif self._timed is not None and self._timed.images:
            image_ms = self._timed.image_ms  # libmtmd's vision encoder (the embeddings' decode is prefill)
            timings["image_encode_ms"] = round(image_ms, 3)
            timings["prefill_image_ms"] = round(self._timed.image_decode_ms, 3)
        return image_ms

    def close(self) -> None:
        atexit.unregister(self.close)
        # getattr: close() also runs on an instance whose __init__ failed before these were set
        with getattr(self, "_lock", threading.Lock()):
            llm = getattr(self, "llm", None)
            if llm is not None:
                with quiet_stderr(getattr(self, "log", None)):
                    llm.close()
                self.llm = None  # type: ignore[assignment]
