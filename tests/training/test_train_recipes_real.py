"""The real-model recipes (configs/train/qwen2.5-vl-*.yaml, uitars-1.5-7b.yaml), proven up to and past the first
optimizer steps on CPU: each loads a RANDOMLY INITIALISED model of the recipe's architecture class
(Qwen2_5_VLForConditionalGeneration) shrunk to 2 language layers, trains 2 steps through training/train_lora.py
exactly as the recipe says (its LoRA targets, dtype, gradient checkpointing, data settings, the family's resize
rule and answer format), checks that the loss covers the assistant's tokens only, and that the saved adapter
merges (merged logits = adapter logits) and converts to GGUF + mmproj with llama.cpp's converter.

What is real and what is not: the image processor is transformers' Qwen2VLImageProcessor with the family's
published defaults (patch 14, merge 2, temporal patch 2, min/max pixels); the chat template is Qwen2.5-VL's
published one (transcribed below). The tokenizer is NOT Qwen's 151k BPE (its files come from a model hub and
tests never download): it is the tiny builder's local sentencepiece vocabulary with Qwen's special tokens.
Nothing is downloaded. GPU memory and speed cannot be measured here (no GPU): docs/learning.md lists
published figures, marked as not measured.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("datasets")

REPO = Path(__file__).resolve().parents[2]

from test_train_lora import practice_report  # noqa: E402

# Qwen2.5-VL's chat template as published with the Instruct models (chat_template.json), written out here
QWEN25VL_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: "
    "{% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

REAL_RECIPES = ["qwen2.5-vl-3b", "qwen2.5-vl-7b", "uitars-1.5-7b"]


def build_shrunk_qwen25vl(out: Path, tie_word_embeddings: bool) -> Path:
    """A random Qwen2.5-VL in Hugging Face form: the family's architecture class and structure (GQA, M-RoPE
    sections in the published 16:24:24 ratio, a windowed vision tower with full-attention blocks, 2x2 patch
    merger, SwiGLU), shrunk to 2 language layers; the family's image processor and chat template."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    from scripts.build import build_tiny_vlm as b

    out.mkdir(parents=True)
    s = b.load_settings(REPO / "configs" / "tiny_vlm_demo.yaml")
    sp = b.train_tokenizer(s)
    ids = b.token_ids(sp)
    b.write_tokenizer(out, sp, ids)
    cfg_path = out / "tokenizer_config.json"
    tok_cfg = json.loads(cfg_path.read_text())
    tok_cfg["chat_template"] = QWEN25VL_CHAT_TEMPLATE
    cfg_path.write_text(json.dumps(tok_cfg, indent=2))
    (out / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "Qwen2VLImageProcessor", "do_convert_rgb": True, "do_resize": True,
        "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
        "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2, "min_pixels": 3136, "max_pixels": 12845056,
        "size": {"shortest_edge": 3136, "longest_edge": 12845056}, "resample": 3}, indent=2))
    hidden = 64
    config = Qwen2_5_VLConfig(
        text_config={"vocab_size": s.tokenizer.vocab_size, "hidden_size": hidden, "intermediate_size": 128,
                     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                     "max_position_embeddings": 4096, "max_window_layers": 2, "rms_norm_eps": 1e-6,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [2, 3, 3]},
                     "bos_token_id": None, "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"],
                     "tie_word_embeddings": tie_word_embeddings},
        vision_config={"depth": 4, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                       "out_hidden_size": hidden, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                       "window_size": 112, "fullatt_block_indexes": [1, 3], "tokens_per_second": 2},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=tie_word_embeddings)
    config.eos_token_id = ids["<|im_end|>"]
    config.pad_token_id = ids["<|endoftext|>"]
    torch.manual_seed(0)
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.bos_token_id = None
    model.save_pretrained(out, safe_serialization=True)
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("recipes")
    report = practice_report(work / "home", work / "practice.json", samples=8, seed=9)
    from conway.cli.main import main
    out = work / "ds"
    assert main(["--home", str(work / "home"), "export", "--from-report", str(report), "--format", "hf",
                 "--output", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def shrunk(tmp_path_factory) -> dict[bool, Path]:
    root = tmp_path_factory.mktemp("qwen25vl")
    return {tie: build_shrunk_qwen25vl(root / f"tie-{tie}", tie) for tie in (False, True)}


@pytest.mark.slow  # 1.5-3 CPU minutes each (build, 2 steps, merge, GGUF conversion)
@pytest.mark.llama
@pytest.mark.parametrize("name", REAL_RECIPES)
def test_real_recipe_trains_two_steps_on_the_family_and_merges(name, shrunk, exported, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText

    from conway.config import load_config
    from training.data import Encoder, build_examples, load_rows
    from training.recipe import load_recipe
    from training.train_lora import train

    base = shrunk[name == "qwen2.5-vl-3b"]  # the 3B ties its input and output embeddings, the 7Bs do not
    out = tmp_path / "cand"
    recipe = load_recipe(name, [f"model.path={base}", f"data.path={exported}", f"output.dir={out}",
                                "train.max_steps=2", "train.grad_accum=2", "train.warmup_steps=1",
                                "train.eval_generate=1", "data.eval_fraction=0.2", "train.threads=1",
                                "convert.gguf=true", "convert.outtype=f32"])
    # the recipe's own knobs stay: dtype, LoRA targets, gradient checkpointing, the family's data settings
    assert recipe.model.dtype == "bfloat16" and recipe.model.gradient_checkpointing
    summary = train(recipe, progress=False, say=lambda _s: None)
    assert summary["steps"] == 2 and summary["first_loss"] > 0
    state = json.loads((out / "adapter" / "training_state.json").read_text())
    assert state["recipe"] == name and state["step"] == 2

    # loss on the assistant's tokens only, in the family's answer format
    examples, _ = build_examples(load_rows(exported), recipe.data, load_config(None, []))
    enc = Encoder.from_pretrained(base)
    item = enc.encode(examples[0])
    answer = item["labels"][item["labels"] != -100]
    assert enc.tokenizer.decode(answer, skip_special_tokens=False).replace(" ", "") == \
        (examples[0].completion + "<|im_end|>").replace(" ", "")
    assert int(item["prompt_len"]) == int((item["labels"] == -100).sum())  # every prompt token is masked
    if recipe.data.policy_kind == "uitars":
        assert examples[0].completion.startswith("Thought:") or "Action: click(" in examples[0].completion
    else:
        assert json.loads(examples[0].completion)["action"]["type"] == "click"

    # LoRA only where the recipe says (language-model projections), nothing in the vision tower
    cfg = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert cfg["r"] == recipe.lora.r and not cfg.get("modules_to_save")
    from safetensors import safe_open
    with safe_open(str(out / "adapter" / "adapter_model.safetensors"), "pt") as fh:
        keys = list(fh.keys())
        moved = any(fh.get_tensor(k).abs().max() > 0 for k in keys if "lora_B" in k)
    assert moved  # lora_B starts at zero: the 2 optimizer steps changed it
    assert keys and all("language_model" in k and "lora_" in k for k in keys)
    assert not any("visual" in k for k in keys)

    # the adapter merges: merged logits = base + adapter logits; the merged model converts (manifest last)
    batch = enc.collate([enc.encode(e) for e in examples[:2]])
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        adapted = PeftModel.from_pretrained(AutoModelForImageTextToText.from_pretrained(str(base)),
                                            str(out / "adapter")).eval()(**inputs).logits
        merged = AutoModelForImageTextToText.from_pretrained(str(out / "merged")).eval()(**inputs).logits
    assert (merged.float() - adapted.float()).abs().max() < 5e-2  # merged in bf16, as the recipe says
    manifest = json.loads((out / "manifest.json").read_text())
    assert (out / manifest["gguf"]["model"]).stat().st_size > 10_000
    assert (out / manifest["gguf"]["mmproj"]).stat().st_size > 10_000
