"""Training recipes: `configs/train/*.yaml` composed with Hydra, validated by pydantic (unknown keys fail).

    from training.recipe import load_recipe
    recipe = load_recipe("tiny_cpu", ["data.path=/tmp/ds", "output.dir=/tmp/out"])

Validation never builds a model: `tests/training/test_train_configs.py` checks every
shipped recipe against this code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from conway.errors import UserError
from conway.policies.families import ARCHITECTURES
from training.data import DataSettings

REPO = Path(__file__).resolve().parent.parent
RECIPES_DIR = REPO / "configs" / "train"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class ModelSettings(_Section):
    path: str
    """Local folder of the base model in Hugging Face format (config.json + weights). Never a hub download."""
    family: Literal[tuple(ARCHITECTURES)] = "qwen2-vl"  # type: ignore[valid-type]  # the registry's architectures
    """Architecture of the base model (conway.policies.families): decides the default LoRA targets, whether the
    weights need their own code (trust_remote_code) and whether llama.cpp can convert them."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weights' dtype while training (bfloat16 on a GPU, float32 on a CPU)."""
    attn_implementation: Literal["eager", "sdpa", "flash_attention_2"] | None = None
    """Attention kernel (None: transformers' default)."""
    trust_remote_code: bool = False
    """Run the model repository's own Python code (OpenCUA needs it; read that code first)."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass: less memory, ~30% slower (7B models on one GPU)."""


class LoraSettings(_Section):
    r: int = Field(default=16, ge=1)
    """LoRA rank."""
    alpha: float = Field(default=32, gt=0)
    """LoRA scaling numerator (the update is scaled by alpha / r)."""
    dropout: float = Field(default=0.0, ge=0, lt=1)
    """Dropout on the LoRA input."""
    target_modules: str | list[str] | None = None
    """Modules that get LoRA adapters: a regex over module names, or a list of name suffixes (None: the
    architecture's default, model.family)."""
    modules_to_save: list[str] = Field(default_factory=list)
    """Modules trained in full and saved with the adapter (e.g. lm_head, the vision merger)."""


class TrainSettings(_Section):
    lr: float = Field(default=2e-4, gt=0)
    """Peak learning rate (AdamW)."""
    weight_decay: float = Field(default=0.0, ge=0)
    """AdamW weight decay."""
    lr_schedule: Literal["constant", "cosine", "linear"] = "cosine"
    """Learning-rate schedule after warm-up."""
    warmup_steps: int = Field(default=0, ge=0)
    """Linear warm-up steps."""
    max_steps: int = Field(default=1000, ge=1)
    """Optimizer steps (each = batch_size x grad_accum examples)."""
    max_seconds: float | None = Field(default=None, gt=0)
    """Stop after this much wall time even before max_steps (None: no limit)."""
    batch_size: int = Field(default=8, ge=1)
    """Examples per forward pass (per device)."""
    grad_accum: int = Field(default=1, ge=1)
    """Forward passes per optimizer step."""
    max_grad_norm: float | None = Field(default=1.0, gt=0)
    """Gradient clipping (None: off)."""
    seed: int = 0
    """Seed of weights' LoRA init, data order and sampling."""
    threads: int | None = Field(default=None, ge=1)
    """torch CPU threads (1 is fastest on a busy 2-core machine; None: torch's default)."""
    log_every: int = Field(default=10, ge=1)
    """Steps between progress-bar / metrics.jsonl loss records."""
    eval_every: int = Field(default=100, ge=1)
    """Steps between held-out checks (eval loss and, when targets have boxes, hit rate)."""
    eval_generate: int = Field(default=32, ge=0)
    """Held-out examples answered by greedy decoding at each check (0: loss only)."""
    early_stop_hits: float | None = Field(default=None, gt=0, le=1)
    """Stop once the held-out hit rate reaches this (None: never stop early)."""
    save_every: int | None = Field(default=None, ge=1)
    """Steps between intermediate adapter checkpoints (None: only the final one)."""
    short_prompt_steps: int = Field(default=0, ge=0)
    """Curriculum: the first N steps train on the end of the prompt only (last user line + image + answer),
    so a random model finds the image before the full prompt dilutes its attention (0: off)."""
    short_prompt_keep_goals: bool = False
    """The curriculum's short prompt also keeps the goals block (needed when the goal decides the answer,
    e.g. the `choose` profile; off reproduces the measured `demo`/`offcentre` runs)."""


