"""TRL's GRPO loss on a Conway batch: the check that training/grpo.py's `objective` is the library's objective.

Why this exists. The rollouts Conway learns from are sampled beforehand on real desktops, so TRL's `GRPOTrainer`
cannot train on them (it samples its own completions from its prompts). What can be compared is the loss: this
module hands one of our batches (`training.grpo.batches_of`: Encoder.collate's right-padded input_ids /
attention_mask / labels with -100 on the prompt / pixel_values / image_grid_thw / mm_token_type_ids, plus
"advantages") and our fixed rollout and reference log-probabilities (`training.grpo.fixed_logprobs`) to TRL's own
`GRPOTrainer._compute_loss`, on a trainer built around the same model, and returns the loss TRL computes.
tests/training/test_grpo_trl.py asserts that it equals ours, and that so do the gradients on the LoRA.

The settings, ours (recipe `rl`) -> GRPOConfig:

    rl.clip_eps       -> epsilon         lower clip, 1 - eps
    rl.clip_eps_high  -> epsilon_high    upper clip, 1 + eps_high (None: epsilon, in both)
    rl.kl_coef        -> beta            weight of the k3 KL to the reference, per token
    (our k3 as is)    -> use_bias_correction_kl=False   TRL's default (True) multiplies each token's k3 by the
                                         ratio pi / pi_rollout (DeepSeek-V3.2's unbiased reverse-KL gradient);
                                         ours does not, so with TRL's default the losses differ by
                                         beta * mean over answers of mean over tokens of (ratio - 1) * k3, and the
                                         gradients also where the ratio is 1 (by beta * k3 * grad log pi)
    rl.top_entropy_quantile -> top_entropy_quantile   the surrogate only on each batch's top-entropy answer
                                         tokens (the current policy's entropy, the (1 - q) quantile as threshold)
    temperature       -> temperature     the logits are divided by it before the log-softmax (rl.temperature or
                                         the rollout set's sampling temperature)
    per answer, then over the batch -> loss_type="grpo": (sum_t loss_t * mask_t / n_tokens).mean() over answers
    token-level ratio            -> importance_sampling_level="token"
    no autocast (our dtype as loaded) -> bf16=False, fp16=False; no dropout is our recipe's lora.dropout=0
    the rollout policy's log-probs -> inputs["old_per_token_logps"]; the reference's -> inputs["ref_per_token_logps"]

The layout differs: TRL wants the prompt left-padded and the completion right-padded in two tensors, and its
per-token log-probabilities aligned with the completion's tokens; ours are one right-padded sequence with the
log-probability of token t+1 at position t. `trl_inputs` re-lays the batch out; nothing is recomputed with our
code (TRL's own forward, through its fused LM head, gives the current log-probabilities).

Building the trainer changes the model object it is given, as TRL always does: with beta != 0 and a PeftModel it
adds a frozen "ref" copy of the "default" adapter (the active adapter stays "default"; unused here, the reference
log-probabilities are ours; `trl_trainer` deletes an earlier one so that a second trainer can be built), it
resets the global seeds (transformers' set_seed(args.seed)), and it patches the
underlying transformers model's forward with its fused LM head (a call without `fused_lm_head=True` runs the
original forward). Use it on a model whose training is over or, as the test does, on a model made for the check.
"""

from __future__ import annotations

import tempfile
from typing import Any

from training.recipe import Recipe


def trl_config(recipe: Recipe, temperature: float, output_dir: str, batch_size: int, **overrides: Any) -> Any:
    """GRPOConfig whose loss is ours (the map in the module docstring), `overrides` (GRPOConfig fields) aside; no
    generation is ever run with it."""
    from trl import GRPOConfig

    settings: dict[str, Any] = dict(
        output_dir=output_dir, report_to="none", use_cpu=True, use_vllm=False, bf16=False, fp16=False,
        gradient_checkpointing=False, disable_dropout=False, loss_type="grpo", importance_sampling_level="token",
        epsilon=recipe.rl.clip_eps, epsilon_high=recipe.rl.clip_eps_high, beta=recipe.rl.kl_coef,
        top_entropy_quantile=recipe.rl.top_entropy_quantile,
        use_bias_correction_kl=False, temperature=temperature, per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=1, num_generations=2, generation_batch_size=2 * batch_size, seed=recipe.train.seed, logging_steps=1,
        save_strategy="no")
    return GRPOConfig(**{**settings, **overrides})


