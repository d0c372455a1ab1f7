""".venv/bin/python -m training.train_lora --recipe tiny_cpu data.path=DATASET output.candidate=NAME [key=value ...]

LoRA fine-tuning of a VLM policy on exported Conway experience.

    recipe     configs/train/<name>.yaml composed with Hydra, validated by
               training/recipe.py (unknown keys fail, contradictions fail)
    data       `conway export --format hf` folder (or conway-traj JSONL), turned
               into rows by training/data.py; or a rollout set (`conway rollouts`):
               its successful rollouts' requests as sent, the model's own answers
               as completions (rejection-sampling SFT, training/rollout_data.py);
               otherwise rows are: the policy's own prompt, the
               image through the loop's resize rule and the model's processor,
               the target turn in the family's format; loss on the answer only
    model      transformers AutoModelForImageTextToText from a local folder +
               peft LoRA (plus `modules_to_save` trained in full)
    loop       a plain AdamW loop under accelerate (training/loop.py): seeded,
               tqdm progress, held-out loss and (for targets with boxes)
               held-out hit rate (training/held_out.py), optional early stop;
               multi-GPU with
                   accelerate launch -m training.train_lora --recipe qwen2.5-vl-7b ...
    output     OUT/adapter/ (+ recipe.yaml, training_state.json with the data
               hash), OUT/train/metrics.jsonl and learning_curve.png; then
               training/merge_convert.py merges, saves OUT/merged/ and converts
               to OUT/gguf/{model,mmproj}.gguf; OUT/manifest.json is written last.

With output.candidate=NAME, OUT is $CONWAY_HOME/candidates/NAME (or --home).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python training/train_lora.py` as well as `python -m training.train_lora`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conway.errors import UserError
from training.data import Encoder, Example, build_examples, data_hash, load_rows, split
from training.held_out import HeldOut
from training.loop import Prepared, TrainLoop, save_adapter
from training.model_load import check_base_model, load_model
from training.recipe import Recipe, load_recipe

# --- setup ---------------------------------------------------------------------------


def output_dir(recipe: Recipe, home_arg: str | None) -> Path:
    if recipe.output.dir:
        return Path(recipe.output.dir).expanduser()
    if not recipe.output.candidate:
        raise UserError("set output.candidate=NAME (a candidate under the home) or output.dir=FOLDER")
    from conway.store.home import resolve_home, validate_name
    home = resolve_home(home_arg)
    return home.candidates / validate_name(recipe.output.candidate, "candidate name")


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def add_lora(model: Any, recipe: Recipe) -> Any:
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=recipe.lora.r, lora_alpha=recipe.lora.alpha, lora_dropout=recipe.lora.dropout,
                     target_modules=recipe.lora.target_modules, modules_to_save=recipe.lora.modules_to_save or None,
                     bias="none")
    try:
        return get_peft_model(model, cfg)
    except ValueError as exc:
        raise UserError(f"lora settings do not fit this model: {exc}") from None


# --- outputs ---------------------------------------------------------------------------


def write_learning_curve(metrics: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [(m["step"], m["loss"]) for m in metrics if "loss" in m]
    evals = [(m["step"], m["eval_loss"]) for m in metrics if m.get("eval_loss") is not None]
    hits = [(m["step"], m["hit_rate"]) for m in metrics if m.get("hit_rate") is not None]
    fig, ax = plt.subplots(figsize=(7, 4))
    if train:
        ax.plot(*zip(*train), label="train loss", color="tab:blue")
    if evals:
        ax.plot(*zip(*evals), "o-", label="held-out loss", color="tab:orange")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    if hits:
        ax2 = ax.twinx()
        ax2.plot(*zip(*hits), "s-", label="held-out hit rate", color="tab:green")
        ax2.set_ylim(0, 1.02)
        ax2.set_ylabel("hit rate")
        ax2.legend(loc="upper right")
    ax.legend(loc="upper left")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --- the run ---------------------------------------------------------------------------


@dataclass
class Corpus:
    """The dataset's usable examples, split, and the hash of the data they came from."""

    train: list[Example]
    held_out: list[Example]
    digest: str


@dataclass
class Encoded:
    """Model inputs: the training rows, their short-prompt twins for the curriculum (empty without one), the
    held-out rows, and the encoder that made them (its collate batches them)."""

    encoder: Encoder
    train: list[dict[str, Any]]
    short: list[dict[str, Any]]
    held_out: HeldOut