class OutputSettings(_Section):
    dir: str | None = None
    """Where the run writes (adapter/, train/, merged/, gguf/); None: the candidate folder in the home."""
    candidate: str | None = None
    """Candidate name: output goes to $CONWAY_HOME/candidates/<name>/ (or --home) unless `dir` is set."""


class ConvertSettings(_Section):
    merge: bool = True
    """Merge the adapter into the base weights and save the merged model (merged/)."""
    gguf: bool = True
    """Convert the merged model to GGUF + mmproj for llama.cpp (gguf/), with the tiny-model builder's converter."""
    outtype: Literal["f32", "f16", "bf16", "q8_0"] = "f16"
    """GGUF weight type."""
    llama_cpp: str | None = None
    """A llama.cpp source tree with convert_hf_to_gguf.py (None: the llama-cpp-python sdist, fetched once)."""
    base_gguf: str | None = None
    """The base model's GGUF (recorded in the manifest so candidate-eval can serve the base too)."""
    base_mmproj: str | None = None
    """The base model's mmproj GGUF."""


class EvalSettings(_Section):
    size: tuple[int, int] | None = None
    """Vision-check image size candidate-eval uses by default (recorded in the manifest)."""
    profile: str = "standard"
    """Vision-check case profile candidate-eval uses by default (recorded in the manifest)."""

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        from conway.observe.vision_cases import PROFILES
        if value not in PROFILES:
            raise ValueError(f"unknown vision-check profile {value!r}; known: {', '.join(PROFILES)}")
        return value


class RLSettings(_Section):
    """The policy-gradient stage (training/grpo.py); the SFT recipe ignores this section."""

    epochs: int = Field(default=4, ge=1)
    """Passes over the rollout set's rows (offline: the rollouts are not resampled within a run)."""
    clip_eps: float = Field(default=0.2, gt=0, lt=1)
    """PPO-style clipping of the probability ratio to the rollout policy: 1 ± clip_eps."""
    kl_coef: float = Field(default=0.05, ge=0)
    """Weight of the KL penalty to the reference (the base with the adapter disabled), per answer token."""
    temperature: float | None = Field(default=None, gt=0)
    """Temperature the answers' log-probabilities are taken at (None: the rollout set's sampling temperature)."""
    clip_eps_high: float | None = Field(default=None, gt=0)
    """The ratio's upper clip, 1 + clip_eps_high (None: clip_eps). Higher than clip_eps lets a rarely sampled
    rewarded answer rise further in one round ("clip higher"); the lower clip still bounds how far any falls."""
    normalize_std: bool = True
    """Divide the advantages by a standard deviation of the rewards (GRPO); False: subtract the task's mean only."""
    std_scope: Literal["group", "batch"] = "group"
    """Whose rewards' standard deviation divides them: each task's own (GRPO: a task with a small spread weighs as
    much as one with a large), or every rollout's together (a task's weight follows its spread)."""
    negative_scale: float = Field(default=1.0, ge=0, le=1)
    """Multiply the negative advantages by this (1.0: GRPO, each task's advantages sum to 0). Below 1 a shared token
    that every answer needs (the action's type) is no longer pushed down by the many unrewarded answers more than the
    few rewarded ones raise it (asymmetric REINFORCE); 0 trains only towards the rewarded answers."""
    top_entropy_quantile: float = Field(default=1.0, gt=0, le=1)
    """Train the surrogate only on the answer tokens whose entropy under the current policy is in each batch's top
    quantile (TRL's top_entropy_quantile; 1.0: every token). An unrewarded answer is mostly right after its one
    wrong choice (the place of the colour it said): pushing all of it down unlearns the look-up along with the
    choice; the forking tokens carry the choice alone."""
    init_adapter: str | None = None
    """The rollout policy's own adapter (a candidate's adapter/ folder) to continue from; None: a fresh LoRA on the
    base (the rollout policy was the base)."""


