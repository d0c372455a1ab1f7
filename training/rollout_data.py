"""A rollout set (`conway rollouts`, conway.evals.rollouts) → training rows, with no labelled action anywhere.

Each request a rollout's policy sent is kept in the rollout's `requests.jsonl`: the messages exactly as sent
(each image written out beside them) and the model's raw answer. A row is that request as it was: the same
messages (the image part becomes the marker the encoder expands), the same image bytes, and the model's own
answer as the completion, so what a row trains is exactly what the policy saw and said.

    examples = rollout_examples(folder, only_success=True)      # rejection-sampling SFT
    groups = rollout_groups(folder)                               # the policy-gradient stage: per task, per rollout
    provenance = rollout_provenance(folder, "grpo")               # what a candidate's manifest names

Only requests with one image are rows (the tiny model's encoder takes one; a request with none or several is
counted and left out).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.evals.rollouts import MANIFEST, load_rollouts
from conway.experience.conversation import IMAGE_MARKER
from training.data import Example


def is_rollout_set(path: str | Path | None) -> bool:
    return bool(path) and (Path(str(path)).expanduser() / MANIFEST).is_file()


@dataclass
class Rollout:
    """One rollout's reward and its requests as rows."""

    task: str
    sample: int
    seed: int | None
    reward: float
    examples: list[Example]


def _row(entry: dict[str, Any], folder: Path, meta: dict[str, Any]) -> tuple[Example | None, str]:
    """A request → a row; (None, why) when it cannot be one."""
    if not isinstance(entry.get("answer"), str) or not entry["answer"].strip():
        return None, "no answer"
    images: list[Path] = []
    messages = []
    for m in entry.get("messages") or []:
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                url = (part.get("image_url") or {}).get("url") if isinstance(part, dict) else None
                if url:
                    images.append(folder / url)
                    parts.append({"type": "image_url", "image_url": {"url": IMAGE_MARKER}})
                else:
                    parts.append(part)
            content = parts
        messages.append({"role": m.get("role"), "content": content})
    if len(images) != 1:
        return None, f"{len(images)} images"
    if not images[0].is_file():
        return None, "image missing"
    return Example(messages=messages, image_png=images[0].read_bytes(), completion=entry["answer"],
                   meta={**meta, "request": entry.get("index")}), "ok"


def rollout_groups(path: str | Path) -> tuple[dict[str, list[Rollout]], dict[str, int]]:
    """Per task, its scored rollouts with their rows; and counts of what was left out, by why."""
    folder = Path(path).expanduser()
    manifest = load_rollouts(folder)
    out: dict[str, list[Rollout]] = {}
    skipped: dict[str, int] = {}
    for r in manifest["rollouts"]:
        if r.get("reward") is None:
            skipped[f"not scored ({r.get('outcome')})"] = skipped.get(f"not scored ({r.get('outcome')})", 0) + 1
            continue
        req = r.get("requests") or {}
        if not req.get("path"):
            skipped["no requests recorded"] = skipped.get("no requests recorded", 0) + 1
            continue
        req_path = _find(folder, req["path"])
        meta = {"task": r["task"], "sample": r.get("sample"), "seed": r.get("seed"), "reward": r["reward"],
                "session": r.get("session")}
        rows = []
        for line in req_path.read_text(encoding="utf-8").splitlines():
            ex, why = _row(json.loads(line), req_path.parent, meta)
            if ex is None:
                skipped[why] = skipped.get(why, 0) + 1
            else:
                rows.append(ex)
        out.setdefault(str(r["task"]), []).append(Rollout(str(r["task"]), int(r.get("sample") or 0), r.get("seed"),
                                                          float(r["reward"]), rows))
    return out, skipped


def _find(folder: Path, relative: str) -> Path:
    """The requests file, named relative to the rollout set's folder (where the rollouts' homes lie)."""
    path = folder / relative
    if not path.is_file():
        raise UserError(f"{path} is missing: the rollout set {folder} is incomplete")
    return path


def rollout_examples(path: str | Path, *, only_success: bool = True,
                     success_reward: float = 1.0) -> tuple[list[Example], dict[str, int]]:
    """Rejection sampling: the rows of the rollouts whose reward reached `success_reward`."""
    by_task, skipped = rollout_groups(path)
    examples: list[Example] = []
    for rollouts in by_task.values():
        for r in rollouts:
            if only_success and r.reward < success_reward:
                skipped["unsuccessful rollout"] = skipped.get("unsuccessful rollout", 0) + len(r.examples)
                continue
            examples.extend(r.examples)
    if not examples:
        total = sum(len(v) for v in by_task.values())
        raise UserError(f"no successful rollout to learn from in {path} ({total} scored rollout(s), none reached "
                        f"reward {success_reward:g}); skipped: " + (", ".join(f"{k} {v}" for k, v in skipped.items())
                                                                    or "nothing"))
    return examples, skipped


def rollout_provenance(path: str | Path, stage: str) -> dict[str, Any]:
    """What a candidate trained on this rollout set records about it (its manifest's `rollouts`)."""
    folder = Path(path).expanduser().resolve()
    manifest = load_rollouts(folder)
    return {"stage": stage, "path": str(folder),
            "manifest_sha256": hashlib.sha256((folder / MANIFEST).read_bytes()).hexdigest(),
            "policy": manifest.get("policy"), "suite": manifest.get("suite"), "samples": manifest.get("samples"),
            "temperature": manifest.get("temperature"), "mean_reward": manifest.get("mean_reward"),
            "rewards": {t: g.get("rewards") for t, g in (manifest.get("tasks") or {}).items()}}
