"""Small GGUF files written with the `gguf` package, for resolver and bad-input tests.

Real metadata, real format, tiny tensors: what a 30B model *says* about itself
costs a few hundred bytes to write.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_gguf(path: Path, arch: str, *, kind: str = "model", layers: int = 2, embd: int = 64, heads: int = 4,
               kv_heads: int = 2, ctx: int = 4096, tensor_elems: int = 1024, vision: bool = False,
               chat_template: str | None = None) -> Path:
    import gguf

    w = gguf.GGUFWriter(str(path), arch)
    w.add_type(kind)
    w.add_name(f"test {arch}")
    if kind == "model":
        w.add_block_count(layers)
        w.add_embedding_length(embd)
        w.add_head_count(heads)
        w.add_head_count_kv(kv_heads)
        w.add_context_length(ctx)
    if vision:
        w.add_bool("clip.has_vision_encoder", True)
    if chat_template:
        w.add_chat_template(chat_template)
    w.add_tensor("weight", np.zeros(tensor_elems, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def huge_model(path: Path) -> Path:
    """Metadata of a big dense model: 200 layers, 64 KV heads of 128 (≈6.5 MB of KV cache per token)."""
    return write_gguf(path, "llama", layers=200, embd=8192, heads=64, kv_heads=64, ctx=131072)


def vlm_text_model(path: Path) -> Path:
    return write_gguf(path, "qwen2vl", chat_template="{{ messages }}")


def text_model(path: Path) -> Path:
    return write_gguf(path, "llama", chat_template="{{ messages }}")


def projector(path: Path) -> Path:
    return write_gguf(path, "clip", kind="mmproj", vision=True)
