#!/usr/bin/env python3
""".venv/bin/python -m scripts.build.build_tiny_vlm --out DIR [--keep-hf] [--config configs/tiny_vlm.yaml]

Build, offline and deterministically, a tiny random-weight Qwen2-VL and
convert it to the two GGUF files llama.cpp needs for vision:

    DIR/tiny-vlm.gguf          the language model (Qwen2-VL text part, f16)
    DIR/tiny-vlm-mmproj.gguf   the vision encoder + merger ("mmproj", f16)
    DIR/SHA256SUMS             sha256 of both, in `sha256sum -c` format
    DIR/hf/                    the Hugging Face folder (only with --keep-hf)

The model knows nothing (its weights are random) but it is a real Qwen2-VL:
llama.cpp loads it, encodes images with it (M-RoPE, 2x2 patch merger) and,
with a grammar, emits well-formed actions. That makes it the fixture for
tests of the llama.cpp plumbing that must run in seconds on a CPU.

Steps, all seeded (settings from --config, default configs/tiny_vlm.yaml):

1. Tokenizer: a sentencepiece BPE model (vocab 384, byte_fallback) trained
   single-threaded on generated GUI-agent text, with the Qwen special tokens
   (<|endoftext|> <|im_start|> <|im_end|> <|vision_start|> <|vision_end|>
   <|vision_pad|> <|image_pad|> <|video_pad|>) as user-defined symbols, plus a
   tokenizer_config.json that marks them special and carries a ChatML chat
   template (add_bos_token false, eos <|im_end|>, pad <|endoftext|>).
2. preprocessor_config.json written by hand (Qwen2VLImageProcessor, patch 14,
   merge 2, temporal patch 2, CLIP image_mean/std).
3. transformers Qwen2VLForConditionalGeneration from a Qwen2VLConfig, random
   init under torch.manual_seed, saved as float32 safetensors.
4. Conversion with convert_hf_to_gguf.py from the llama-cpp-python 0.3.36
   source distribution (vendor/llama.cpp) and its bundled gguf-py: once for
   the model, once with --mmproj. The released `gguf` package is not used (it
   lacks LazyChunkedTensor). The model file then gets
   tokenizer.ggml.add_space_prefix = false (a metadata-only copy with the
   bundled gguf-py), which the converter does not write for sentencepiece
   vocabularies: without it llama.cpp puts a space after every special
   token. The sdist is fetched and unpacked by
   scripts/build/fetch_llama_sdist.sh into .cache/llama-cpp-python-0.3.36/ unless
   --llama-cpp points at a llama.cpp source tree.

Needs (in the interpreter running this script and the converter): torch,
transformers (5.x), sentencepiece, protobuf, safetensors, numpy, pyyaml.
No network is used except pip fetching the sdist once (pip cache).

Rebuild the committed test fixtures with:

    .venv/bin/python -m scripts.build.build_tiny_vlm --out tests/fixtures/tiny-vlm
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO_ROOT / "configs" / "tiny_vlm.yaml"
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
DEFAULT_SDIST = REPO_ROOT / ".cache" / f"llama-cpp-python-{LLAMA_CPP_PYTHON_VERSION}"
FETCH_SCRIPT = REPO_ROOT / "scripts" / "build" / "fetch_llama_sdist.sh"

MODEL_FILE = "tiny-vlm.gguf"
MMPROJ_FILE = "tiny-vlm-mmproj.gguf"
SUMS_FILE = "SHA256SUMS"

# Qwen2-VL's special tokens, in Qwen's own order. They become sentencepiece
# user-defined symbols (never split, never produced by merges) and are
# marked special in tokenizer_config.json, so the GGUF stores them as
# CONTROL tokens that llama.cpp parses in prompts.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# ChatML, as Qwen2-VL uses it. String content is printed as is; list content
# prints its text parts and, for an image part, Qwen's image placeholder
# (what transformers' processor expands). llama.cpp front ends (the Python
# MTMDChatHandler, C++ llama-server) replace image parts with their media
# marker text part *before* rendering, and mtmd adds <|vision_start|> /
# <|vision_end|> around the image embeddings itself. No default system
# message: prompts stay short.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}"
    "{{ message['content'] }}"
    "{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}"
    "{{ part['text'] }}"
    "{% elif part['type'] == 'image' or part['type'] == 'image_url' %}"
    "{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}"
)

# OpenAI CLIP statistics, as in Qwen2-VL's preprocessor_config.json.
IMAGE_MEAN = [0.48145466, 0.4578275, 0.40821073]
IMAGE_STD = [0.26862954, 0.26130258, 0.27577711]


# --------------------------------------------------------------------------
# Settings


@dataclass
class TokenizerSettings:
    vocab_size: int = 384
    corpus_lines: int = 4000
    # Text files (relative to the repository) whose lines join the corpus, each `extra_corpus_repeat`
    # times, so their words become whole tokens (shorter prompts for a model trained on them).
    extra_corpus_files: list[str] = field(default_factory=list)
    extra_corpus_repeat: int = 1


@dataclass
class TextSettings:
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    mrope_section: list[int] = field(default_factory=lambda: [2, 3, 3])
    rope_theta: float = 1000000.0
    max_position_embeddings: int = 4096
    rms_norm_eps: float = 1e-6


@dataclass
class VisionSettings:
    depth: int = 3
    embed_dim: int = 32
    num_heads: int = 2
    mlp_ratio: int = 4
    patch_size: int = 14
    spatial_merge_size: int = 2
    temporal_patch_size: int = 2


@dataclass
class ImageSettings:
    min_pixels: int = 56 * 56
    max_pixels: int = 1280 * 28 * 28


@dataclass
class GgufSettings:
    outtype: str = "f16"
    model_name: str = "tiny-vlm"


@dataclass
class Settings:
    seed: int = 0
    tokenizer: TokenizerSettings = field(default_factory=TokenizerSettings)
    text: TextSettings = field(default_factory=TextSettings)
    vision: VisionSettings = field(default_factory=VisionSettings)
    image: ImageSettings = field(default_factory=ImageSettings)
    gguf: GgufSettings = field(default_factory=GgufSettings)


def _fill(cls: type, data: dict[str, Any], where: str) -> Any:
    """Build dataclass `cls` from `data`, refusing unknown keys."""
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise SystemExit(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
    obj = cls()
    for name, value in data.items():
        default = getattr(obj, name)
        if is_dataclass(default):
            if not isinstance(value, dict):
                raise SystemExit(f"{where}.{name}: expected a mapping, got {value!r}")
            value = _fill(type(default), value, f"{where}.{name}")
        setattr(obj, name, value)
    return obj


def load_settings(path: Path | None) -> Settings:
    """Settings from a YAML file (every key optional) or the built-in defaults."""
    if path is None:
        return Settings()
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: expected a mapping at top level")
    settings = _fill(Settings, data, str(path))
    text = settings.text
    head_dim = text.hidden_size // text.num_attention_heads
    if sum(text.mrope_section) * 2 != head_dim:
        raise SystemExit(
            f"{path}: text.mrope_section {text.mrope_section} must sum to head_dim/2 = {head_dim // 2}"
        )
    if settings.vision.temporal_patch_size != 2:
        raise SystemExit(f"{path}: vision.temporal_patch_size must be 2 (converter limit)")
    if settings.vision.depth < 3:
        raise SystemExit(f"{path}: vision.depth must be >= 3 (depth 2 does not convert)")
    return settings


# --------------------------------------------------------------------------
# 1. Tokenizer


_WORDS = (
    "click double right drag scroll type press key hotkey wait done move hover "
    "button menu window dialog field text box icon link tab panel list item "
    "checkbox radio slider toolbar title bar file edit view help open save close "
    "cancel ok submit search settings next back home the a an of to on in at "
    "with and or red green blue yellow black white grey orange purple square "
    "circle top bottom left right center corner screen image screenshot user "
    "assistant system task goal step action answer name colour where is what"
).split()
_KEYS = ("enter", "tab", "escape", "backspace", "space", "ctrl", "alt", "shift", "up", "down")


def _corpus_line(rng: random.Random) -> str:
    """One line of GUI-agent flavoured text: prose, actions, JSON, ChatML."""
    x, y = rng.randrange(0, 1280), rng.randrange(0, 800)
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12)))
    kind = rng.randrange(8)
    if kind == 0:
        return words.capitalize() + rng.choice([".", "?", "!", ":"])
    if kind == 1:
        return f'{{"type":"click","x":{x},"y":{y}}}'
    if kind == 2:
        return f'{{"type": "{rng.choice(["click", "double_click", "right_click", "move"])}", "x": {x}, "y": {y}}}'
    if kind == 3:
        return f'{{"type":"type","text":"{words}"}}'
    if kind == 4:
        return f'{{"type":"key","keys":["{rng.choice(_KEYS)}"]}}'
    if kind == 5:
        return f"click(x={x}, y={y}) # {words}"
    if kind == 6:
        return f"<|im_start|>user\n{words}<|im_end|>"
    return f"<|im_start|>assistant\n{{\"type\":\"scroll\",\"dy\":{rng.randint(-10, 10)}}}<|im_end|>"


def generate_corpus(seed: int, n_lines: int) -> list[str]:
    rng = random.Random(seed)
    return [_corpus_line(rng) for _ in range(n_lines)]


def train_tokenizer(settings: Settings) -> bytes:
    """Serialized sentencepiece model (bytes); deterministic for the settings."""
    import sentencepiece as spm

    corpus = generate_corpus(settings.seed, settings.tokenizer.corpus_lines)
    for name in settings.tokenizer.extra_corpus_files:
        lines = [ln for ln in (REPO_ROOT / name).read_text(encoding="utf-8").splitlines() if ln.strip()]
        corpus += lines * max(1, settings.tokenizer.extra_corpus_repeat)
    out = io.BytesIO()
    spm.set_random_generator_seed(settings.seed)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus),  # not a file: no temp path in the model
        model_writer=out,
        model_type="bpe",
        vocab_size=settings.tokenizer.vocab_size,
        byte_fallback=True,
        character_coverage=1.0,
        split_digits=True,  # one token per digit: coordinates tokenize evenly
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=False,  # like Qwen's BPE: "user" after <|im_start|> is not " user"
        user_defined_symbols=list(SPECIAL_TOKENS),
        unk_id=0,
        bos_id=-1,  # Qwen has no BOS; no <s> / </s> pieces at all
        eos_id=-1,
        pad_id=-1,
        num_threads=1,  # multi-threaded training is not reproducible
        shuffle_input_sentence=False,
        input_sentence_size=0,
        minloglevel=2,
    )
    return out.getvalue()


def token_ids(model_bytes: bytes) -> dict[str, int]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    ids = {tok: sp.piece_to_id(tok) for tok in SPECIAL_TOKENS}
    for tok, tid in ids.items():
        if sp.id_to_piece(tid) != tok:
            raise RuntimeError(f"special token {tok} missing from the trained tokenizer")
    return ids


def write_tokenizer(hf_dir: Path, model_bytes: bytes, ids: dict[str, int]) -> None:
    (hf_dir / "tokenizer.model").write_bytes(model_bytes)
    added = {
        str(tid): {
            "content": tok,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for tok, tid in sorted(ids.items(), key=lambda kv: kv[1])
    }
    tokenizer_config = {
        "add_bos_token": False,
        "add_eos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "additional_special_tokens": [t for t in SPECIAL_TOKENS if t not in ("<|endoftext|>", "<|im_end|>")],
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": "<unk>",
        "legacy": False,
        "model_max_length": 4096,
        "sp_model_kwargs": {},
        "tokenizer_class": "LlamaTokenizer",
    }
    _write_json(hf_dir / "tokenizer_config.json", tokenizer_config)
    _write_json(
        hf_dir / "special_tokens_map.json",
        {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": "<unk>"},
    )


# --------------------------------------------------------------------------
# 2. Image processor


def write_preprocessor(hf_dir: Path, settings: Settings) -> None:
    v, im = settings.vision, settings.image
    _write_json(
        hf_dir / "preprocessor_config.json",
        {
            "image_processor_type": "Qwen2VLImageProcessor",
            "do_convert_rgb": True,
            "do_resize": True,
            "do_rescale": True,
            "rescale_factor": 1 / 255,
            "do_normalize": True,
            "image_mean": IMAGE_MEAN,
            "image_std": IMAGE_STD,
            "patch_size": v.patch_size,
            "merge_size": v.spatial_merge_size,
            "temporal_patch_size": v.temporal_patch_size,
            "min_pixels": im.min_pixels,
            "max_pixels": im.max_pixels,
            "size": {"shortest_edge": im.min_pixels, "longest_edge": im.max_pixels},
            "resample": 3,  # bicubic
        },
    )


# --------------------------------------------------------------------------
# 3. Model


def build_model(hf_dir: Path, settings: Settings, ids: dict[str, int], vocab_size: int) -> int:
    """Save a seeded random Qwen2-VL to hf_dir; return its parameter count."""
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    torch.set_num_threads(1)
    t, v = settings.text, settings.vision
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": t.hidden_size,
            "intermediate_size": t.intermediate_size,
            "num_hidden_layers": t.num_hidden_layers,
            "num_attention_heads": t.num_attention_heads,
            "num_key_value_heads": t.num_key_value_heads,
            "max_position_embeddings": t.max_position_embeddings,
            "max_window_layers": t.num_hidden_layers,
            "rms_norm_eps": t.rms_norm_eps,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": t.rope_theta,
                "mrope_section": list(t.mrope_section),
            },
            "bos_token_id": None,
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
            "tie_word_embeddings": False,
        },
        vision_config={
            "depth": v.depth,
            "embed_dim": v.embed_dim,
            "hidden_size": t.hidden_size,  # merger output = LM width
            "num_heads": v.num_heads,
            "mlp_ratio": v.mlp_ratio,
            "patch_size": v.patch_size,
            "spatial_merge_size": v.spatial_merge_size,
            "temporal_patch_size": v.temporal_patch_size,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    # The converter reads special token ids from config.json (there is no
    # tokenizer.json): mirror them at the top level too.
    config.eos_token_id = ids["<|im_end|>"]
    config.pad_token_id = ids["<|endoftext|>"]

    torch.manual_seed(settings.seed)
    model = Qwen2VLForConditionalGeneration(config).to(torch.float32).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.bos_token_id = None
    model.save_pretrained(hf_dir, safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------
# 4. Conversion


def ensure_llama_cpp(llama_cpp: Path | None) -> Path:
    """Path of vendor/llama.cpp (fetching the sdist when needed)."""
    if llama_cpp is not None:
        root = llama_cpp
    else:
        root = DEFAULT_SDIST / "vendor" / "llama.cpp"
        if not (root / "convert_hf_to_gguf.py").is_file():
            print(f"fetching llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sdist ...", file=sys.stderr)
            subprocess.run(
                ["bash", str(FETCH_SCRIPT), str(DEFAULT_SDIST)],
                check=True,
                env={**os.environ, "PYTHON": sys.executable},
                stdout=subprocess.DEVNULL,
            )
    if not (root / "convert_hf_to_gguf.py").is_file() or not (root / "gguf-py" / "gguf").is_dir():
        raise SystemExit(f"{root}: not a llama.cpp tree with convert_hf_to_gguf.py and gguf-py/")
    return root


def convert(llama_cpp: Path, hf_dir: Path, outfile: Path, settings: Settings, *, mmproj: bool, python: str, verbose: bool) -> float:
    # The converter runs with llama_cpp as its working directory: absolute paths only.
    llama_cpp, hf_dir, outfile = llama_cpp.resolve(), hf_dir.resolve(), outfile.resolve()
    cmd = [
        python,
        str(llama_cpp / "convert_hf_to_gguf.py"),
        str(hf_dir),
        "--outfile",
        str(outfile),
        "--outtype",
        settings.gguf.outtype,
        "--model-name",
        settings.gguf.model_name,
    ]
    if mmproj:
        cmd.append("--mmproj")
    env = dict(os.environ)
    env.pop("NO_LOCAL_GGUF", None)  # the bundled gguf-py, never the released one
    env["PYTHONPATH"] = os.pathsep.join(
        [str(llama_cpp / "gguf-py")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env.setdefault("OMP_NUM_THREADS", "1")
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=str(llama_cpp), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or verbose:
        sys.stderr.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"conversion failed ({'mmproj' if mmproj else 'model'}): exit {proc.returncode}")
    return elapsed


# The converter's sentencepiece path (used for Qwen2-VL when tokenizer.model
# exists) writes no tokenizer.ggml.add_space_prefix, and llama.cpp then
# defaults to true for a sentencepiece vocabulary: it puts a space before the
# text after EVERY special token ("<|im_start|> user\n", "<|im_end|> \n").
# Besides differing from transformers, that breaks llama-server's
# response_format/json_schema: its grammar starts with the generation prompt
# "<|im_start|>assistant\n", which the space-prefixed tokens do not match
# ("Failed to initialize samplers"). So the model file gets the key, set to
# false, by a metadata-only copy through the bundled gguf-py.
_PATCH_GGUF = """
import os, sys
import gguf
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata
src, dst = sys.argv[1], sys.argv[2]
reader = gguf.GGUFReader(src, "r")
writer = gguf.GGUFWriter(dst, arch=reader.get_field(gguf.Keys.General.ARCHITECTURE).contents(), endianess=reader.endianess)
alignment = reader.get_field(gguf.Keys.General.ALIGNMENT)
if alignment is not None:
    writer.data_alignment = alignment.contents()
