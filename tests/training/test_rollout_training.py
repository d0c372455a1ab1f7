"""Learning from rewards on a tiny random-weight Qwen2-VL: rejection-sampling SFT rows are the successful
rollouts' requests as sent; the GRPO stage raises the probability of rewarded answers against unrewarded ones,
stays near the base (KL reported), refuses to update without signal, and names its rollouts in its summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from helpers.rollout_sets import click, write_rollout_set  # noqa: E402

LEFT, RIGHT = click(14, 42), click(70, 42)


@pytest.fixture
def rollout_set(tmp_path) -> Path:
    return write_rollout_set(tmp_path / "r0", {
        "t0": [(LEFT, 1.0), (RIGHT, 0.0), (LEFT, 1.0), (RIGHT, 0.0)],
        "t1": [(RIGHT, 0.0)] * 4,  # all equal: no signal
        "t2": [(LEFT, 1.0), (RIGHT, 0.0), (RIGHT, 0.0), (RIGHT, 0.0)],
    })


def test_rejection_sampling_rows_are_the_successful_requests_as_sent(rollout_set):
    from conway.experience.conversation import IMAGE_MARKER
    from training.rollout_data import rollout_examples
    examples, skipped = rollout_examples(rollout_set)
    assert len(examples) == 3 and skipped == {"unsuccessful rollout": 9}
    assert [e.completion for e in examples] == [LEFT, LEFT, LEFT]
    ex = examples[0]
    assert ex.messages[1]["content"][1] == {"type": "image_url", "image_url": {"url": IMAGE_MARKER}}
    assert ex.image_png == next((rollout_set / "rollouts.tasks").glob("*-t0/images/*.png")).read_bytes()
    assert ex.meta["reward"] == 1.0 and ex.meta["task"] in ("t0", "t2")


def test_no_successful_rollout_is_one_clear_error(tmp_path):
    from conway.errors import UserError
    from training.rollout_data import rollout_examples
    folder = write_rollout_set(tmp_path / "r", {"t": [(LEFT, 0.0), (RIGHT, 0.0)]})
    with pytest.raises(UserError, match="no successful rollout"):
        rollout_examples(folder)


def test_group_relative_advantages_leave_out_tasks_without_signal(rollout_set):
    from training.grpo import advantages, scored_rows
    from training.recipe import load_recipe
    assert advantages([1, 0, 1, 0], True) == [1.0, -1.0, 1.0, -1.0]
    assert advantages([0, 0, 0], True) is None and advantages([1.0], True) is None
    rows, counts = scored_rows(str(rollout_set), load_recipe("grpo_tiny_cpu", ["model.path=/m"]), lambda _: None)
    assert counts["tasks"] == 3 and counts["tasks_with_signal"] == 2 and len(rows) == 8
    assert {r.example.meta["task"] for r in rows} == {"t0", "t2"}
    t2 = [r.advantage for r in rows if r.example.meta["task"] == "t2"]
    assert t2[0] == pytest.approx(3 ** 0.5) and sum(t2) == pytest.approx(0)


def test_partial_rewards_give_graded_advantages_and_only_full_ones_are_imitated(tmp_path):
    """A checker that scores parts (conway.tasks.evaluate's partial credit) gives rewards between 0 and 1: the
    policy-gradient stage ranks them within their group; rejection sampling keeps only the fully successful."""
    from training.grpo import scored_rows
    from training.recipe import load_recipe
    from training.rollout_data import rollout_examples
    folder = write_rollout_set(tmp_path / "partial", {"t": [(LEFT, 1.0), (RIGHT, 0.5), (RIGHT, 0.0), (LEFT, 0.5)]})
    rows, counts = scored_rows(str(folder), load_recipe("grpo_tiny_cpu", ["model.path=/m"]), lambda _: None)
    adv = {r.example.meta["sample"]: r.advantage for r in rows}
    assert counts["tasks_with_signal"] == 1 and adv[0] > adv[1] == adv[3] > adv[2]
    assert adv[1] == pytest.approx(0.0)  # the group's mean reward: neither pushed up nor down
    examples, _ = rollout_examples(folder)
    assert [e.meta["reward"] for e in examples] == [1.0]


def test_batch_std_scope_weighs_a_task_by_its_spread(tmp_path):
    """rl.std_scope=batch divides by every rollout's deviation, so a task whose rewards barely differ (0.25 vs 0)
    moves less than one whose differ fully (1 vs 0); per group (GRPO) both weigh alike."""
    from training.grpo import scored_rows
    from training.recipe import load_recipe
    folder = write_rollout_set(tmp_path / "r", {"full": [(LEFT, 1.0), (RIGHT, 0.0)],
                                                "small": [(LEFT, 0.25), (RIGHT, 0.0)]})

    def top(scope: str) -> dict[str, float]:
        rows, _ = scored_rows(str(folder), load_recipe("grpo_tiny_cpu", ["model.path=/m", f"rl.std_scope={scope}"]),
                              lambda _: None)
        return {r.example.meta["task"]: r.advantage for r in rows if r.advantage > 0}

    assert top("group") == pytest.approx({"full": 1.0, "small": 1.0})
    batch = top("batch")
    assert batch["full"] == pytest.approx(4 * batch["small"]) and batch["full"] > 1.0


def test_negative_scale_shrinks_only_the_unrewarded_answers_advantages(tmp_path):
    """rl.negative_scale=0.25: one rewarded answer of four keeps +1.73, the three others fall from -0.58 to -0.14;
    at 0 only the rewarded answer is trained towards; at 1.0 (GRPO) the group sums to 0."""
    from training.grpo import scored_rows
    from training.recipe import load_recipe
    folder = write_rollout_set(tmp_path / "r", {"t": [(LEFT, 1.0), (RIGHT, 0.0), (RIGHT, 0.0), (RIGHT, 0.0)]})

    def advs(scale: float) -> list[float]:
        rows, _ = scored_rows(str(folder), load_recipe("grpo_tiny_cpu", ["model.path=/m",
                                                                         f"rl.negative_scale={scale}"]), lambda _: None)
        return sorted((r.advantage for r in rows), reverse=True)

    assert sum(advs(1.0)) == pytest.approx(0.0, abs=1e-9)
    assert advs(0.25) == pytest.approx([3 ** 0.5] + [-0.25 / 3 ** 0.5] * 3)
    assert advs(0.0) == pytest.approx([3 ** 0.5, 0.0, 0.0, 0.0])


def test_a_higher_upper_clip_lets_a_rewarded_answer_keep_rising():
    """With the ratio already at 1.3, a rewarded token's gradient is cut at clip 0.2; rl.clip_eps_high=0.5 keeps it."""
    from training.grpo import objective
    from training.recipe import load_recipe

    def grad(*extra: str) -> float:
        logp = torch.tensor([[0.3 + torch.log(torch.tensor(0.1)).item()]], requires_grad=True)
        old = torch.log(torch.tensor([[0.1]]))
        loss, parts = objective(logp, old, old.clone(), torch.ones(1, 1), torch.tensor([1.0]),
                                load_recipe("grpo_tiny_cpu", ["model.path=/m", "rl.kl_coef=0", *extra]))
        loss.backward()
        return float(logp.grad.abs().sum())

    assert grad("rl.clip_eps_high=0.2") == 0.0 and grad("rl.clip_eps_high=0.5") > 0.0


def test_top_entropy_quantile_trains_only_where_the_policy_chose():
    """rl.top_entropy_quantile=0.25: of an unrewarded answer's four tokens only the uncertain one (entropy 1.1, its
    wrong choice) is pushed down; the three the choice fixed (entropy ~0, the look-up) get no gradient from the
    surrogate, and padding is never chosen. At 1.0 every answer token is trained, as before."""
    from training.grpo import forking_tokens, objective
    from training.recipe import load_recipe

    entropy = torch.tensor([[1.1, 0.01, 0.02, 0.0, 5.0]])  # the last position is padding: high, never chosen
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0]])
    assert forking_tokens(entropy, mask, 0.25).tolist() == [[True, False, False, False, False]]
    assert forking_tokens(entropy, mask, 1.0).tolist() == [[True, True, True, True, False]]

    def grads(quantile: float) -> list[float]:
        logp = torch.log(torch.tensor([[0.3, 0.99, 0.98, 0.97, 1.0]])).requires_grad_()
        loss, _ = objective(logp, logp.detach().clone(), logp.detach().clone(), mask, torch.tensor([-1.0]),
                            load_recipe("grpo_tiny_cpu", ["model.path=/m", "rl.kl_coef=0",
                                                          f"rl.top_entropy_quantile={quantile}"]), entropy)
        loss.backward()
        return logp.grad[0].tolist()

    assert grads(0.25)[0] > 0 and grads(0.25)[1:] == [0.0, 0.0, 0.0, 0.0]  # gradient ascent on loss: pushed down
    assert all(g > 0 for g in grads(1.0)[:4])
    with pytest.raises(ValueError, match="entropy"):
        objective(torch.zeros(1, 5), torch.zeros(1, 5), torch.zeros(1, 5), mask, torch.tensor([1.0]),
                  load_recipe("grpo_tiny_cpu", ["model.path=/m", "rl.top_entropy_quantile=0.5"]))