class Recipe(_Section):
    name: str = "recipe"
    """Recipe name (recorded with every checkpoint)."""
    description: str = ""
    """One line on what the recipe is for."""
    model: ModelSettings
    data: DataSettings = DataSettings()
    lora: LoraSettings = LoraSettings()
    train: TrainSettings = TrainSettings()
    output: OutputSettings = OutputSettings()
    convert: ConvertSettings = ConvertSettings()
    eval: EvalSettings = EvalSettings()
    rl: RLSettings = RLSettings()

    @model_validator(mode="after")
    def _consistent(self) -> "Recipe":
        arch = ARCHITECTURES[self.model.family]
        if self.convert.gguf and not self.convert.merge:
            raise ValueError("convert.gguf needs convert.merge (the converter reads the merged model)")
        if arch.remote_code and not self.model.trust_remote_code:
            raise ValueError(f"model.family={arch.name} loads only with model.trust_remote_code=true (its own "
                             "modeling code)")
        if not arch.gguf and self.convert.gguf:
            raise ValueError(f"convert.gguf=false for model.family={arch.name}: llama.cpp's converter does not "
                             "know its architecture")
        if self.early_stop_needs_generation():
            raise ValueError("train.early_stop_hits needs train.eval_generate > 0")
        if self.lora.target_modules is None:
            self.lora = self.lora.model_copy(update={"target_modules": arch.lora_targets})
        return self

    def early_stop_needs_generation(self) -> bool:
        return self.train.early_stop_hits is not None and self.train.eval_generate == 0

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def recipe_names() -> list[str]:
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def compose(name: str, overrides: list[str] | None = None) -> dict[str, Any]:
    """Compose configs/train/<name>.yaml with key=value overrides (Hydra); no validation."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.exists():
        config_dir, config_name = path.resolve().parent, path.stem
    else:
        config_dir, config_name = RECIPES_DIR, name
        if not (RECIPES_DIR / f"{name}.yaml").exists():
            raise UserError(f"no recipe {name!r} in {RECIPES_DIR} (recipes: {', '.join(recipe_names())})")
    for item in overrides or []:
        if "=" not in item:
            raise UserError(f"override {item!r} must look like key=value (e.g. train.max_steps=100)")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            cfg = hydra_compose(config_name=config_name)
        OmegaConf.set_struct(cfg, False)  # unknown keys are pydantic's to reject, with a clear message
        cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist([o.lstrip("+") for o in overrides or []]))
        data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", "") or ""
        if "Missing mandatory value" in str(exc):
            raise UserError(f"recipe {name}: {key} must be set (e.g. {key}=...)") from None
        raise UserError(f"cannot compose recipe {name}: {exc}".splitlines()[0]) from None
    except (HydraException, ValueError) as exc:
        raise UserError(f"cannot compose recipe {name}: {exc}".splitlines()[0]) from None
    finally:
        GlobalHydra.instance().clear()
    assert isinstance(data, dict)
    data.pop("hydra", None)
    data.pop("defaults", None)
    return data


def validate(data: dict[str, Any], where: str = "recipe") -> Recipe:
    from conway.config import explain_validation

    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"invalid {where}:\n" + explain_validation(exc)) from None


def load_recipe(name: str, overrides: list[str] | None = None) -> Recipe:
    return validate(compose(name, overrides), f"recipe {name}")
