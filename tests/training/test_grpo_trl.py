"""Our GRPO objective (training/grpo.py) against TRL's GRPOTrainer loss on the same rollouts: one batch of real rows
from a rollout set, the same model and the same fixed rollout/reference log-probabilities; TRL's own
`_compute_loss` (training/grpo_trl.py) must give our loss and our gradients on the adapter, with the clip binding
for some tokens and a KL penalty."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("trl")

from helpers.rollout_sets import click, write_rollout_set  # noqa: E402

# answers of different lengths (so per-answer normalisation and TRL's right-padding matter) in tasks whose prompts
# differ in length (so its left-padding does)
LEFT, RIGHT = click(14, 42), click(7, 4)
LONG = json.dumps({"thought": "the red button is on the left", "action": {"type": "click", "x": 21, "y": 40}})
TEMPERATURE = 0.7  # not 1: both sides must divide the logits by it


def _setup(tiny_base, tmp_path, *extra: str):
    from training.data import Encoder
    from training.grpo import batches_of, build_policy_model, fixed_logprobs, scored_rows
    from training.recipe import load_recipe

    data = write_rollout_set(tmp_path / "r", {"t0": [(LEFT, 1.0), (RIGHT, 0.0), (LONG, 1.0), (RIGHT, 0.0)],
                                              "a-longer-task": [(LONG, 1.0), (RIGHT, 0.0), (LEFT, 0.5), (RIGHT, 0.0)]})
    recipe = load_recipe("grpo_tiny_cpu", [f"model.path={tiny_base}", f"data.path={data}",
                                           f"output.dir={tmp_path / 'c'}", "convert.merge=false",
                                           "convert.gguf=false", f"rl.temperature={TEMPERATURE}",
                                           # an upper clip that binds on this batch (the shipped 3.0 rarely does)
                                           "rl.clip_eps_high=0.5", *extra])
    rows, _ = scored_rows(str(data), recipe, lambda _: None)
    encoder = Encoder.from_pretrained(tiny_base)
    batch = batches_of(encoder, rows, 8, recipe.train.seed)[0]
    torch.manual_seed(0)
    model = build_policy_model(recipe, tiny_base, lambda _: None)
    with torch.no_grad():  # a fresh LoRA is the base itself: move it, so that the policy is not the reference
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.add_(0.3 * torch.randn_like(p))
    old = fixed_logprobs(model, [batch], TEMPERATURE, reference=False)[0]
    ref = fixed_logprobs(model, [batch], TEMPERATURE, reference=True)[0]
    mask = (batch["labels"][:, 1:] != -100).float()
    # the rollout policy's log-probs moved per token, so that ratios leave [1 - eps, 1 + eps_high] both ways
    gen = torch.Generator().manual_seed(1)
    old = old + 0.6 * torch.randn(old.shape, generator=gen) * mask
    return recipe, encoder, batch, model, old, ref, mask


def _ours(model, batch, old, ref, mask, recipe):
    from training.grpo import objective, token_logprobs

    inputs = {k: v for k, v in batch.items() if k != "advantages"}
    model.zero_grad()
    logp, entropy = token_logprobs(model, inputs, TEMPERATURE, entropy=True)
    loss, parts = objective(logp, old, ref, mask, batch["advantages"], recipe, entropy)
    loss.backward()
    return loss.detach(), parts, _grads(model)


def _grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()
            if p.requires_grad and ".default." in n and p.grad is not None}


def _kl_by_ratio(model, batch, old, ref, mask) -> float:
    """What TRL's default adds to our loss per unit of beta: each answer's mean over its tokens of (ratio - 1) * k3,
    averaged over the answers (use_bias_correction_kl multiplies k3 by the ratio)."""
    from training.grpo import token_logprobs

    with torch.no_grad():
        logp = token_logprobs(model, {k: v for k, v in batch.items() if k != "advantages"}, TEMPERATURE)
    ratio, log_ref_ratio = torch.exp(logp - old), ref - logp
    k3 = torch.exp(log_ref_ratio) - log_ref_ratio - 1
    return float((((ratio - 1) * k3 * mask).sum(-1) / mask.sum(-1)).mean())


def test_trl_grpo_loss_and_gradients_equal_ours_on_the_same_rollouts(tiny_base, tmp_path):
    from training.grpo_trl import trl_inputs, trl_loss, trl_trainer

    recipe, encoder, batch, model, old, ref, mask = _setup(tiny_base, tmp_path, "rl.kl_coef=0.2")
    adv, lengths = batch["advantages"], mask.sum(-1)
    assert (adv > 0).any() and (adv < 0).any() and len(adv) == 8
    assert len(set(lengths.tolist())) == 3 and len(set(batch["attention_mask"].sum(-1).tolist())) > 3
    ours, parts, our_grads = _ours(model, batch, old, ref, mask, recipe)
    assert 0.1 < parts["clipped"] < 0.9 and parts["kl"] > 1e-2, parts  # the clip binds for some tokens, not all
    assert any("lora_A" in n and g.abs().sum() > 0 for n, g in our_grads.items())

    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    trainer = trl_trainer(model, encoder.tokenizer, recipe, TEMPERATURE, str(tmp_path / "trl"), batch_size=8)
    # TRL's frozen "ref" copy of the adapter (beta != 0) leaves the trained parameters as they were
    assert {n for n, p in model.named_parameters() if p.requires_grad} == trainable
    assert model.active_adapter == "default" and "ref" in model.peft_config
    assert (trainer.loss_type, trainer.epsilon_low, trainer.epsilon_high, trainer.beta, trainer.temperature) == \
        ("grpo", 0.2, 0.5, 0.2, TEMPERATURE)
    inputs = trl_inputs(batch, old, ref, encoder.pad_id)
    assert inputs["completion_mask"].sum(-1).tolist() == lengths.tolist()
    assert (inputs["prompt_mask"][:, 0] == 0).any() and (inputs["completion_mask"][:, -1] == 0).any()
    model.zero_grad()
    theirs = trl_loss(trainer, batch, old, ref, encoder.pad_id)
    theirs.backward()
    their_grads = _grads(model)

    assert float(theirs.detach()) == pytest.approx(float(ours), rel=1e-5, abs=1e-6)
    # our `clipped` is TRL's region clip ratio: the share of answer tokens whose gradient the clip cuts
    assert trainer._metrics["train"]["clip_ratio/region_mean"][-1] == pytest.approx(parts["clipped"], abs=1e-6)
    assert their_grads.keys() == our_grads.keys()
    a = torch.cat([g.flatten() for g in our_grads.values()])
    b = torch.cat([their_grads[n].flatten() for n in our_grads])
    assert float(torch.nn.functional.cosine_similarity(a, b, dim=0)) > 0.99999
    assert float((a - b).norm() / a.norm()) < 1e-4


def test_trl_top_entropy_quantile_is_ours(tiny_base, tmp_path):
    """rl.top_entropy_quantile -> TRL's top_entropy_quantile: the same tokens trained (the batch's top 30% by the
    current policy's entropy), the same loss and gradients; and not the loss of every token."""
    from training.grpo_trl import trl_loss, trl_trainer

    recipe, encoder, batch, model, old, ref, mask = _setup(tiny_base, tmp_path, "rl.kl_coef=0.2",
                                                           "rl.top_entropy_quantile=0.3")
    ours, _, our_grads = _ours(model, batch, old, ref, mask, recipe)
    every, _, _ = _ours(model, batch, old, ref, mask, recipe.model_copy(
        update={"rl": recipe.rl.model_copy(update={"top_entropy_quantile": 1.0})}))
    assert abs(float(every) - float(ours)) > 1e-3
    trainer = trl_trainer(model, encoder.tokenizer, recipe, TEMPERATURE, str(tmp_path / "trl"), batch_size=8)
    assert trainer.top_entropy_quantile == 0.3
    model.zero_grad()
    theirs = trl_loss(trainer, batch, old, ref, encoder.pad_id)
    theirs.backward()
    their_grads = _grads(model)
    assert float(theirs.detach()) == pytest.approx(float(ours), rel=1e-5, abs=1e-6)
    a = torch.cat([g.flatten() for g in our_grads.values()])
    b = torch.cat([their_grads[n].flatten() for n in our_grads])
    assert float((a - b).norm() / a.norm()) < 1e-4


