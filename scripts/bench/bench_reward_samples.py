"""How many rollouts rewards alone need from a base, measured in-process (issue 46's budget question).

    .venv/bin/python -m scripts.bench.bench_reward_samples --hf BASE/hf [--per-round 64] [--budget 4096]

A desktop rollout of the perceivable suite costs ~4.7 s here (the loop, a disposable desktop, the board, the
checker); the model's own answer costs ~0.04 s. So before a reward stage is sized for desktops, this asks the
same question where a sample is cheap: rejection-sampling rounds on the suite's own task ("Click the blue
square." among --targets), every answer sampled by the model itself at temperature 1, rewarded by the checker's
rule (the first click inside the named target's box: scripts/demos/perceivable_targets.py's board), the rewarded
answers its only training rows (no label anywhere), then greedy success on held-out screens after each round.

It is a stand-in for the loop, named as one: the screens are the stage's own renderings (equal to the loop's, byte
for byte once decoded: docs/learning.md), the prompt the short form (`policy.prompt=bare`), and no desktop runs.
It prints, per round, the samples drawn so far, the rewarded ones, and held-out success against chance, and ends
with how many samples reached --goal (or that the budget did not).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

from scripts.build import screen_pretraining as sp
from scripts.demos import perceivable_targets as pt

ANSWER = re.compile(r'"type":\s*"click",\s*"x":\s*(\d+),\s*"y":\s*(\d+)')


def rewarded(text: str, seed: int, index: int, targets: int) -> bool:
    """The checker's rule: the answer's click lies inside the named target's box."""
    named, drawn = pt.layout(seed, index, targets, sp.SCREEN, "colour")
    m = ANSWER.search(text)
    if not m:
        return False
    x, y = int(m.group(1)), int(m.group(2))
    box = next(t["box"] for t in drawn if t["name"] == named)
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def answer(model: Any, enc: Any, item: dict[str, Any], *, sample: bool, max_new: int = 40) -> str:
    """The model's answer, a token at a time over the whole sequence (no cache: the tiny model's prompt is ~90
    tokens, and simple and exact)."""
    import torch

    p = item["prompt_len"]
    ids = item["input_ids"][:p].tolist()
    end = enc.tokenizer(enc.end_of_turn, add_special_tokens=False).input_ids[0]
    with torch.no_grad():
        for _ in range(max_new):
            x = torch.tensor([ids])
            logits = model(input_ids=x, attention_mask=torch.ones_like(x), pixel_values=item["pixel_values"],
                           image_grid_thw=item["image_grid_thw"],
                           mm_token_type_ids=(x == enc.image_token_id).long()).logits[0, -1]
            logits[enc.image_token_id] = float("-inf")  # an answer never holds an image (the grammar's text neither)
            nxt = int(torch.multinomial(torch.softmax(logits, -1), 1)) if sample else int(logits.argmax())
            if nxt == end:
                break
            ids.append(nxt)
    return enc.tokenizer.decode(ids[p:], skip_special_tokens=False).strip()


def success(model: Any, enc: Any, held: list[tuple[int, int, dict[str, Any]]], targets: int) -> float:
    model.eval()
    hits = sum(rewarded(answer(model, enc, it, sample=False), s, i, targets) for s, i, it in held)
    return hits / len(held)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_reward_samples", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--hf", required=True, help="the base's HF folder")
    ap.add_argument("--targets", type=int, default=3)
    ap.add_argument("--per-round", type=int, default=64, help="samples drawn per round (default 64)")
    ap.add_argument("--steps", type=int, default=40, help="training steps per round on the rewarded rows kept")
    ap.add_argument("--budget", type=int, default=4096, help="samples in all (default 4096)")
    ap.add_argument("--goal", type=float, default=0.85)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--held-out", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the rounds as JSON here")
    a = ap.parse_args(argv)
    import torch
    from transformers import Qwen2VLForConditionalGeneration

    from training.data import Encoder, Example

    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    enc = Encoder.from_pretrained(a.hf)
    model = Qwen2VLForConditionalGeneration.from_pretrained(a.hf, dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    rng = random.Random(f"bench-reward-samples:{a.seed}")
    train_seed = sp.TRAIN_SEEDS + a.seed
    held = [(sp.HELD_SEEDS, i, enc.encode(sp.example("colour_said", sp.HELD_SEEDS, i, a.targets)))
            for i in range(a.held_out)]
    chance = 1 / a.targets
    kept: list[dict[str, Any]] = []
    drawn, rounds, started = 0, [], time.time()
    first = success(model, enc, held, a.targets)
    print(json.dumps({"round": 0, "samples": 0, "rewarded": 0, "held_out": first, "chance": round(chance, 4)}),
          flush=True)
    reached = None
    while drawn < a.budget:
        model.eval()
        new = 0
        for _ in range(a.per_round):
            index = rng.randrange(10 ** 9)
            ex = sp.example("colour_said", train_seed, index, a.targets)
            text = answer(model, enc, enc.encode(ex), sample=True)
            drawn += 1
            if rewarded(text, train_seed, index, a.targets):
                kept.append(enc.encode(Example(messages=ex.messages, image_png=ex.image_png, completion=text)))
                new += 1
        model.train()
        for _ in range(a.steps if kept else 0):
            batch = [kept[rng.randrange(len(kept))] for _ in range(16)]
            loss = model(**enc.collate(batch)).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        rate = success(model, enc, held, a.targets)
        point = {"round": len(rounds) + 1, "samples": drawn, "rewarded": len(kept), "new_rewarded": new,
                 "held_out": round(rate, 4), "s": round(time.time() - started, 1)}
        rounds.append(point)
        print(json.dumps(point), flush=True)
        if rate >= a.goal and reached is None:
            reached = drawn
            break
    said = (f"held-out {a.goal:.0%} reached after {reached} sampled answers" if reached is not None
            else f"held-out {a.goal:.0%} not reached within {drawn} sampled answers")
    print(f"{said} (base {first:.0%}, chance {chance:.0%}; {time.time() - started:.0f} s)")
    if a.out:
        a.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(a).items()}, "base": first,
                                     "rounds": rounds, "reached_at": reached}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
