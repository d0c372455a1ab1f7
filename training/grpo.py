""".venv/bin/python -m training.grpo --recipe grpo_tiny_cpu model.path=HF_DIR data.path=ROLLOUTS output.candidate=NAME

A GRPO-style policy-gradient stage on the LoRA, offline, from a rollout set's rewards (no labelled action).

    data       a rollout set (`conway rollouts`): per task its K rollouts, each with its reward (the task
               checker's score) and the requests its policy sent (training/rollout_data.py)
    advantage  group-relative: a rollout's reward minus its task's mean reward, divided by their standard
               deviation (rl.normalize_std; rl.std_scope=batch: the deviation of every rollout's reward, so a
               task's weight follows its spread); rewards may be partial (a checker that scores parts, e.g.
               0.25 for another target: conway.tasks.evaluate); a task whose K rewards are all equal has no signal and is left
               out; when no task has any, nothing is trained and no candidate is written (said, exit 2)
               rl.negative_scale < 1 scales the negative advantages down (asymmetric: the group no longer sums
               to 0, it leans on the rewarded answers; 0 is reward-weighted imitation of them)
    actions    the tokens of the model's own answers (each request's raw answer, as sampled)
    objective  per answer token: min(ratio * A, clip(ratio, 1 - rl.clip_eps, 1 + rl.clip_eps_high) * A)
               - rl.kl_coef * KL (clip_eps_high defaults to clip_eps), where
               ratio = pi / pi_rollout (the model as loaded, before any update: the rollout policy) and KL
               the k3 estimate against the reference, the base with the adapter disabled; with
               rl.top_entropy_quantile < 1 the surrogate only on each batch's highest-entropy answer tokens, where
               the policy chose (an answer's colour word), not where that choice fixed the rest (its place)
    model      the base + a fresh LoRA (the rollout policy was the base), or the rollout policy's own adapter
               (rl.init_adapter: a candidate's adapter/, the on-policy iteration) trained further
    output     as training/train_lora.py: adapter/, train/metrics.jsonl (loss, KL, clipped share per step) and
               learning_curve.png, merged/, gguf/, and manifest.json last, naming the rollouts, their rewards,
               the recipe and the rollout policy (`rollouts`)

The log-probabilities are the transformers model's; the rollouts were sampled by its GGUF through llama.cpp
(f32 for the tiny model: the same numbers up to rounding) and, for the generic family, under its answer
grammar: the ratio's denominator is the unconstrained model's probability of the constrained answer.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conway.errors import UserError
from training.data import Encoder, Example, data_hash
from training.recipe import Recipe, load_recipe

NO_SIGNAL = ("no signal: every task's rollouts got the same reward, so every group-relative advantage is 0; "
             "nothing was trained and no candidate written")


@dataclass
class Scored:
    """One answer to learn from: its row and its rollout's advantage."""

    example: Example
    advantage: float


def advantages(rewards: list[float], normalize_std: bool, std: float | None = None) -> list[float] | None:
    """Group-relative advantages of one task's K rewards; None when they are all equal (no signal). `std`: the
    divisor when it is not the group's own (rl.std_scope=batch)."""
    if len(rewards) < 2 or len(set(rewards)) == 1:
        return None
    mean = statistics.fmean(rewards)
    scale = (std if std is not None else statistics.pstdev(rewards)) if normalize_std else 1.0
    return [(r - mean) / (scale or 1.0) for r in rewards]


