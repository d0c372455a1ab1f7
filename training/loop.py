"""The training loop under accelerate: AdamW steps (the curriculum's short-prompt phase first), loss records in
train/metrics.jsonl, held-out checks, checkpoints, and why it stopped (max steps, early stop on held-out hits,
max seconds). The adapter folder it saves (weights + resolved recipe + training state) is written here too."""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.held_out import HeldOut
from training.recipe import Recipe


@dataclass
class Prepared:
    """What accelerate prepared for the loop: the model, its optimizer over `params`, the data loaders."""

    accelerator: Any
    model: Any
    opt: Any
    params: list[Any]
    loader: Any
    short_loader: Any | None  # the curriculum's short prompts; None without a curriculum


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


class TrainLoop:
    """One run of optimizer steps; afterwards its fields say what happened (step, stop_reason, losses, metrics)."""

    def __init__(self, recipe: Recipe, prepared: Prepared, held_out: HeldOut, out: Path, data_sha256: str, *,
                 progress: bool) -> None:
        from tqdm import tqdm

        self.recipe, self.prepared, self.held_out, self.out, self.data_sha256 = (recipe, prepared, held_out, out,
                                                                                  data_sha256)
        self.metrics: list[dict[str, Any]] = []
        self.metrics_path = out / "train" / "metrics.jsonl"
        self.step = 0
        self.stop_reason = "max_steps"
        self.t0 = time.time()
        self.bar = tqdm(total=recipe.train.max_steps, desc="train", unit="step",
                        disable=not progress or not prepared.accelerator.is_main_process, file=sys.stderr)
        self.first_loss: float | None = None
        self.last_loss: float | None = None
        self.best_hits: float | None = None

    def run(self) -> None:
        try:
            while self.step < self.recipe.train.max_steps and self.stop_reason == "max_steps":
                self._run_phase(self._phase())
        finally:
            self.bar.close()

    def final_check(self) -> dict[str, Any]:
        """The held-out check at the last step: the one the loop just recorded, or a new one."""
        last = self.metrics[-1] if self.metrics else None
        return last if last and "eval_loss" in last and last["step"] == self.step else self.check()

    def check(self) -> dict[str, Any]:
        """Measure the model on the held-out rows now, and record it."""
        entry: dict[str, Any] = {"step": self.step, "t": round(time.time() - self.t0, 2)}
        entry.update(self.held_out.measure(self.prepared.model, self.prepared.accelerator, self.recipe))
        self.record(entry)
        return entry

    def record(self, entry: dict[str, Any]) -> None:
        self.metrics.append(entry)
        with open(self.metrics_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")

    def _phase(self) -> Any:
        short = self.prepared.short_loader
        return short if short is not None and self.step < self.recipe.train.short_prompt_steps else self.prepared.loader

    def _run_phase(self, phase: Any) -> None:
        """One pass over a loader, left early when the run stops or the curriculum's short phase ends."""
        for batch in phase:
            loss = self._forward_backward(batch)
            if not self.prepared.accelerator.sync_gradients:
                continue  # accumulating gradients: not an optimizer step yet
            self._after_step(loss)
            if self.step >= self.recipe.train.max_steps or self.stop_reason != "max_steps":
                break
            if phase is self.prepared.short_loader and self.step >= self.recipe.train.short_prompt_steps:
                break  # the curriculum's first phase is over: continue on the full prompt

    def _forward_backward(self, batch: dict[str, Any]) -> Any:
        p, t = self.prepared, self.recipe.train
        with p.accelerator.accumulate(p.model):
            for g in p.opt.param_groups:
                g["lr"] = lr_at(self.step, self.recipe)
            loss = p.model(**batch).loss
            p.accelerator.backward(loss)
            if t.max_grad_norm and p.accelerator.sync_gradients:
                p.accelerator.clip_grad_norm_(p.params, t.max_grad_norm)
            p.opt.step()
            p.opt.zero_grad()
        return loss

    def _after_step(self, loss: Any) -> None:
        """Count an optimizer step; log, check, checkpoint when due; stop when out of time."""
        t = self.recipe.train
        self.step += 1
        self.last_loss = float(loss.detach())
        self.first_loss = self.last_loss if self.first_loss is None else self.first_loss
        self.bar.update(1)
        if self.step % t.log_every == 0 or self.step == 1:
            self.record({"step": self.step, "loss": round(self.last_loss, 5), "lr": lr_at(self.step - 1, self.recipe),
                         "t": round(time.time() - self.t0, 2)})
            self.bar.set_postfix(loss=f"{self.last_loss:.3f}", refresh=False)
        if self.step % t.eval_every == 0:
            self._check_and_maybe_stop()
        if t.save_every and self.step % t.save_every == 0:
            save_adapter(self.prepared.accelerator.unwrap_model(self.prepared.model),
                         self.out / "checkpoints" / f"step-{self.step}", self.recipe, self.data_sha256, self.step,
                         self.last_loss)
        if t.max_seconds and time.time() - self.t0 >= t.max_seconds:
            self.stop_reason = f"max_seconds ({t.max_seconds:g} s)"

    def _check_and_maybe_stop(self) -> None:
        """A held-out check; with a hit rate, report it and stop early once it reaches early_stop_hits."""
        entry = self.check()
        if entry.get("hit_rate") is None:
            return
        self.best_hits = max(self.best_hits or 0.0, entry["hit_rate"])
        self.bar.write(f"step {self.step}: held-out hits {entry['hits']}/{entry['scored']} "
                       f"({entry['hit_rate']:.0%}), eval loss {entry['eval_loss']:.3f}, "
                       f"{entry['distinct_answers']} distinct answers")
        if self.recipe.train.early_stop_hits and entry["hit_rate"] >= self.recipe.train.early_stop_hits:
            self.stop_reason = f"early stop: held-out hit rate {entry['hit_rate']:.0%}"


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