def trl_trainer(model: Any, tokenizer: Any, recipe: Recipe, temperature: float, output_dir: str | None = None,
                batch_size: int = 2, **overrides: Any) -> Any:
    """A GRPOTrainer around `model` with a trivial reward function and a one-row dataset: only its loss is used.
    `overrides`: GRPOConfig fields to set otherwise than our objective does (e.g. use_bias_correction_kl=True)."""
    from trl import GRPOTrainer

    from datasets import Dataset

    def no_reward(completions: list[Any], **_: Any) -> list[float]:
        return [0.0] * len(completions)

    out = output_dir or tempfile.mkdtemp(prefix="conway-grpo-trl-")
    if "ref" in getattr(model, "peft_config", {}):  # an earlier trainer's copy: TRL makes its own, or refuses
        model.delete_adapter("ref")
    trainer = GRPOTrainer(model=model, reward_funcs=no_reward, processing_class=tokenizer,
                          args=trl_config(recipe, temperature, out, batch_size, **overrides),
                          train_dataset=Dataset.from_dict({"prompt": ["unused: the rollouts are Conway's"]}))
    # The trainer's loop sets this at each optimizer step (the micro-batches in it); one batch is one step here.
    trainer.current_gradient_accumulation_steps = 1
    return trainer


def _answer_spans(labels: Any, attention_mask: Any) -> list[tuple[int, int]]:
    """Each row's answer as [start, end): its labelled tokens, which must be one run ending the row's tokens."""
    spans = []
    for i in range(labels.size(0)):
        where = (labels[i] != -100).nonzero().flatten()
        n = int(attention_mask[i].sum())
        if len(where) == 0:
            raise ValueError(f"row {i} has no answer token")
        s, e = int(where[0]), int(where[-1]) + 1
        if e - s != len(where) or e != n or not bool(attention_mask[i, :n].all()):
            raise ValueError(f"row {i}: the answer is not one run of tokens ending the row (TRL's completion)")
        spans.append((s, e))
    return spans


def trl_inputs(batch: dict[str, Any], old: Any, ref: Any | None, pad_id: int, image_token_id: int | None = None
               ) -> dict[str, Any]:
    """TRL's inputs dict for one of our batches: the prompt left-padded, the answer right-padded, our per-token
    rollout (`old`) and reference (`ref`) log-probabilities moved to the answer's tokens. `image_token_id` marks
    the image tokens when the batch has no mm_token_type_ids."""
    import torch

    ids, labels = batch["input_ids"], batch["labels"]
    spans = _answer_spans(labels, batch["attention_mask"])
    rows, p_len, c_len = ids.size(0), max(s for s, _ in spans), max(e - s for s, e in spans)

    def split(x: Any, fill: float) -> tuple[Any, Any]:
        prompt = x.new_full((rows, p_len), fill)
        completion = x.new_full((rows, c_len), fill)
        for i, (s, e) in enumerate(spans):
            prompt[i, p_len - s:] = x[i, :s]
            completion[i, :e - s] = x[i, s:e]
        return prompt, completion

    def answer_positions(x: Any) -> Any:  # ours: position t holds log p(token t+1)
        out = x.new_zeros((rows, c_len))
        for i, (s, e) in enumerate(spans):
            out[i, :e - s] = x[i, s - 1:e - 1]
        return out

    prompt_ids, completion_ids = split(ids, pad_id)
    prompt_mask, completion_mask = split(batch["attention_mask"], 0)
    inputs: dict[str, Any] = {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
                              "completion_mask": completion_mask, "advantages": batch["advantages"],
                              "old_per_token_logps": answer_positions(old)}
    if ref is not None:
        inputs["ref_per_token_logps"] = answer_positions(ref)
    image = batch.get("mm_token_type_ids")
    if image is None and "pixel_values" in batch:
        if image_token_id is None:
            raise ValueError("a batch with images needs mm_token_type_ids or the image token's id")
        image = (ids == image_token_id).long()
    if image is not None:
        inputs["mm_token_type_ids"] = torch.cat(split(image, 0), dim=1)
    if "pixel_values" in batch:
        inputs["pixel_values"] = batch["pixel_values"]
        inputs["image_grid_thw"] = batch["image_grid_thw"]
        # images per row: the runs of image tokens in it (TRL splits pixel_values by them)
        starts = (image[:, 1:] > image[:, :-1]).sum(-1) + (image[:, 0] > 0)
        inputs["num_images"] = [int(n) for n in starts]
        if sum(inputs["num_images"]) != batch["image_grid_thw"].size(0):
            raise ValueError("the rows' image-token runs do not match image_grid_thw's images")
    return inputs


def trl_loss(trainer: Any, batch: dict[str, Any], old: Any, ref: Any | None, pad_id: int) -> Any:
    """TRL's GRPO loss (`GRPOTrainer._compute_loss`) on one of our batches, differentiable in the model's weights."""
    image_token_id = getattr(trainer.model.config, "image_token_id", None)
    inputs = trl_inputs(batch, old, ref if trainer.beta != 0.0 else None, pad_id, image_token_id)
    return trainer._compute_loss(trainer.model, inputs)