def scored_rows(path: str, recipe: Recipe, say: Any) -> tuple[list[Scored], dict[str, Any]]:
    """Every answer of every rollout of a task with signal, with its advantage; and counts for the summary."""
    from training.rollout_data import rollout_groups

    by_task, skipped = rollout_groups(path)
    rows: list[Scored] = []
    with_signal = 0
    every = [r.reward for rollouts in by_task.values() for r in rollouts]
    batch_std = statistics.pstdev(every) if recipe.rl.std_scope == "batch" and len(every) > 1 else None
    for rollouts in by_task.values():
        adv = advantages([r.reward for r in rollouts], recipe.rl.normalize_std, batch_std)
        if adv is None:
            continue
        with_signal += 1
        for r, a in zip(rollouts, adv):
            weight = a if a >= 0 else a * recipe.rl.negative_scale  # rl.negative_scale: lean on what was rewarded
            rows.extend(Scored(ex, weight) for ex in r.examples)
    counts = {"tasks": len(by_task), "tasks_with_signal": with_signal,
              "rollouts": sum(len(v) for v in by_task.values()), "rows": len(rows), "skipped": skipped}
    say(f"rollouts: {counts['rollouts']} scored rollout(s) of {counts['tasks']} task(s); {with_signal} task(s) "
        f"with signal; {len(rows)} answer(s) to learn from" + (f"; skipped {skipped}" if skipped else ""))
    return rows, counts


# --- log-probabilities ------------------------------------------------------------------------------


def token_logprobs(model: Any, batch: dict[str, Any], temperature: float, *, entropy: bool = False) -> Any:
    """log pi(answer token | everything before it), at each position; 0 where the label is -100. With `entropy`,
    also the entropy of pi at each position (detached: it only chooses tokens, rl.top_entropy_quantile)."""
    import torch

    inputs = {k: v for k, v in batch.items() if k != "labels"}
    logits = model(**inputs).logits[:, :-1].float() / temperature
    targets = batch["labels"][:, 1:]
    mask = targets != -100
    log_probs = torch.log_softmax(logits, dim=-1)
    logp = log_probs.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
    if not entropy:
        return logp
    with torch.no_grad():
        ent = -(log_probs.exp() * log_probs).sum(-1) * mask
    return logp, ent


def forking_tokens(entropy: Any, mask: Any, quantile: float) -> Any:
    """The answer tokens whose entropy is in the batch's top `quantile` (all of them at 1.0): where the policy chose
    between answers, not where one choice fixed the next token (the look-up after a colour word said). The threshold
    is the (1 - quantile) quantile of the batch's answer tokens' entropies, as TRL's `get_high_entropy_mask`
    (Wang et al. 2025, "Beyond the 80/20 rule")."""
    import torch

    valid = mask.bool()
    if quantile >= 1.0 or not valid.any():
        return valid
    threshold = torch.quantile(entropy[valid].float(), 1.0 - quantile)
    return (entropy * mask >= threshold) & valid


def fixed_logprobs(model: Any, batches: list[dict[str, Any]], temperature: float, *, reference: bool) -> list[Any]:
    """Each batch's answer log-probabilities under the model as it is now (the rollout policy) or, with
    `reference`, under the base (the adapter disabled)."""
    import contextlib

    import torch

    outs = []
    model.eval()
    with torch.no_grad(), (model.disable_adapter() if reference else contextlib.nullcontext()):
        for b in batches:
            outs.append(token_logprobs(model, b, temperature).detach())
    model.train()
    return outs


def objective(logp: Any, old: Any, ref: Any, mask: Any, adv: Any, recipe: Recipe,
              entropy: Any = None) -> tuple[Any, dict[str, float]]:
    """The clipped surrogate with a KL penalty, averaged per answer then over the batch; and its parts. With
    rl.top_entropy_quantile < 1 (and the current policy's `entropy` per token) the surrogate is kept only on the
    forking tokens (`forking_tokens`); the KL and the per-answer normalisation stay on every answer token (TRL)."""
    import torch

    ratio = torch.exp(logp - old)
    a = adv.unsqueeze(-1)
    eps = recipe.rl.clip_eps
    high = recipe.rl.clip_eps_high if recipe.rl.clip_eps_high is not None else eps
    surrogate = torch.min(ratio * a, torch.clamp(ratio, 1 - eps, 1 + high) * a)
    quantile = recipe.rl.top_entropy_quantile
    if quantile < 1.0:
        if entropy is None:
            raise ValueError("rl.top_entropy_quantile < 1 needs the policy's entropy per token")
        surrogate = surrogate * forking_tokens(entropy, mask, quantile)
    log_ref_ratio = ref - logp
    kl = torch.exp(log_ref_ratio) - log_ref_ratio - 1  # k3: unbiased, >= 0
    per_token = -(surrogate - recipe.rl.kl_coef * kl) * mask
    n = mask.sum(-1).clamp(min=1)
    loss = (per_token.sum(-1) / n).mean()
    # the tokens whose gradient the clip cuts: above the band with a positive advantage, below it with a negative
    # one (outside the band on the other side the min takes the unclipped term, whose gradient flows)
    clipped = (((ratio > 1 + high) & (a > 0)) | ((ratio < 1 - eps) & (a < 0))) & mask.bool()
    with torch.no_grad():
        parts = {"kl": float(((kl * mask).sum(-1) / n).mean()),
                 "clipped": float(clipped.sum() / mask.sum().clamp(min=1)),
                 "ratio": float(((ratio * mask).sum(-1) / n).mean())}
    return loss, parts