new = {gguf.Keys.Tokenizer.ADD_PREFIX: MetadataDetails(gguf.GGUFValueType.BOOL, False)}
copy_with_new_metadata(reader, writer, new, [])
"""


def disable_space_prefix(llama_cpp: Path, path: Path, *, python: str) -> None:
    """Rewrite GGUF `path` with tokenizer.ggml.add_space_prefix = false."""
    path = path.resolve()
    tmp = path.with_name(path.name + ".tmp")
    env = dict(os.environ)
    env.pop("NO_LOCAL_GGUF", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(llama_cpp.resolve() / "gguf-py")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env["TQDM_DISABLE"] = "1"
    proc = subprocess.run([python, "-c", _PATCH_GGUF, str(path), str(tmp)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"could not set add_space_prefix in {path}: exit {proc.returncode}")
    os.replace(tmp, path)


# --------------------------------------------------------------------------


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build(
    out: Path,
    settings: Settings,
    *,
    keep_hf: bool = False,
    llama_cpp: Path | None = None,
    python: str = sys.executable,
    verbose: bool = False,
    pretrain: Any = None,
) -> dict[str, Any]:
    """Build the pair into `out`; return a report (paths, sizes, hashes, timings). `pretrain(hf_dir)`, when
    given, changes the random model's weights in place before conversion (the base's making:
    scripts/build/screen_pretraining.py) and returns what it did, kept in the report."""
    out = out.resolve()  # the converter runs with its own folder as cwd
    out.mkdir(parents=True, exist_ok=True)
    llama_root = ensure_llama_cpp(llama_cpp.resolve() if llama_cpp is not None else None)
    report: dict[str, Any] = {"out": str(out)}
    with tempfile.TemporaryDirectory(prefix="tiny-vlm-") as tmp:
        # The folder's name feeds the converter's metadata heuristics
        # (general.basename etc.): keep it fixed.
        hf_dir = Path(tmp) / "tiny-vlm"
        hf_dir.mkdir()
        t0 = time.perf_counter()
        sp_bytes = train_tokenizer(settings)
        ids = token_ids(sp_bytes)
        write_tokenizer(hf_dir, sp_bytes, ids)
        write_preprocessor(hf_dir, settings)
        report["parameters"] = build_model(hf_dir, settings, ids, settings.tokenizer.vocab_size)
        report["build_s"] = round(time.perf_counter() - t0, 2)
        report["special_token_ids"] = ids
        if pretrain is not None:
            report["pretraining"] = pretrain(hf_dir)

        model_out, mmproj_out = out / MODEL_FILE, out / MMPROJ_FILE
        report["convert_model_s"] = round(
            convert(llama_root, hf_dir, model_out, settings, mmproj=False, python=python, verbose=verbose), 2
        )
        t1 = time.perf_counter()
        disable_space_prefix(llama_root, model_out, python=python)
        report["patch_model_s"] = round(time.perf_counter() - t1, 2)
        report["convert_mmproj_s"] = round(
            convert(llama_root, hf_dir, mmproj_out, settings, mmproj=True, python=python, verbose=verbose), 2
        )
        if keep_hf:
            dest = out / "hf"
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(hf_dir, dest)
            report["hf"] = str(dest)

    files = {}
    for path in (model_out, mmproj_out):
        files[path.name] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    (out / SUMS_FILE).write_text("".join(f"{v['sha256']}  {k}\n" for k, v in files.items()), encoding="utf-8")
    report["files"] = files
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="build_tiny_vlm.py",
        description=(
            "Build a tiny random-weight Qwen2-VL offline and convert it to GGUF "
            f"({MODEL_FILE} + {MMPROJ_FILE}, f16, < 1 MB together) for llama.cpp tests. "
            "Deterministic: the same settings give byte-identical files."
        ),
        epilog=(
            "examples:\n"
            "  .venv/bin/python -m scripts.build.build_tiny_vlm --out /tmp/tiny-vlm\n"
            "  .venv/bin/python -m scripts.build.build_tiny_vlm --out tests/fixtures/tiny-vlm   # rebuild fixtures\n"
            "  .venv/bin/python -m scripts.build.build_tiny_vlm --out /tmp/t --keep-hf --seed 3\n"
            "then e.g.:\n"
            "  llama-server --model /tmp/tiny-vlm/tiny-vlm.gguf --mmproj /tmp/tiny-vlm/tiny-vlm-mmproj.gguf"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder (created if missing)")
    parser.add_argument(
        "--config",
        type=Path,
        default=DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None,
        metavar="YAML",
        help="model/tokenizer settings (default: %(default)s; built-in defaults if absent)",
    )
    parser.add_argument("--seed", type=int, default=None, help="override the config's seed (weights and tokenizer corpus)")
    parser.add_argument("--keep-hf", action="store_true", help="also keep the Hugging Face model folder as DIR/hf")
    parser.add_argument(
        "--llama-cpp",
        type=Path,
        default=None,
        metavar="DIR",
        help=(
            "a llama.cpp source tree with convert_hf_to_gguf.py and gguf-py/ "
            f"(default: vendor/llama.cpp of the llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sdist in "
            f"{DEFAULT_SDIST.relative_to(REPO_ROOT)}, fetched by scripts/build/fetch_llama_sdist.sh)"
        ),
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that runs the converter; needs torch, transformers, sentencepiece, numpy, pyyaml (default: this one)",
    )
    parser.add_argument("--verbose", action="store_true", help="show the converter's log")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)

    settings = load_settings(args.config)
    if args.seed is not None:
        settings.seed = args.seed
    report = build(args.out, settings, keep_hf=args.keep_hf, llama_cpp=args.llama_cpp, python=args.python, verbose=args.verbose)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"built {report['parameters']} parameters in {report['build_s']} s; converted in "
            f"{report['convert_model_s']} s (model) + {report['convert_mmproj_s']} s (mmproj)"
        )
        for name, info in report["files"].items():
            print(f"  {args.out / name}  {info['bytes']} bytes  sha256 {info['sha256']}")
        if "hf" in report:
            print(f"  {report['hf']}/  (Hugging Face folder)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