def train(recipe: Recipe, *, home: str | None = None, progress: bool = True,
          say: Any = print) -> dict[str, Any]:
    """Run one recipe end to end (train → save adapter → merge → convert → manifest). Returns a summary."""
    import torch

    if recipe.train.threads:
        torch.set_num_threads(recipe.train.threads)
    base, out = check_inputs(recipe, home)
    started = time.time()
    seed_everything(recipe.train.seed)
    corpus = load_corpus(recipe, say)
    encoded = encode_corpus(base, corpus, recipe, say)
    prepared = prepare_training(build_model(recipe, base, say), encoded, recipe, say)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train").mkdir(exist_ok=True)
    loop = TrainLoop(recipe, prepared, encoded.held_out, out, corpus.digest, progress=progress)
    loop.run()
    train_s = time.time() - loop.t0
    final = loop.final_check()
    prepared.accelerator.wait_for_everyone()
    summary = summarize(recipe, loop, corpus, train_s, final)
    if not prepared.accelerator.is_main_process:
        return summary
    save_candidate(recipe, loop, base, out, summary, train_s, final, say)
    summary["wall_s"] = round(time.time() - started, 1)
    return summary


def check_inputs(recipe: Recipe, home: str | None) -> tuple[Path, Path]:
    """The base model's folder and the output folder, refused before any work when they cannot be used."""
    if not recipe.data.path:
        raise UserError("set data.path=FOLDER (a `conway export --format hf` folder or a conway-traj JSONL file)")
    base = check_base_model(recipe.model.path)
    out = output_dir(recipe, home)
    if (out / "manifest.json").exists() or (out / "adapter").exists():
        raise UserError(f"{out} already holds a trained candidate; choose a new output.candidate / output.dir")
    return base, out


def load_corpus(recipe: Recipe, say: Any) -> Corpus:
    from conway.config import load_config
    from training.rollout_data import is_rollout_set, rollout_examples

    if is_rollout_set(recipe.data.path):  # rejection sampling: the successful rollouts' requests, as they were sent
        examples, skipped = rollout_examples(recipe.data.path)
        rows: list[Any] = examples
    else:
        rows = load_rows(recipe.data.path)
        examples, skipped = build_examples(rows, recipe.data, load_config(None, []))
    train_ex, eval_ex = split(examples, recipe.data.eval_fraction)
    if not train_ex:
        raise UserError(f"only {len(examples)} usable row(s): too few to hold any out and still train")
    digest = data_hash(recipe.data.path)
    say(f"data: {len(rows)} row(s) → {len(train_ex)} train / {len(eval_ex)} held out"
        + (f"; skipped {skipped}" if skipped else "") + f"; sha256 {digest[:12]}")
    return Corpus(train=train_ex, held_out=eval_ex, digest=digest)


def encode_corpus(base: Path, corpus: Corpus, recipe: Recipe, say: Any) -> Encoded:
    """Every example through the base model's tokenizer and image processor, once."""
    encoder = Encoder.from_pretrained(base)
    encoded_train = [encoder.encode(e) for e in corpus.train]
    encoded_short = ([encoder.encode(e.short(recipe.train.short_prompt_keep_goals)) for e in corpus.train]
                     if recipe.train.short_prompt_steps else [])
    held_out = HeldOut(encoder, corpus.held_out, [encoder.encode(e) for e in corpus.held_out])
    seq = max(len(e["input_ids"]) for e in encoded_train)
    say(f"tokens per example: up to {seq} (prompt + image + answer; loss on the answer only)")
    return Encoded(encoder=encoder, train=encoded_train, short=encoded_short, held_out=held_out)


def build_model(recipe: Recipe, base: Path, say: Any) -> Any:
    model = add_lora(load_model(recipe, base), recipe)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    say(f"model: {base.name} ({total:,} parameters, {trainable:,} trainable = {trainable / total:.1%})")
    return model


