"""How long a reward stage should train on one rollout set, measured in-process (issue 46).

    .venv/bin/python -m scripts.bench.bench_stage_steps --base BASE --rollouts DIR [--stage sft|grpo]
        [--steps 20,60,200,2000] [--held-out 48] [key=value ...]

For each setting it trains a candidate from the same rollout set (the rewarded answers for `sft`, recipe
tiny_cpu, stopped at N optimizer steps; every answer with its group-relative advantage for `grpo`, recipe
grpo_tiny_cpu, with the overrides given and `rl.epochs=N` per point), then answers greedily on --held-out
screens of the perceivable suite's own task rendered by scripts/build/screen_pretraining.py (byte for byte the
loop's, docs/learning.md) and scores them by the checker's rule (bench_reward_samples.success). No desktop runs:
it isolates the stage from the loop, so a setting that fails here fails the stage, not the measurement.
BASE is a made base's folder (its hf/ and GGUF pair); DIR a `conway rollouts` set rolled out from it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def train_point(stage: str, base: Path, rollouts: Path, home: Path, name: str, steps: int,
                overrides: list[str]) -> Path:
    """One candidate (no GGUF: only its merged HF model is measured); returns its merged folder."""
    from scripts.demos.reward_demo import candidate_overrides, sft_recipe
    from training.recipe import load_recipe

    if stage == "sft":
        from training.train_lora import train

        recipe = sft_recipe(base, rollouts, name, steps, 3600, ["convert.gguf=false", *overrides])
        train(recipe, home=str(home), progress=False, say=lambda *a: None)
    else:
        from training.grpo import train_grpo

        recipe = load_recipe("grpo_tiny_cpu", [*candidate_overrides(base, rollouts, name), "convert.gguf=false",
                                               f"rl.epochs={steps}", *overrides])
        train_grpo(recipe, home=str(home), say=lambda *a: None)
    return home / "candidates" / name / "merged"


def held_out_screens(base_hf: Path, n: int, targets: int) -> tuple[Any, list[Any]]:
    """The base's encoder (a candidate's tokenizer and processor are the base's) and the n held-out screens,
    encoded once for every point."""
    from scripts.build import screen_pretraining as sp
    from training.data import Encoder

    enc = Encoder.from_pretrained(base_hf)
    return enc, [(sp.HELD_SEEDS, i, enc.encode(sp.example("colour_said", sp.HELD_SEEDS, i, targets))) for i in range(n)]


def held_out_success(hf: Path, enc: Any, held: list[Any], targets: int) -> float:
    import torch
    from transformers import Qwen2VLForConditionalGeneration

    from scripts.bench.bench_reward_samples import success

    model = Qwen2VLForConditionalGeneration.from_pretrained(hf, dtype=torch.float32)
    return success(model, enc, held, targets)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_stage_steps", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--base", type=Path, required=True, help="a made base's folder (hf/, tiny-vlm.gguf)")
    ap.add_argument("--rollouts", type=Path, required=True, help="a rollout set rolled out from that base")
    ap.add_argument("--stage", choices=("sft", "grpo"), default="sft")
    ap.add_argument("--steps", default="20,60,200,2000",
                    help="sft: optimizer steps per point; grpo: rl.epochs per point (comma-separated)")
    ap.add_argument("--held-out", type=int, default=48)
    ap.add_argument("--targets", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the points as JSON here")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="recipe overrides for every point")
    a = ap.parse_args(argv)
    try:
        points = [int(s) for s in a.steps.split(",")]
    except ValueError:
        ap.error(f"--steps takes numbers separated by commas (got {a.steps!r})")
    if not (a.base / "hf").is_dir() or not (a.rollouts / "manifest.json").is_file():
        ap.error("--base needs a made base's folder (with hf/) and --rollouts a finished rollout set (manifest.json)")
    import torch

    torch.set_num_threads(1)
    chance = 1 / a.targets
    enc, held = held_out_screens(a.base / "hf", a.held_out, a.targets)
    base_rate = held_out_success(a.base / "hf", enc, held, a.targets)
    print(json.dumps({"point": "base", "held_out": round(base_rate, 4), "chance": round(chance, 4)}), flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-stage-steps-") as tmp:
        for n in points:
            merged = train_point(a.stage, a.base, a.rollouts, Path(tmp), f"{a.stage}-{n}", n, a.overrides)
            rate = held_out_success(merged, enc, held, a.targets)
            rows.append({"stage": a.stage, "steps" if a.stage == "sft" else "epochs": n, "held_out": round(rate, 4)})
            print(json.dumps(rows[-1]), flush=True)
    if a.out:
        a.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(a).items()}, "base": base_rate,
                                     "points": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