def test_trl_default_kl_is_ours_weighted_by_the_ratio(tiny_base, tmp_path):
    """The one difference found: TRL 1.16 multiplies k3 by pi / pi_rollout by default (use_bias_correction_kl=True),
    which our objective does not; with it, TRL's loss is ours plus beta times that weighting's share, exactly."""
    from training.grpo_trl import trl_loss, trl_trainer

    recipe, encoder, batch, model, old, ref, mask = _setup(tiny_base, tmp_path, "rl.kl_coef=0.2")
    ours, _, _ = _ours(model, batch, old, ref, mask, recipe)
    extra = _kl_by_ratio(model, batch, old, ref, mask)
    trainer = trl_trainer(model, encoder.tokenizer, recipe, TEMPERATURE, str(tmp_path / "trl"), batch_size=8,
                          use_bias_correction_kl=True)
    with torch.no_grad():
        theirs = float(trl_loss(trainer, batch, old, ref, encoder.pad_id))
    assert abs(0.2 * extra) > 1e-3  # large enough to see
    assert theirs == pytest.approx(float(ours) + 0.2 * extra, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("change", [{"beta": 0.05}, {"epsilon_high": 0.2}, {"loss_type": "bnpo"},
                                    {"temperature": 1.0}, {"top_entropy_quantile": 0.3}])
def test_the_comparison_sees_another_kl_weight_clip_normalisation_or_temperature(tiny_base, tmp_path, change):
    """The equality is not vacuous: TRL set otherwise than our recipe in any one of these gives another loss."""
    from training.grpo_trl import trl_loss, trl_trainer

    recipe, encoder, batch, model, old, ref, mask = _setup(tiny_base, tmp_path, "rl.kl_coef=0.2")
    ours, _, _ = _ours(model, batch, old, ref, mask, recipe)
    settings = dict(change)
    temperature = settings.pop("temperature", TEMPERATURE)
    trainer = trl_trainer(model, encoder.tokenizer, recipe, temperature, str(tmp_path / "trl"), batch_size=8,
                          **settings)
    with torch.no_grad():
        theirs = float(trl_loss(trainer, batch, old, ref, encoder.pad_id))
    assert abs(theirs - float(ours)) > 1e-3, (change, theirs, float(ours))
