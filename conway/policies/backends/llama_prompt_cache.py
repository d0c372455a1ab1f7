"""Prefix reuse for in-process llama.cpp with images: the KV cache survives between decisions.

llama-cpp-python's vision chat handlers clear the KV cache on every request,
so every decision re-evaluates the whole prompt. This layer does what
llama-server does with `cache_prompt`, with the library's own pieces (no fork):

1. render the messages with the vision handler's chat template (the GGUF's
   own for `MTMDChatHandler`, the family's `CHAT_FORMAT` for the
   `Llava15ChatHandler` family) exactly as the handler would;
2. tokenize text and images into libmtmd chunks (`mtmd_tokenize`);
3. compare the chunks, token by token and image by image (content digest),
   with what the KV cache holds, and keep the longest common prefix;
4. remove only the tail from the KV cache (`llama_memory_seq_rm` from the
   first differing position), evaluate the new text tokens (`Llama.eval`)
   and then the image (libmtmd's encoder; its output is kept, so an
   unchanged screenshot after changed text is decoded again but not
   re-encoded).

The cache is keyed by the model, the projector and the llama.cpp context it
was filled in; anything else (another context, a reset or a prompt evaluated
behind this layer's back, a prefix shorter than `MIN_REUSE_TOKENS`) falls
back to a full evaluation. With `reuse=False` every request is a full
evaluation through the same code, which is what the equality test compares.
"""

from __future__ import annotations

import ctypes
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = ["ImageSpan", "KVRecord", "PromptRun", "MtmdPromptCache", "reusable_prefix", "MIN_REUSE_TOKENS"]

MIN_REUSE_TOKENS = 16
"""A shorter common prefix (a chat template's header) is not worth keeping: start from an empty cache."""


@dataclass(frozen=True)
class ImageSpan:
    """An image in the prompt: what it showed and how much of the context it takes."""

    digest: str
    n_tokens: int
    n_pos: int
    """Positions it advances (fewer than tokens under Qwen-VL's M-RoPE)."""


Item = Union[int, ImageSpan]
"""One unit of the prompt: a text token id, or a whole image."""


def _tokens(item: Item) -> int:
    return item.n_tokens if isinstance(item, ImageSpan) else 1


def _positions(item: Item) -> int:
    return item.n_pos if isinstance(item, ImageSpan) else 1


@dataclass
class KVRecord:
    """What the KV cache holds after a prompt was evaluated (generated tokens beyond `end` are dropped next time)."""

    owner: tuple[Any, ...]
    items: list[Item]
    starts: list[int]
    """Position of each item."""
    end: int


def layout(items: list[Item]) -> tuple[list[int], int]:
    """Start position of every item and the position after the last."""
    starts, pos = [], 0
    for item in items:
        starts.append(pos)
        pos += _positions(item)
    return starts, pos


def reusable_prefix(record: KVRecord | None, owner: tuple[Any, ...], items: list[Item],
                    min_tokens: int = MIN_REUSE_TOKENS) -> tuple[int, str]:
    """(leading items of `items` whose KV entries can stay, why): 0 means evaluate everything."""
    if record is None:
        return 0, "cold"
    if record.owner != owner:
        return 0, "another model or context"
    n = 0
    for old, new in zip(record.items, items):
        if old != new:
            break
        n += 1
    if n == len(items) and n:
        n -= 1  # all of it is cached, but sampling needs the logits of the last item: evaluate it again
    if sum(_tokens(i) for i in items[:n]) < min_tokens:
        return 0, "no common prefix"
    return n, "prefix"


@dataclass
class PromptRun:
    """One prompt made ready for sampling: the KV cache holds it and the last logits are fresh."""

    prompt_ids: list[int]
    """What `Llama.create_completion(prompt=…)` must be given (matches the llama object's own record)."""
    prompt_tokens: int
    """Text tokens plus image tokens (what llama-server counts)."""
    reused_tokens: int
    evaluated_tokens: int
    reuse: str
    """prefix, cold, off, another model or context, no common prefix, changed outside …"""
    image_encode_ms: float = 0.0
    image_decode_ms: float = 0.0
    images_encoded: int = 0
    images_from_memory: int = 0
    timings: dict[str, float] = field(default_factory=dict)