# --- the run -----------------------------------------------------------------------------------------


def batches_of(encoder: Encoder, rows: list[Scored], size: int, seed: int) -> list[dict[str, Any]]:
    """Fixed batches (each with its rows' advantages): the reference and rollout log-probs are taken once per
    batch and the batches reshuffled each epoch."""
    import torch

    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    out = []
    for i in range(0, len(order), size):
        part = [rows[j] for j in order[i:i + size]]
        batch = encoder.collate([encoder.encode(r.example) for r in part])
        batch["advantages"] = torch.tensor([r.advantage for r in part], dtype=torch.float32)
        out.append(batch)
    return out


def build_policy_model(recipe: Recipe, base: Path, say: Any) -> Any:
    """The base with the rollout policy's adapter (rl.init_adapter) made trainable, or with a fresh LoRA."""
    from training.model_load import load_model
    from training.train_lora import add_lora

    model = load_model(recipe, base)
    if recipe.rl.init_adapter:
        from peft import PeftModel

        path = Path(recipe.rl.init_adapter).expanduser()
        if not (path / "adapter_config.json").is_file():
            raise UserError(f"rl.init_adapter {path} is not an adapter folder (a candidate's adapter/)")
        model = PeftModel.from_pretrained(model, str(path), is_trainable=True)
        say(f"model: {base.name} + the rollout policy's adapter {path}")
    else:
        model = add_lora(model, recipe)
        say(f"model: {base.name} + a fresh LoRA (the rollout policy is the base)")
    return model


def optimise(model: Any, batches: list[dict[str, Any]], recipe: Recipe, temperature: float, out: Path,
             say: Any) -> list[dict[str, Any]]:
    """rl.epochs passes of AdamW steps over the fixed batches; one metrics record per step."""
    import torch

    old = fixed_logprobs(model, batches, temperature, reference=False)
    ref = fixed_logprobs(model, batches, temperature, reference=True)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=recipe.train.lr, weight_decay=recipe.train.weight_decay)
    rng = random.Random(recipe.train.seed)
    forks = recipe.rl.top_entropy_quantile < 1.0  # the entropy (a pass over the vocabulary) only when it is used
    metrics: list[dict[str, Any]] = []
    t0, step = time.time(), 0
    with open(out / "train" / "metrics.jsonl", "a", encoding="utf-8") as fh:
        for epoch in range(recipe.rl.epochs):
            for i in rng.sample(range(len(batches)), len(batches)):
                b = batches[i]
                inputs = {k: v for k, v in b.items() if k != "advantages"}
                mask = (b["labels"][:, 1:] != -100).float()
                got = token_logprobs(model, inputs, temperature, entropy=forks)
                logp, entropy = got if forks else (got, None)
                loss, parts = objective(logp, old[i], ref[i], mask, b["advantages"], recipe, entropy)
                opt.zero_grad()
                loss.backward()
                if recipe.train.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(params, recipe.train.max_grad_norm)
                opt.step()
                step += 1
                entry = {"step": step, "epoch": epoch, "loss": round(float(loss.detach()), 6), **parts,
                         "t": round(time.time() - t0, 2)}
                metrics.append(entry)
                fh.write(json.dumps(entry) + "\n")
                if recipe.train.max_seconds and time.time() - t0 >= recipe.train.max_seconds:
                    return metrics
        say(f"trained {step} step(s) in {time.time() - t0:.0f} s; KL to the base {metrics[-1]['kl']:.4f}, "
            f"clipped {metrics[-1]['clipped']:.0%}")
    return metrics


