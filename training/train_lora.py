""".venv/bin/python -m training.train_lora --recipe tiny_cpu data.path=DATASET output.candidate=NAME [key=value ...]

LoRA fine-tuning of a VLM policy on exported Conway experience.

    recipe     configs/train/<name>.yaml composed with Hydra, validated by
               training/recipe.py (unknown keys fail, contradictions fail)
    data       `conway export --format hf` folder (or conway-traj JSONL), turned
               into rows by training/data.py: the policy's own prompt, the
               image through the loop's resize rule and the model's processor,
               the target turn in the family's format; loss on the answer only
    model      transformers AutoModelForImageTextToText from a local folder +
               peft LoRA (plus `modules_to_save` trained in full)
    loop       a plain AdamW loop under accelerate: seeded, tqdm progress,
               held-out loss and (for targets with boxes) held-out hit rate,
               optional early stop; multi-GPU with
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
import math
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python training/train_lora.py` as well as `python -m training.train_lora`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conway.errors import UserError
from training.data import Encoder, Example, build_examples, data_hash, load_rows, split
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


# --- evaluation on held-out rows -------------------------------------------------------


def generate_answers(model: Any, encoder: Encoder, examples: list[Example], max_new_tokens: int = 48) -> list[str]:
    import torch

    outs = []
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for ex in examples:
            enc = encoder.encode(ex, with_completion=False)
            ids = enc["input_ids"].unsqueeze(0)
            kwargs = {k: enc[k] for k in ("pixel_values", "image_grid_thw") if k in enc}
            gen = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                 mm_token_type_ids=(ids == encoder.image_token_id).long(),
                                 max_new_tokens=max_new_tokens, do_sample=False,
                                 eos_token_id=encoder.tokenizer.convert_tokens_to_ids(encoder.end_of_turn),
                                 pad_token_id=encoder.pad_id, **kwargs)
            outs.append(encoder.tokenizer.decode(gen[0, ids.shape[1]:], skip_special_tokens=True))
    if was_training:
        model.train()
    return outs


def score_answers(answers: list[str], examples: list[Example], policy_kind: str) -> dict[str, Any]:
    """Hit rate of answers against the rows' target boxes (parsed by the family's own parser, in the
    coordinate convention each row's target was written in)."""
    from conway.geometry import Convention
    from conway.policies.families import get_family

    adapter = get_family(policy_kind).adapter()
    hits = scored = 0
    distinct = set()
    for text, ex in zip(answers, examples):
        box = ex.meta.get("target_box")
        if not box:
            continue
        scored += 1
        distinct.add(text.strip())
        parsed = adapter.parse(text, convention=Convention(ex.meta["convention"]),
                               sent_size=tuple(ex.meta["sent_size"]), captured_size=tuple(ex.meta["captured_size"]))
        act = parsed.actions[0] if parsed.actions else None
        x, y = getattr(act, "x", None), getattr(act, "y", None)
        if x is not None and box[0] <= x <= box[2] and box[1] <= y <= box[3]:
            hits += 1
    return {"hits": hits, "scored": scored, "hit_rate": hits / scored if scored else None,
            "distinct_answers": len(distinct)}


def eval_loss(model: Any, encoder: Encoder, encoded: list[dict[str, Any]], batch_size: int) -> float | None:
    import torch

    if not encoded:
        return None
    was_training = model.training
    model.eval()
    total = n = 0.0
    with torch.no_grad():
        for i in range(0, len(encoded), batch_size):
            batch = encoder.collate(encoded[i:i + batch_size])
            batch = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in batch.items()}
            loss = model(**batch).loss
            total += float(loss) * len(encoded[i:i + batch_size])
            n += len(encoded[i:i + batch_size])
    if was_training:
        model.train()
    return total / n


# --- the run ---------------------------------------------------------------------------


def lr_at(step: int, recipe: Recipe) -> float:
    t = recipe.train
    if t.warmup_steps and step < t.warmup_steps:
        return t.lr * (step + 1) / t.warmup_steps
    if t.lr_schedule == "constant":
        return t.lr
    progress = (step - t.warmup_steps) / max(1, t.max_steps - t.warmup_steps)
    if t.lr_schedule == "linear":
        return t.lr * max(0.0, 1 - progress)
    return t.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


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


