"""Loading a local base model for training or merging (never from a hub)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.errors import UserError
from training.recipe import Recipe

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def check_base_model(path: str) -> Path:
    """A local model folder with config.json and weights; UserError otherwise (never a hub download)."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise UserError(f"base model folder {p} does not exist (model.path must be a local Hugging Face folder; "
                        "download it yourself first, Conway never fetches weights)")
    if not (p / "config.json").is_file():
        raise UserError(f"base model folder {p} has no config.json")
    if not any((p / f).is_file() for f in WEIGHT_FILES) and not list(p.glob("*.safetensors")):
        raise UserError(f"base model folder {p} has no weights (no model*.safetensors or pytorch_model*.bin)")
    return p


def load_model(recipe: Recipe, path: Path) -> Any:
    import torch
    from transformers import AutoModelForImageTextToText

    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[recipe.model.dtype]
    kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": recipe.model.trust_remote_code}
    if recipe.model.attn_implementation:
        kwargs["attn_implementation"] = recipe.model.attn_implementation
    try:
        try:
            model = AutoModelForImageTextToText.from_pretrained(str(path), **kwargs)
        except ValueError:
            if not recipe.model.trust_remote_code:
                raise
            from transformers import AutoModel  # remote-code models (OpenCUA) register only AutoModel
            model = AutoModel.from_pretrained(str(path), **kwargs)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot load the base model from {path}: {str(exc).splitlines()[0]}") from None
    if recipe.model.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    return model