def _address(obj: Any) -> int | None:
    try:
        return ctypes.cast(obj, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return id(obj)


class MtmdPromptCache:
    """Evaluates vision prompts on one `llama_cpp.Llama` with its multimodal chat handler, reusing the KV prefix."""

    def __init__(self, llm: Any, handler: Any, *, reuse: bool = True):
        import llama_cpp
        from llama_cpp import mtmd_cpp

        self.llm = llm
        self.handler = handler
        self.reuse = reuse
        self._llama_cpp = llama_cpp
        self._mtmd = mtmd_cpp
        self.record: KVRecord | None = None
        self._template: Any = None
        self._embd: tuple[str, Any] | None = None  # (digest, encoder output) of the last image encoded

    @staticmethod
    def supports(handler: Any) -> bool:
        """Whether this layer knows how `handler` renders its prompt."""
        from llama_cpp import llama_chat_format as lcf
        return isinstance(handler, (lcf.MTMDChatHandler, lcf.Llava15ChatHandler))

    def owner(self) -> tuple[Any, ...]:
        return (str(self.llm.model_path), str(self.handler.clip_model_path), _address(self.llm._ctx.ctx))

    def forget(self) -> None:
        """Treat the KV cache as unknown (the next prompt is evaluated in full)."""
        self.record = None

    # -- rendering, exactly as the handler does it -----------------------------------------------

    def render(self, messages: list[dict[str, Any]]) -> tuple[str, list[str]]:
        """(prompt text with libmtmd's media marker where each image goes, image URLs in order)."""
        from llama_cpp import llama_chat_format as lcf

        h, llm = self.handler, self.llm
        marker = self._mtmd.mtmd_default_marker().decode("utf-8")
        urls = h.get_image_urls(messages)
        if isinstance(h, lcf.MTMDChatHandler):
            if self._template is None:
                import jinja2.ext
                env = lcf.ImmutableSandboxedEnvironment(
                    trim_blocks=True, lstrip_blocks=True,
                    extensions=[lcf.Jinja2ChatFormatter.IgnoreGenerationTags, jinja2.ext.loopcontrols])
                env.filters["tojson"] = lcf.Jinja2ChatFormatter.tojson
                self._template = env.from_string(h._get_chat_template(llm))

            def raise_exception(message: str) -> None:
                raise ValueError(message)

            text = self._template.render(
                messages=h._get_template_messages(messages, marker), add_generation_prompt=True,
                eos_token=h._decode_token_piece(llm.detokenize([llm.token_eos()])),
                bos_token=h._decode_token_piece(llm.detokenize([llm.token_bos()])),
                raise_exception=raise_exception, functions=None, function_call=None, tools=None, tool_choice=None,
                strftime_now=lcf.Jinja2ChatFormatter.strftime_now)
            return h._postprocess_template_text(text, urls, marker), urls
        # the Llava15ChatHandler family: its own CHAT_FORMAT and default system message
        if lcf._get_system_message(messages) == "" and h.DEFAULT_SYSTEM_MESSAGE is not None:
            messages = [{"role": "system", "content": h.DEFAULT_SYSTEM_MESSAGE}, *messages]
        if self._template is None:
            self._template = lcf.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(
                h.CHAT_FORMAT)
        text = self._template.render(messages=messages, add_generation_prompt=True,
                                     eos_token=llm.detokenize([llm.token_eos()]),
                                     bos_token=llm.detokenize([llm.token_bos()]))
        for url in urls:
            text = text.replace(url, marker)
        return text, urls

    # -- one prompt ---------------------------------------------------------------------------

    def prepare(self, messages: list[dict[str, Any]]) -> PromptRun:
        """Make the KV cache hold the prompt of `messages`; ValueError when it cannot (too long, bad image)."""
        h, mtmd = self.handler, self._mtmd
        h._init_mtmd_context(self.llm)
        t0 = time.perf_counter()
        text, urls = self.render(messages)
        images = [h.load_image(u) for u in urls]
        t_render = time.perf_counter()
        bitmaps = []
        chunks = None
        try:
            for data in images:
                bitmaps.append(h._create_bitmap_from_bytes(data))
            inp = mtmd.mtmd_input_text()
            raw = text.encode("utf-8")
            inp.text, inp.text_len, inp.add_special, inp.parse_special = raw, len(raw), True, True
            chunks = mtmd.mtmd_input_chunks_init()
            if chunks is None:
                raise ValueError("libmtmd could not allocate input chunks")
            array = (mtmd.mtmd_bitmap_p_ctypes * len(bitmaps))(*bitmaps)
            rc = mtmd.mtmd_tokenize(h.mtmd_ctx, chunks, ctypes.byref(inp), array, len(bitmaps))
            if rc != 0:
                raise ValueError(f"libmtmd could not tokenize the prompt (error {rc})")
            items, where = self._items(chunks, images)
            t_tok = time.perf_counter()
            try:
                run = self._evaluate(items, where)
            except BaseException:
                self.record = None  # the KV cache is in an unknown state now
                raise
        finally:
            if chunks is not None:
                mtmd.mtmd_input_chunks_free(chunks)
            for b in bitmaps:
                mtmd.mtmd_bitmap_free(b)
        run.timings = {"template_ms": round((t_render - t0) * 1000, 3),
                       "tokenize_ms": round((t_tok - t_render) * 1000, 3)}
        return run

    def _items(self, chunks: Any, images: list[bytes]) -> tuple[list[Item], list[tuple[Any, int]]]:
        """The prompt as items, and for each item (its chunk, its offset in that chunk)."""
        mtmd = self._mtmd
        items: list[Item] = []
        where: list[tuple[Any, int]] = []
        image_index = 0
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            if chunk is None:
                continue
            kind = mtmd.mtmd_input_chunk_get_type(chunk)
            if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t()
                ptr = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                for j in range(n.value):
                    items.append(int(ptr[j]))
                    where.append((chunk, j))
            elif kind == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE:
                data = images[image_index] if image_index < len(images) else b""
                image_index += 1
                items.append(ImageSpan(hashlib.sha256(data).hexdigest(), int(mtmd.mtmd_input_chunk_get_n_tokens(chunk)),
                                       int(mtmd.mtmd_input_chunk_get_n_pos(chunk))))
                where.append((chunk, 0))
            else:
                raise ValueError("only text and images are supported in-process")
        if not items or isinstance(items[-1], ImageSpan):
            raise ValueError("the prompt must end with text after the image (the chat template's reply header)")
        return items, where

    def _evaluate(self, items: list[Item], where: list[tuple[Any, int]]) -> PromptRun:
        llm = self.llm
        owner = self.owner()
        starts, end = layout(items)
        total = sum(_tokens(i) for i in items)
        if end > llm.n_ctx():
            raise ValueError(f"Prompt exceeds n_ctx: {end} > {llm.n_ctx()}")
        stale = self._stale(owner) if self.reuse else "off"
        keep, why = (0, stale) if stale else reusable_prefix(self.record, owner, items)
        if keep == 0:
            llm.reset()
            llm._ctx.kv_cache_clear()
        else:
            llm._ctx.kv_cache_seq_rm(-1, starts[keep], -1)
            llm.n_tokens = starts[keep]
        run = PromptRun(prompt_ids=[], prompt_tokens=total, reused_tokens=sum(_tokens(i) for i in items[:keep]),
                        evaluated_tokens=0, reuse=why)
        i = keep
        while i < len(items):
            item = items[i]
            if isinstance(item, ImageSpan):
                self._eval_image(where[i][0], item, run)
                i += 1
                continue
            j = i
            while j < len(items) and not isinstance(items[j], ImageSpan):
                j += 1
            llm.eval(items[i:j])  # writes llm.input_ids and advances llm.n_tokens
            run.evaluated_tokens += j - i
            i = j
        self.record = KVRecord(owner, list(items), starts, end)
        run.prompt_ids = llm.input_ids[: llm.n_tokens].tolist()
        return run

    def _stale(self, owner: tuple[Any, ...]) -> str | None:
        """Why the record cannot be trusted (someone reset or re-filled the KV cache since), or None."""
        rec, llm = self.record, self.llm
        if rec is None or rec.owner != owner:
            return None  # reusable_prefix says why
        if llm.n_tokens < rec.end:
            return "changed outside"
        import numpy as np

        text = [(pos, item) for item, pos in zip(rec.items, rec.starts) if not isinstance(item, ImageSpan)]
        positions = np.fromiter((t[0] for t in text), dtype=np.int64, count=len(text))
        expected = np.fromiter((t[1] for t in text), dtype=np.int64, count=len(text))
        if not np.array_equal(np.asarray(llm.input_ids)[positions].astype(np.int64), expected):
            return "changed outside"
        return None

    def _eval_image(self, chunk: Any, span: ImageSpan, run: PromptRun) -> None:
        import numpy as np

        llm, mtmd, lc = self.llm, self._mtmd, self._llama_cpp
        mctx = self.handler.mtmd_ctx
        if self.reuse and self._embd is not None and self._embd[0] == span.digest:
            embd = self._embd[1]
            run.images_from_memory += 1
        else:
            lc.llama_synchronize(llm._ctx.ctx)  # the text before is booked as prefill, not as the encode
            t = time.perf_counter()
            rc = mtmd.mtmd_encode_chunk(mctx, chunk)
            if rc != 0:
                raise ValueError(f"libmtmd could not encode the image (error {rc})")
            width = lc.llama_model_n_embd_inp(llm.model)
            out = mtmd.mtmd_get_output_embd(mctx)
            embd = np.ctypeslib.as_array(out, shape=(span.n_tokens * width,)).copy()
            self._embd = (span.digest, embd)
            run.image_encode_ms += (time.perf_counter() - t) * 1000
            run.images_encoded += 1
        t = time.perf_counter()
        new_n_past = lc.llama_pos(0)
        rc = mtmd.mtmd_helper_decode_image_chunk(
            mctx, llm._ctx.ctx, chunk, embd.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            lc.llama_pos(llm.n_tokens), lc.llama_seq_id(0), llm.n_batch, ctypes.byref(new_n_past),
            mtmd.mtmd_helper_post_decode_callback(), None)  # no callback (a NULL function pointer)
        if rc != 0:
            raise ValueError(f"llama.cpp could not decode the image (error {rc})")
        llm.n_tokens = new_n_past.value
        run.image_decode_ms += (time.perf_counter() - t) * 1000
        run.evaluated_tokens += span.n_tokens