def write_curve(metrics: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [m["step"] for m in metrics]
    ax.plot(steps, [m["loss"] for m in metrics], label="loss (clipped surrogate + KL)", color="tab:blue")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss")
    ax2 = ax.twinx()
    ax2.plot(steps, [m["kl"] for m in metrics], label="KL to the base", color="tab:red")
    ax2.set_ylabel("KL per answer token")
    ax.legend(loc="upper left")
    ax2.legend(loc="upper right")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def train_grpo(recipe: Recipe, *, home: str | None = None, say: Any = print) -> dict[str, Any]:
    """Run the stage end to end; returns a summary (`no_signal` set, and nothing written, when no task has any)."""
    import torch

    from training.rollout_data import is_rollout_set, load_rollouts, rollout_provenance
    from training.train_lora import check_inputs, seed_everything

    if recipe.train.threads:
        torch.set_num_threads(recipe.train.threads)
    if recipe.data.path and not is_rollout_set(recipe.data.path):
        raise UserError(f"data.path={recipe.data.path} is not a rollout set (make one with `conway rollouts`)")
    base, out = check_inputs(recipe, home)
    seed_everything(recipe.train.seed)
    rows, counts = scored_rows(str(recipe.data.path), recipe, say)
    if not rows:
        say(f"grpo: {NO_SIGNAL}")
        return {"no_signal": True, **counts}
    temperature = recipe.rl.temperature or float(load_rollouts(str(recipe.data.path)).get("temperature") or 1.0)
    encoder = Encoder.from_pretrained(base)
    model = build_policy_model(recipe, base, say)
    batches = batches_of(encoder, rows, recipe.train.batch_size, recipe.train.seed)
    (out / "train").mkdir(parents=True, exist_ok=True)
    metrics = optimise(model, batches, recipe, temperature, out, say)
    from training.loop import save_adapter
    from training.merge_convert import finish_candidate

    summary = {"stage": "grpo", "steps": len(metrics), "stop_reason": "epochs", "first_loss": metrics[0]["loss"],
               "final_loss": metrics[-1]["loss"], "final_kl": metrics[-1]["kl"], "temperature": temperature,
               "train_examples": len(rows), "eval_examples": 0, **counts,
               "data_sha256": data_hash(recipe.data.path), "recipe": recipe.name, "recipe_sha256": recipe.digest(),
               "rollouts": rollout_provenance(str(recipe.data.path), "grpo")}
    save_adapter(model, out / "adapter", recipe, summary["data_sha256"], len(metrics), metrics[-1]["loss"])
    write_curve(metrics, out / "train" / "learning_curve.png", f"{recipe.name}: {len(rows)} answers, "
                f"{counts['tasks_with_signal']} task(s) with signal")
    (out / "train" / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if recipe.convert.merge:
        finish_candidate(model, base, out, recipe, summary, say=say)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grpo", description=__doc__.splitlines()[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--recipe", required=True, help="a name in configs/train/ (e.g. grpo_tiny_cpu) or a YAML path")
    parser.add_argument("--home", help="Conway home for output.candidate (default: $CONWAY_HOME or ~/.conway)")
    parser.add_argument("overrides", nargs="*", metavar="key=value")
    args = parser.parse_args(argv)
    try:
        summary = train_grpo(load_recipe(args.recipe, args.overrides), home=args.home)
    except UserError as exc:
        sys.stderr.write(f"grpo: error: {exc}\n")
        return 1
    return 2 if summary.get("no_signal") else 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
