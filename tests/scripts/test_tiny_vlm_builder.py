"""The tiny random-weight Qwen2-VL fixture and the llama.cpp path that runs it.

    .venv/bin/python -m pytest tests/scripts/test_tiny_vlm_builder.py             # everything
    .venv/bin/python -m pytest tests/scripts/test_tiny_vlm_builder.py -m "not slow"

tests/fixtures/tiny-vlm/ holds tiny-vlm.gguf + tiny-vlm-mmproj.gguf, built by
scripts/build/build_tiny_vlm.py (settings in configs/tiny_vlm.yaml). Here:

- the committed pair matches its SHA256SUMS and stays small (fast);
- the builder reproduces the pair byte for byte (slow: trains the tokenizer,
  builds the model, runs convert_hf_to_gguf.py twice);
- llama-cpp-python loads the pair in-process, encodes a PNG sent as a data:
  URL, and a GBNF grammar forces a well-formed click action (fast: < 1 s).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

# OpenMP threads spin-wait by default, which is very slow on a shared 2-core
# machine. Must be set before llama_cpp loads its shared libraries.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "tiny-vlm"
MODEL = FIXTURES / "tiny-vlm.gguf"
MMPROJ = FIXTURES / "tiny-vlm-mmproj.gguf"
SUMS = FIXTURES / "SHA256SUMS"
BUILDER = REPO_ROOT / "scripts" / "build" / "build_tiny_vlm.py"
FETCH_SDIST = REPO_ROOT / "scripts" / "build" / "fetch_llama_sdist.sh"
SDIST = REPO_ROOT / ".cache" / "llama-cpp-python-0.3.36"

# {"type":"click","x":<int>,"y":<int>} with 0..999 coordinates, no spaces.
CLICK_GRAMMAR = r'''
root ::= "{\"type\":\"click\",\"x\":" coord ",\"y\":" coord "}"
coord ::= [0-9] | [1-9] [0-9] | [1-9] [0-9] [0-9]
'''


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _committed_sums() -> dict[str, str]:
    sums = {}
    for line in SUMS.read_text(encoding="utf-8").splitlines():
        digest, name = line.split()
        sums[name] = digest
    return sums


def png_bytes(width: int, height: int, square: tuple[int, int, int, int] | None = None) -> bytes:
    """An RGB PNG: white background, optional red square (x, y, w, h). No Pillow needed."""
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")  # filter type 0
        for x in range(width):
            inside = square is not None and square[0] <= x < square[0] + square[2] and square[1] <= y < square[1] + square[3]
            row += b"\xdc\x14\x3c" if inside else b"\xff\xff\xff"
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b"")


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def click_messages(png: bytes) -> list[dict]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": data_url(png)}},
                {"type": "text", "text": "Click the red square. Answer with one JSON action."},
            ],
        }
    ]


def assert_click(text: str) -> dict:
    action = json.loads(text)
    assert set(action) == {"type", "x", "y"}, action
    assert action["type"] == "click"
    assert isinstance(action["x"], int) and isinstance(action["y"], int)
    assert 0 <= action["x"] <= 999 and 0 <= action["y"] <= 999
    return action


# --------------------------------------------------------------------------
# The committed files


def test_fixture_pair_matches_sha256sums_and_is_small():
    sums = _committed_sums()
    assert set(sums) == {MODEL.name, MMPROJ.name}
    for path in (MODEL, MMPROJ):
        assert _sha256(path) == sums[path.name], f"{path} differs from SHA256SUMS"
    assert MODEL.stat().st_size + MMPROJ.stat().st_size < 1_000_000


# --------------------------------------------------------------------------
# The builder reproduces them


def _gguf_differences(a: Path, b: Path) -> list[str]:
    """Human-readable differences between two GGUF files (metadata, tensors)."""
    sys.path.insert(0, str(SDIST / "vendor" / "llama.cpp" / "gguf-py"))
    try:
        import numpy as np
        from gguf import GGUFReader
    finally:
        sys.path.pop(0)
    ra, rb = GGUFReader(a), GGUFReader(b)
    out = []
    fa = {k: v.contents() for k, v in ra.fields.items()}
    fb = {k: v.contents() for k, v in rb.fields.items()}
    for key in sorted(set(fa) | set(fb)):
        if fa.get(key) != fb.get(key):
            out.append(f"metadata {key}: {str(fa.get(key))[:80]!r} != {str(fb.get(key))[:80]!r}")
    ta = {t.name: t for t in ra.tensors}
    tb = {t.name: t for t in rb.tensors}
    for name in sorted(set(ta) | set(tb)):
        if name not in ta or name not in tb:
            out.append(f"tensor {name}: only in one file")
            continue
        x, y = np.asarray(ta[name].data), np.asarray(tb[name].data)
        if x.shape != y.shape or ta[name].tensor_type != tb[name].tensor_type:
            out.append(f"tensor {name}: {x.shape}/{ta[name].tensor_type!r} != {y.shape}/{tb[name].tensor_type!r}")
        elif not np.array_equal(x, y):
            diff = np.abs(x.astype(np.float64) - y.astype(np.float64)).max()
            out.append(f"tensor {name}: values differ (max abs diff {diff:g})")
    return out


@pytest.mark.slow
def test_builder_reproduces_committed_fixtures(tmp_path):
    for module in ("torch", "transformers", "sentencepiece", "google.protobuf", "safetensors", "numpy", "yaml"):
        pytest.importorskip(module)
    fetched = subprocess.run(
        ["bash", str(FETCH_SDIST)], capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable}
    )
    if fetched.returncode != 0:
        pytest.skip(f"llama-cpp-python 0.3.36 sdist unavailable (fetch_llama_sdist.sh failed): {fetched.stderr[-300:]}")

    out = tmp_path / "tiny-vlm"
    proc = subprocess.run(
        [sys.executable, str(BUILDER), "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)

    # The build is deterministic (seeded init, single-threaded sentencepiece
    # training from an in-memory corpus, fixed folder and model name, no
    # dates/UUIDs written by the converter or by the metadata-only rewrite
    # that adds add_space_prefix), so the files must be identical
    # for the pinned versions (torch 2.13.0, transformers 5.24.0,
    # sentencepiece 0.2.3, llama.cpp from llama-cpp-python 0.3.36). Another
    # torch or transformers version may initialise weights differently: the
    # message then names the metadata keys / tensors that moved.
    committed = _committed_sums()
    for name in (MODEL.name, MMPROJ.name):
        built = out / name
        assert report["files"][name]["sha256"] == _sha256(built)
        if _sha256(built) != committed[name]:
            details = "\n".join(_gguf_differences(FIXTURES / name, built)) or "(same metadata and tensors: layout only)"
            pytest.fail(f"{name} is not byte-identical to the committed fixture:\n{details}")
    assert (out / "SHA256SUMS").read_text() == SUMS.read_text()


# --------------------------------------------------------------------------
# llama.cpp runs them (in-process, llama-cpp-python)


@pytest.fixture(scope="module")
def llama_vlm():
    llama_cpp = pytest.importorskip("llama_cpp")
    from llama_cpp.llama_chat_format import MTMDChatHandler

    # MTMDChatHandler: generic mtmd handler that renders the GGUF's own chat
    # template (ours is ChatML, like Qwen2-VL's) and inserts the image where
    # the image_url part was; mtmd adds <|vision_start|>/<|vision_end|>.
    handler = MTMDChatHandler(clip_model_path=str(MMPROJ), verbose=False)
    llm = llama_cpp.Llama(
        model_path=str(MODEL),
        chat_handler=handler,
        n_ctx=512,
        n_batch=512,
        n_threads=1,
        n_threads_batch=1,
        seed=0,
        verbose=False,
    )
    yield llama_cpp, llm
    llm.close()


@pytest.mark.llama
def test_llama_cpp_tokenizes_chatml_without_space_after_special_tokens():
    """The builder sets tokenizer.ggml.add_space_prefix = false; otherwise
    llama.cpp would tokenize "<|im_start|>user" as "<|im_start|>", " ", "user"."""
    llama_cpp = pytest.importorskip("llama_cpp")
    vocab = llama_cpp.Llama(model_path=str(MODEL), vocab_only=True, verbose=False)
    try:
        assert vocab.metadata.get("tokenizer.ggml.add_space_prefix") == "false"
        ids = vocab.tokenize(b"<|im_start|>user\nhi<|im_end|>\n", add_bos=False, special=True)
        pieces = [vocab.detokenize([i], special=True) for i in ids]
        assert pieces[0] == b"<|im_start|>" and pieces[-2:] == [b"<|im_end|>", b"\n"]
        assert b"".join(pieces) == b"<|im_start|>user\nhi<|im_end|>\n"
        assert vocab.token_eos() == 3
    finally:
        vocab.close()


@pytest.mark.llama
def test_llama_cpp_image_chat_with_click_grammar(llama_vlm):
    llama_cpp, llm = llama_vlm
    grammar = llama_cpp.LlamaGrammar.from_string(CLICK_GRAMMAR, verbose=False)
    png = png_bytes(96, 64, square=(60, 20, 24, 24))
    result = llm.create_chat_completion(
        messages=click_messages(png),
        grammar=grammar,
        temperature=0.0,
        max_tokens=40,
    )
    text = result["choices"][0]["message"]["content"]
    assert_click(text)
    # Same request, same answer (greedy decoding, KV cache reset per image request).
    again = llm.create_chat_completion(messages=click_messages(png), grammar=grammar, temperature=0.0, max_tokens=40)
    assert again["choices"][0]["message"]["content"] == text


@pytest.mark.llama
def test_mtmd_turns_96x64_image_into_12_tokens(llama_vlm):
    """Qwen2-VL preprocessing in this llama.cpp: 96x64 is resized to a
    multiple of 28 px and then up to the 8-token minimum (set_limit_image_tokens(8, ...)),
    giving a 4x3 grid of merged 2x2 patches = 12 embeddings."""
    _, llm = llama_vlm
    handler = llm.chat_handler
    handler._init_mtmd_context(llm)
    mtmd = handler._mtmd_cpp
    import ctypes

    bitmap = handler._create_bitmap_from_bytes(png_bytes(96, 64))
    chunks = mtmd.mtmd_input_chunks_init()
    try:
        text = ("<|im_start|>user\n" + mtmd.mtmd_default_marker().decode() + "hi<|im_end|>\n").encode()
        inp = mtmd.mtmd_input_text()
        inp.text, inp.text_len, inp.add_special, inp.parse_special = text, len(text), True, True
        bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
        assert mtmd.mtmd_tokenize(handler.mtmd_ctx, chunks, ctypes.byref(inp), bitmaps, 1) == 0
        image_tokens = [
            mtmd.mtmd_input_chunk_get_n_tokens(mtmd.mtmd_input_chunks_get(chunks, i))
            for i in range(mtmd.mtmd_input_chunks_size(chunks))
            if mtmd.mtmd_input_chunk_get_type(mtmd.mtmd_input_chunks_get(chunks, i)) == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE
        ]
    finally:
        mtmd.mtmd_input_chunks_free(chunks)
        mtmd.mtmd_bitmap_free(bitmap)
    assert image_tokens == [12]
