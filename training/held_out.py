"""The rows held out of training, and how the loop measures the model on them: loss, and for targets with
boxes greedy answers scored by the family's own parser (hits, hit rate, distinct answers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from training.data import Encoder, Example
from training.recipe import Recipe


@dataclass
class HeldOut:
    """Held-out examples, encoded once with the model's encoder."""

    encoder: Encoder
    examples: list[Example]
    encoded: list[dict[str, Any]]

    def measure(self, model: Any, accelerator: Any, recipe: Recipe) -> dict[str, Any]:
        """Held-out loss, plus the hit rate of greedy answers when the recipe asks for generated answers."""
        entry: dict[str, Any] = {"eval_loss": eval_loss(model, self.encoder, self.encoded, recipe.train.batch_size)}
        if recipe.train.eval_generate and self.examples:
            sample = self.examples[: recipe.train.eval_generate]
            answers = generate_answers(accelerator.unwrap_model(model), self.encoder, sample)
            entry.update(score_answers(answers, sample, recipe.data.policy_kind))
            entry["example_answer"] = answers[0][:200] if answers else None
        return entry


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
