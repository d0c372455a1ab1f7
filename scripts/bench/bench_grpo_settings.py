"""How far one GRPO stage moves the policy, per setting, on the same rollout set: ratios, not timings.

    .venv/bin/python -m scripts.bench.bench_grpo_settings --base HF_DIR --rollouts DIR [--preset NAME ...]
        [--out FILE] [key=value ...]

For each preset (recipe overrides on grpo_tiny_cpu, below) the stage trains a fresh LoRA on the base from the
rollout set's rewards (no merge, no conversion), and the bench measures on the same answers it learned from:

    rise      how many times more probable the rewarded answers (advantage > 0) became, per answer:
              exp(mean over them of log pi_after(answer) - log pi_base(answer))
    fall      the same for the unrewarded answers (advantage < 0); below 1 means they became less probable
    gap_gain  the change of (mean log-prob of rewarded - of unrewarded answers), in nats per answer
    kl        the stage's KL to the base at its last step; steps: optimizer steps taken

The presets are the settings the issue asks about (group size is the rollout set's own: make another with
`conway rollouts --samples K`): the recipe as shipped, a higher upper clip, more inner epochs, no KL penalty,
the standard deviation over the batch, the mean only (no division), and every answer in one batch (a task's
group together in each step, so its advantages, which sum to 0, cancel on the tokens its answers share). Every run uses the same seed, data and
batch order; only the overrides differ. Results are printed and written as JSON (--out).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

PRESETS: dict[str, list[str]] = {
    "shipped": [],
    "clip-high-0.5": ["rl.clip_eps_high=0.5"],
    "epochs-8": ["rl.epochs=8"],
    "no-kl": ["rl.kl_coef=0"],
    "std-batch": ["rl.std_scope=batch"],
    "mean-only": ["rl.normalize_std=false"],
    "one-batch": ["train.batch_size=256"],
}


def answer_logprobs(model: Any, encoder: Any, rows: list[Any], *, base: bool) -> list[float]:
    """Each row's answer log-probability (summed over its tokens) under the model, or under the base."""
    import contextlib

    import torch

    from training.grpo import token_logprobs

    out = []
    model.eval()
    with torch.no_grad(), (model.disable_adapter() if base else contextlib.nullcontext()):
        for r in rows:
            batch = encoder.collate([encoder.encode(r.example)])
            out.append(float(token_logprobs(model, batch, 1.0).sum()))
    return out


def measure(base: Path, rollouts: Path, name: str, overrides: list[str], work: Path) -> dict[str, Any]:
    from peft import PeftModel

    from training.data import Encoder
    from training.grpo import scored_rows, train_grpo
    from training.model_load import load_model
    from training.recipe import load_recipe

    out = work / name
    recipe = load_recipe("grpo_tiny_cpu", [f"model.path={base}", f"data.path={rollouts}", f"output.dir={out}",
                                           "convert.merge=false", "convert.gguf=false", *overrides])
    summary = train_grpo(recipe, say=lambda _: None)
    if summary.get("no_signal"):
        return {"preset": name, "overrides": overrides, "no_signal": True}
    rows, _ = scored_rows(str(rollouts), recipe, lambda _: None)
    model = PeftModel.from_pretrained(load_model(recipe, base), str(out / "adapter"))
    encoder = Encoder.from_pretrained(base)
    after = answer_logprobs(model, encoder, rows, base=False)
    before = answer_logprobs(model, encoder, rows, base=True)
    good = [a - b for a, b, r in zip(after, before, rows) if r.advantage > 0]
    bad = [a - b for a, b, r in zip(after, before, rows) if r.advantage < 0]
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    return {"preset": name, "overrides": overrides, "steps": summary["steps"], "kl": round(summary["final_kl"], 4),
            "rise": round(math.exp(mean(good)), 3), "fall": round(math.exp(mean(bad)), 3),
            "gap_gain": round(mean(good) - mean(bad), 3), "rewarded": len(good), "unrewarded": len(bad)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_grpo_settings", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--base", required=True, help="the base's Hugging Face folder")
    ap.add_argument("--rollouts", required=True, help="a rollout set (conway rollouts)")
    ap.add_argument("--preset", action="append", choices=list(PRESETS), help="(default: every preset)")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="overrides for every preset")
    a = ap.parse_args(argv)
    from conway.errors import UserError

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-grpo-") as tmp:
        for name in a.preset or list(PRESETS):
            try:
                r = measure(Path(a.base), Path(a.rollouts), name, [*a.overrides, *PRESETS[name]], Path(tmp))
            except UserError as exc:
                sys.stderr.write(f"bench_grpo_settings: error: {exc}\n")
                return 1
            results.append(r)
            print(f"{name:<14} " + ("no signal" if r.get("no_signal") else
                                    f"rise x{r['rise']:<6} fall x{r['fall']:<6} gap +{r['gap_gain']:<6} nats  "
                                    f"KL {r['kl']:<7} steps {r['steps']}"), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