def train(recipe: Recipe, *, home: str | None = None, progress: bool = True,
          say: Any = print) -> dict[str, Any]:
    """Run one recipe end to end (train → save adapter → merge → convert → manifest). Returns a summary."""
    import torch
    from accelerate import Accelerator
    from tqdm import tqdm

    if recipe.train.threads:
        torch.set_num_threads(recipe.train.threads)
    if not recipe.data.path:
        raise UserError("set data.path=FOLDER (a `conway export --format hf` folder or a conway-traj JSONL file)")
    base = check_base_model(recipe.model.path)
    out = output_dir(recipe, home)
    if (out / "manifest.json").exists() or (out / "adapter").exists():
        raise UserError(f"{out} already holds a trained candidate; choose a new output.candidate / output.dir")
    started = time.time()
    seed_everything(recipe.train.seed)

    from conway.config import load_config
    config = load_config(None, [])
    rows = load_rows(recipe.data.path)
    examples, skipped = build_examples(rows, recipe.data, config)
    train_ex, eval_ex = split(examples, recipe.data.eval_fraction)
    if not train_ex:
        raise UserError(f"only {len(examples)} usable row(s): too few to hold any out and still train")
    digest = data_hash(recipe.data.path)
    say(f"data: {len(rows)} row(s) → {len(train_ex)} train / {len(eval_ex)} held out"
        + (f"; skipped {skipped}" if skipped else "") + f"; sha256 {digest[:12]}")

    encoder = Encoder.from_pretrained(base)
    encoded_train = [encoder.encode(e) for e in train_ex]
    encoded_short = ([encoder.encode(e.short(recipe.train.short_prompt_keep_goals)) for e in train_ex]
                     if recipe.train.short_prompt_steps else [])
    encoded_eval = [encoder.encode(e) for e in eval_ex]
    seq = max(len(e["input_ids"]) for e in encoded_train)
    say(f"tokens per example: up to {seq} (prompt + image + answer; loss on the answer only)")

    model = add_lora(load_model(recipe, base), recipe)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    say(f"model: {base.name} ({total:,} parameters, {trainable:,} trainable = {trainable / total:.1%})")

    # accelerate keeps one process-wide state; another trainer in this process (TRL's, an earlier run)
    # may have set it differently, and Accelerator() refuses to change it: start from a clean one
    from accelerate.state import AcceleratorState
    AcceleratorState._reset_state(reset_partial_state=True)
    accelerator = Accelerator(gradient_accumulation_steps=recipe.train.grad_accum,
                              mixed_precision="bf16" if recipe.model.dtype == "bfloat16" and torch.cuda.is_available()
                              else "no")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=recipe.train.lr, weight_decay=recipe.train.weight_decay)
    sampler_gen = torch.Generator().manual_seed(recipe.train.seed)
    loader = torch.utils.data.DataLoader(encoded_train, batch_size=recipe.train.batch_size, shuffle=True,
                                         collate_fn=encoder.collate, generator=sampler_gen, drop_last=False)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    short_loader = None
    if encoded_short:
        short_loader = accelerator.prepare(torch.utils.data.DataLoader(
            encoded_short, batch_size=recipe.train.batch_size, shuffle=True, collate_fn=encoder.collate,
            generator=torch.Generator().manual_seed(recipe.train.seed + 1), drop_last=False))
        say(f"curriculum: the first {recipe.train.short_prompt_steps} steps use the end of the prompt only "
            f"(up to {max(len(e['input_ids']) for e in encoded_short)} tokens)")
    model.train()

    out.mkdir(parents=True, exist_ok=True)
    (out / "train").mkdir(exist_ok=True)
    metrics: list[dict[str, Any]] = []
    metrics_path = out / "train" / "metrics.jsonl"
    step = 0
    stop_reason = "max_steps"
    t0 = time.time()
    bar = tqdm(total=recipe.train.max_steps, desc="train", unit="step", disable=not progress or
               not accelerator.is_main_process, file=sys.stderr)
    first_loss = last_loss = None
    best_hits: float | None = None

    def record(entry: dict[str, Any]) -> None:
        metrics.append(entry)
        with open(metrics_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")

    def check(step: int) -> dict[str, Any]:
        entry: dict[str, Any] = {"step": step, "t": round(time.time() - t0, 2),
                                 "eval_loss": eval_loss(model, encoder, encoded_eval, recipe.train.batch_size)}
        if recipe.train.eval_generate and eval_ex:
            sample = eval_ex[: recipe.train.eval_generate]
            answers = generate_answers(accelerator.unwrap_model(model), encoder, sample)
            entry.update(score_answers(answers, sample, recipe.data.policy_kind))
            entry["example_answer"] = answers[0][:200] if answers else None
        record(entry)
        return entry

    try:
        while step < recipe.train.max_steps and stop_reason == "max_steps":
            phase = short_loader if short_loader is not None and step < recipe.train.short_prompt_steps else loader
            for batch in phase:
                with accelerator.accumulate(model):
                    for g in opt.param_groups:
                        g["lr"] = lr_at(step, recipe)
                    loss = model(**batch).loss
                    accelerator.backward(loss)
                    if recipe.train.max_grad_norm and accelerator.sync_gradients:
                        accelerator.clip_grad_norm_(params, recipe.train.max_grad_norm)
                    opt.step()
                    opt.zero_grad()
                if not accelerator.sync_gradients:
                    continue
                step += 1
                last_loss = float(loss.detach())
                first_loss = last_loss if first_loss is None else first_loss
                bar.update(1)
                if step % recipe.train.log_every == 0 or step == 1:
                    record({"step": step, "loss": round(last_loss, 5), "lr": lr_at(step - 1, recipe),
                            "t": round(time.time() - t0, 2)})
                    bar.set_postfix(loss=f"{last_loss:.3f}", refresh=False)
                if step % recipe.train.eval_every == 0:
                    entry = check(step)
                    if entry.get("hit_rate") is not None:
                        best_hits = max(best_hits or 0.0, entry["hit_rate"])
                        bar.write(f"step {step}: held-out hits {entry['hits']}/{entry['scored']} "
                                  f"({entry['hit_rate']:.0%}), eval loss {entry['eval_loss']:.3f}, "
                                  f"{entry['distinct_answers']} distinct answers")
                        if recipe.train.early_stop_hits and entry["hit_rate"] >= recipe.train.early_stop_hits:
                            stop_reason = f"early stop: held-out hit rate {entry['hit_rate']:.0%}"
                if recipe.train.save_every and step % recipe.train.save_every == 0:
                    save_adapter(accelerator.unwrap_model(model), out / "checkpoints" / f"step-{step}", recipe,
                                 digest, step, last_loss)
                if recipe.train.max_seconds and time.time() - t0 >= recipe.train.max_seconds:
                    stop_reason = f"max_seconds ({recipe.train.max_seconds:g} s)"
                if step >= recipe.train.max_steps or stop_reason != "max_steps":
                    break
                if phase is short_loader and step >= recipe.train.short_prompt_steps:
                    break  # the curriculum's first phase is over: continue on the full prompt
    finally:
        bar.close()
    train_s = time.time() - t0
    final = metrics[-1] if metrics and "eval_loss" in metrics[-1] and metrics[-1]["step"] == step else check(step)
    accelerator.wait_for_everyone()
    summary: dict[str, Any] = {"steps": step, "stop_reason": stop_reason, "train_s": round(train_s, 1),
                               "first_loss": first_loss, "final_loss": last_loss,
                               "final_eval_loss": final.get("eval_loss"), "held_out_hit_rate": final.get("hit_rate"),
                               "held_out_scored": final.get("scored"), "best_held_out_hit_rate": best_hits,
                               "train_examples": len(train_ex), "eval_examples": len(eval_ex),
                               "data_sha256": digest, "recipe": recipe.name, "recipe_sha256": recipe.digest()}
    if not accelerator.is_main_process:
        return summary
    unwrapped = accelerator.unwrap_model(model)
    save_adapter(unwrapped, out / "adapter", recipe, digest, step, last_loss)
    write_learning_curve(metrics, out / "train" / "learning_curve.png",
                         f"{recipe.name}: {len(train_ex)} rows, {step} steps")
    (out / "train" / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    say(f"trained {step} steps in {train_s:.0f} s ({stop_reason}); loss {first_loss:.3f} → {last_loss:.3f}"
        + (f"; held-out hits {final['hits']}/{final['scored']}" if final.get("scored") else ""))
    if recipe.convert.merge:
        from training.merge_convert import finish_candidate
        finish_candidate(unwrapped, base, out, recipe, summary, say=say)
    summary["wall_s"] = round(time.time() - started, 1)
    return summary


def save_adapter(model: Any, folder: Path, recipe: Recipe, digest: str, step: int, loss: float | None) -> None:
    """The adapter plus what made it: the resolved recipe and the data's hash."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    (folder / "recipe.yaml").write_text(yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False),
                                        encoding="utf-8")
    (folder / "training_state.json").write_text(json.dumps({
        "step": step, "loss": loss, "data_sha256": digest, "recipe": recipe.name,
        "recipe_sha256": recipe.digest(), "base_model": str(Path(recipe.model.path).expanduser()),
        "versions": versions()}, indent=2) + "\n", encoding="utf-8")


def versions() -> dict[str, str]:
    out = {}
    for name in ("torch", "transformers", "peft", "accelerate", "datasets"):
        try:
            out[name] = __import__(name).__version__
        except Exception:
            pass
    return out


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