def _recipe(base: Path, data: Path, out: Path, *extra: str):
    from training.recipe import load_recipe
    return load_recipe("grpo_tiny_cpu", [f"model.path={base}", f"data.path={data}", f"output.dir={out}",
                                         "convert.merge=false", "convert.gguf=false", "train.batch_size=4",
                                         "train.lr=1e-2", "rl.epochs=6", *extra])


def test_all_equal_rewards_train_nothing_and_say_so(tiny_base, tmp_path, capsys):
    from training.grpo import main
    data = write_rollout_set(tmp_path / "flat", {"a": [(LEFT, 1.0)] * 3, "b": [(RIGHT, 0.0)] * 3})
    out = tmp_path / "cand"
    code = main(["--recipe", "grpo_tiny_cpu", f"model.path={tiny_base}", f"data.path={data}", f"output.dir={out}",
                 "convert.merge=false", "convert.gguf=false"])
    assert code == 2 and "no signal" in capsys.readouterr().out
    assert not (out / "adapter").exists()


def _answer_logprob(model, encoder, rows) -> float:
    from training.grpo import token_logprobs
    batch = encoder.collate([encoder.encode(r.example) for r in rows])
    model.eval()
    with torch.no_grad():
        lp = token_logprobs(model, batch, 1.0)
    return float(lp.sum() / len(rows))