def prepare_training(model: Any, encoded: Encoded, recipe: Recipe, say: Any) -> Prepared:
    """Accelerator, AdamW over the trainable parameters and seeded data loaders, prepared by accelerate."""
    import torch
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    # accelerate keeps one process-wide state; another trainer in this process (TRL's, an earlier run)
    # may have set it differently, and Accelerator() refuses to change it: start from a clean one
    AcceleratorState._reset_state(reset_partial_state=True)
    t = recipe.train
    accelerator = Accelerator(gradient_accumulation_steps=t.grad_accum,
                              mixed_precision="bf16" if recipe.model.dtype == "bfloat16" and torch.cuda.is_available()
                              else "no")
    collate = encoded.encoder.collate
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=t.lr, weight_decay=t.weight_decay)
    sampler_gen = torch.Generator().manual_seed(t.seed)
    loader = torch.utils.data.DataLoader(encoded.train, batch_size=t.batch_size, shuffle=True,
                                         collate_fn=collate, generator=sampler_gen, drop_last=False)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    short_loader = None
    if encoded.short:
        short_loader = accelerator.prepare(torch.utils.data.DataLoader(
            encoded.short, batch_size=t.batch_size, shuffle=True, collate_fn=collate,
            generator=torch.Generator().manual_seed(t.seed + 1), drop_last=False))
        say(f"curriculum: the first {t.short_prompt_steps} steps use the end of the prompt only "
            f"(up to {max(len(e['input_ids']) for e in encoded.short)} tokens)")
    model.train()
    return Prepared(accelerator=accelerator, model=model, opt=opt, params=params, loader=loader,
                    short_loader=short_loader)


def summarize(recipe: Recipe, loop: TrainLoop, corpus: Corpus, train_s: float, final: dict[str, Any]) -> dict[str, Any]:
    from training.rollout_data import is_rollout_set, rollout_provenance

    rollouts = ({"rollouts": rollout_provenance(recipe.data.path, "rejection-sampling-sft")}
                if is_rollout_set(recipe.data.path) else {})
    return {**rollouts, "steps": loop.step, "stop_reason": loop.stop_reason, "train_s": round(train_s, 1),
            "first_loss": loop.first_loss, "final_loss": loop.last_loss,
            "final_eval_loss": final.get("eval_loss"), "held_out_hit_rate": final.get("hit_rate"),
            "held_out_scored": final.get("scored"), "best_held_out_hit_rate": loop.best_hits,
            "train_examples": len(corpus.train), "eval_examples": len(corpus.held_out),
            "data_sha256": corpus.digest, "recipe": recipe.name, "recipe_sha256": recipe.digest()}


def save_candidate(recipe: Recipe, loop: TrainLoop, base: Path, out: Path, summary: dict[str, Any],
                   train_s: float, final: dict[str, Any], say: Any) -> None:
    """adapter/, the learning curve and train/summary.json; then (when the recipe merges) merged/, GGUF and
    manifest.json, which training/merge_convert.py writes last."""
    unwrapped = loop.prepared.accelerator.unwrap_model(loop.prepared.model)
    save_adapter(unwrapped, out / "adapter", recipe, summary["data_sha256"], loop.step, loop.last_loss)
    write_learning_curve(loop.metrics, out / "train" / "learning_curve.png",
                         f"{recipe.name}: {summary['train_examples']} rows, {loop.step} steps")
    (out / "train" / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    say(f"trained {loop.step} steps in {train_s:.0f} s ({loop.stop_reason}); loss {loop.first_loss:.3f} → "
        f"{loop.last_loss:.3f}"
        + (f"; held-out hits {final['hits']}/{final['scored']}" if final.get("scored") else ""))
    if recipe.convert.merge:
        from training.merge_convert import finish_candidate
        finish_candidate(unwrapped, base, out, recipe, summary, say=say)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="train_lora", description=__doc__.splitlines()[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", required=True, help="a name in configs/train/ (e.g. tiny_cpu) or a YAML path")
    parser.add_argument("--home", help="Conway home for output.candidate (default: $CONWAY_HOME or ~/.conway)")
    parser.add_argument("--print-recipe", action="store_true", help="print the resolved recipe and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    args = parser.parse_args(argv)
    try:
        recipe = load_recipe(args.recipe, args.overrides)
        if args.print_recipe:
            import yaml
            print(yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False), end="")
            return 0
        train(recipe, home=args.home, progress=not args.quiet)
    except UserError as exc:
        sys.stderr.write(f"train_lora: error: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