def test_as_shipped_a_stage_raises_a_rare_rewarded_answer_itself_not_only_its_lead(tiny_base, tmp_path):
    """One rewarded answer in eight per task: the shipped recipe must make it MORE probable, not merely less
    unlikely than the others (a gradient-norm clip once made every answer fall, the rewarded one 26x)."""
    from peft import PeftModel

    from scripts.bench.bench_grpo_settings import answer_logprobs
    from training.data import Encoder
    from training.grpo import scored_rows, train_grpo
    from training.model_load import load_model
    from training.recipe import load_recipe
    folder = write_rollout_set(tmp_path / "rare", {f"t{i}": [(LEFT, 1.0)] + [(RIGHT, 0.0)] * 7 for i in range(2)})
    recipe = load_recipe("grpo_tiny_cpu", [f"model.path={tiny_base}", f"data.path={folder}",
                                           f"output.dir={tmp_path / 'c'}", "convert.merge=false",
                                           "convert.gguf=false"])
    train_grpo(recipe, say=lambda _: None)
    rows, _ = scored_rows(str(folder), recipe, lambda _: None)
    model = PeftModel.from_pretrained(load_model(recipe, tiny_base), str(tmp_path / "c" / "adapter"))
    encoder = Encoder.from_pretrained(tiny_base)
    change = [a - b for a, b in zip(answer_logprobs(model, encoder, rows, base=False),
                                    answer_logprobs(model, encoder, rows, base=True))]
    rewarded = [c for c, r in zip(change, rows) if r.advantage > 0]
    others = [c for c, r in zip(change, rows) if r.advantage < 0]
    assert min(rewarded) > 1.0 and min(rewarded) > max(others) + 1.0, (rewarded, others)  # > e times more likely


def test_grpo_raises_rewarded_answers_against_unrewarded_ones_near_the_base(tiny_base, rollout_set, tmp_path):
    from training.data import Encoder
    from training.grpo import build_policy_model, scored_rows, train_grpo
    recipe = _recipe(tiny_base, rollout_set, tmp_path / "cand")
    rows, _ = scored_rows(str(rollout_set), recipe, lambda _: None)
    good, bad = [r for r in rows if r.advantage > 0], [r for r in rows if r.advantage < 0]
    encoder = Encoder.from_pretrained(tiny_base)
    torch.manual_seed(0)
    before = build_policy_model(recipe, tiny_base, lambda _: None)  # a fresh LoRA is the base itself
    gap_before = _answer_logprob(before, encoder, good) - _answer_logprob(before, encoder, bad)

    summary = train_grpo(recipe, say=lambda _: None)
    from peft import PeftModel

    from training.model_load import load_model
    after = PeftModel.from_pretrained(load_model(recipe, tiny_base), str(tmp_path / "cand" / "adapter"))
    gap_after = _answer_logprob(after, encoder, good) - _answer_logprob(after, encoder, bad)
    assert gap_after > gap_before + 0.3, (gap_before, gap_after)
    metrics = [json.loads(line) for line in (tmp_path / "cand" / "train" / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == summary["steps"] == 12  # 8 answers / batch 4 x 6 epochs
    assert metrics[0]["kl"] == pytest.approx(0, abs=1e-6) and 0 < metrics[-1]["kl"] < 5
    assert summary["rollouts"]["stage"] == "grpo" and summary["rollouts"]["policy"]["kind"] == "generic"
    assert summary["rollouts"]["rewards"]["t1"] == [0.0] * 4 and summary["tasks_with_signal"] == 2
    assert (tmp_path / "cand" / "train" / "learning_curve.png").stat().st_size > 0


def test_rejection_sampling_sft_trains_on_a_rollout_set(tiny_base, rollout_set, tmp_path):
    from training.recipe import load_recipe
    from training.train_lora import train
    recipe = load_recipe("tiny_cpu", [f"model.path={tiny_base}", f"data.path={rollout_set}",
                                      f"output.dir={tmp_path / 'sft'}", "train.max_steps=4", "train.batch_size=2",
                                      "train.short_prompt_steps=0", "train.eval_generate=0",
                                      "train.early_stop_hits=null", "data.eval_fraction=0", "convert.merge=false",
                                      "convert.gguf=false"])
    summary = train(recipe, progress=False, say=lambda _: None)
    assert summary["train_examples"] == 3 and summary["steps"] == 4
    assert summary["rollouts"]["stage"] == "rejection-sampling-sft"
    assert summary["rollouts"]["rewards"]["t0"] == [1.0, 0.0, 1.0, 0.0]
