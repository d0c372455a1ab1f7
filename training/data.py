"""Exported experience → supervised rows (prompt, image, completion) for a VLM policy.

    rows = load_rows(path)                      # `conway export --format hf` folder or conway-traj JSONL
    examples = build_examples(rows, DataSettings(...), config)
    enc = Encoder.from_pretrained(model_dir)    # the model's own tokenizer + image processor
    batch = enc.collate([enc.encode(e) for e in examples[:8]])

What makes a row train what the loop will later ask:

* the prompt is rebuilt with the policy adapter's own `build_messages`
  (instructions, constitution, action space, goals, request line, image last),
  so the tiny model is trained on exactly the text the loop sends;
* the image goes through the loop's resize rule (`policies.images.prepare_image`)
  and then through the model's own image processor;
* the completion is the target turn in the adapter family's format
  (`conway.policies.target_turns.render_target`), with the recorded sent size and
  convention, so coordinates stay right;
* the loss covers the assistant's tokens only (labels are -100 elsewhere).

Only labelled steps train by default (`require_labels`): a label from an
independent source (vision-check target, acceptance check, `conway review`).
Hindsight labels (a missed target turned into an example with the true
target) are marked and can be excluded.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field

from conway.errors import UserError
from conway.experience.conversation import policy_messages
from conway.experience.steps import read_records
from conway.policies.families import FAMILIES, get_family


class DataSettings(BaseModel):
    """Which experience becomes training rows, and how its target turn is written."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    path: str | None = None
    """An `export --format hf` folder or a conway-traj/1 JSONL file (None: given on the command line)."""
    policy_kind: Literal[tuple(FAMILIES)] = "generic"  # type: ignore[valid-type]  # the registry's families
    """Model family (conway.policies.families) whose prompt and answer format the rows use."""
    resize: str = "auto"
    """Resize rule for the image (a name from conway.geometry, auto: the family's default)."""
    convention: str = "auto"
    """Coordinate convention of the answers (auto: the family's default)."""
    image_encoding: Literal["jpeg", "png"] = "jpeg"
    """How the policy encodes the image it sends (policy.image_encoding): jpeg (q85) or png; rows match it."""
    require_labels: bool = True
    """Train only on steps an independent source labelled (refuse data without any)."""
    include_hindsight: bool = True
    """Include hindsight labels (missed targets turned into examples with the true target)."""
    include_wrong_without_correction: bool = False
    """Steps labelled wrong without a corrected action teach nothing; keep False."""
    snap_to_grid: int = Field(default=0, ge=0)
    """If > 0: teach the point on this pixel grid (cell centres, in the image as sent) that lies inside the
    target box nearest its centre, e.g. 28 = one point per Qwen-VL image token (a coarse target space)."""
    eval_fraction: float = Field(default=0.1, ge=0, lt=1)
    """Share of rows held out for the eval loss (by a seeded shuffle)."""
    max_examples: int | None = Field(default=None, ge=1)
    """Use at most this many rows (after filtering)."""
    seed: int = 0
    """Seed of the shuffle and the split."""


GOALS_BLOCK = re.compile(r'<file name="goals\.md">.*?</file>', re.S)
"""The goals part of a user turn as `conway.prompt.budget.build_parts` writes it."""


@dataclass
class Example:
    """One training row before tokenization."""

    messages: list[dict[str, Any]]
    """OpenAI-style chat messages as the policy sends them (the image part's url is a placeholder)."""
    image_png: bytes | None
    """The image as the policy sends it (already resized with the loop's rule)."""
    completion: str
    """The assistant's answer to learn (target turn), without the end-of-turn token."""
    meta: dict[str, Any] = field(default_factory=dict)

    def short(self, keep_goals: bool = False) -> "Example":
        """The same row with only the end of the prompt: the user turn's last text line and the image.

        Everything between that line and the answer is unchanged, so what a
        model learns about where the image tokens sit relative to its answer
        carries over to the full prompt (the curriculum's first phase).
        `keep_goals` also keeps the goals block (`<file name="goals.md">…`):
        without it a task whose answer depends on the goal ("click the green
        square" among several) cannot be learned in this phase at all.
        """
        user = self.messages[-1]
        parts = user["content"] if isinstance(user["content"], list) else [{"type": "text", "text": user["content"]}]
        kept = []
        for part in parts:
            if part.get("type") == "text":
                text = part["text"].strip()
                goals = GOALS_BLOCK.search(text) if keep_goals else None
                last = text.splitlines()[-1]
                kept.append({"type": "text", "text": (goals.group(0) + "\n\n" + last) if goals else last})
            else:
                kept.append(part)
        return Example(messages=[{"role": user["role"], "content": kept}], image_png=self.image_png,
                       completion=self.completion, meta={**self.meta, "short": True})


# --- reading exported data -----------------------------------------------------------------


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows with `record` (a conway-traj/1 dict) and `image` (PNG bytes or None)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise UserError(f"training data {p} does not exist (make it with `conway export --format hf`)")
    if p.is_dir():
        try:
            from datasets import load_from_disk
        except ImportError:
            raise UserError("reading an hf dataset needs the train extra (pip install -e '.[train]')") from None
        try:
            ds = load_from_disk(str(p))
        except (FileNotFoundError, ValueError) as exc:
            raise UserError(f"{p} is not a dataset folder written by `conway export --format hf`: {exc}") from None
        if "record" not in ds.column_names:
            raise UserError(f"{p} has no `record` column; it was not written by `conway export --format hf`")
        from datasets import Image as HFImage
        ds = ds.cast_column("image", HFImage(decode=False))
        rows = []
        for r in ds:
            img = r.get("image")
            rows.append({"record": json.loads(r["record"]), "image": img.get("bytes") if img else None})
        return rows
    return [{"record": rec, "image": None}
            for rec in read_records(p, " (a conway-traj/1 file has one record per line)")]


def data_hash(path: str | Path) -> str:
    """sha256 over the data files (a folder: every file, by relative path)."""
    p = Path(path)
    h = hashlib.sha256()
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for f in files:
        h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


# --- the target point ----------------------------------------------------------------------


def snap_point(box: list[float], grid: int, sent: tuple[int, int], captured: tuple[int, int]) -> tuple[float, float]:
    """The centre of a `grid`-pixel cell of the sent image that lies in `box` (captured px), nearest its centre.

    Falls back to the box centre when no cell centre is inside the box.
    """
    sx, sy = sent[0] / captured[0], sent[1] / captured[1]
    x0, y0, x1, y1 = box
    out = []
    for lo, hi, scale, n in ((x0, x1, sx, sent[0]), (y0, y1, sy, sent[1])):
        centre = (lo + hi) / 2
        cands = [(c + 0.5) * grid / scale for c in range(max(1, n // grid))
                 if lo <= (c + 0.5) * grid / scale <= hi]
        out.append(min(cands, key=lambda v: abs(v - centre)) if cands else centre)
    return out[0], out[1]


def target_box(rec: dict[str, Any]) -> list[float] | None:
    """Where a right answer lands (captured px): a generated case's target, else a label's (e.g. hindsight from
    an application's own layout log)."""
    return (rec.get("task") or {}).get("target_box") or (rec.get("labels") or {}).get("target_box")


def teaching_record(rec: dict[str, Any], settings: DataSettings) -> tuple[dict[str, Any] | None, str]:
    """The record to render, with the action to teach in `labels.corrected_action`; (None, why) to skip."""
    labels = rec.get("labels") or {}
    labelled = bool(labels.get("source"))
    if settings.require_labels and not labelled:
        return None, "unlabelled"
    if labels.get("hindsight") and not settings.include_hindsight:
        return None, "hindsight"
    verdict = labels.get("verdict")
    if verdict in ("wrong", "redundant") and not labels.get("corrected_action"):
        return None, f"labelled {verdict} without a correction"
    if labels.get("success") == "failure" and not labels.get("corrected_action"):
        return None, "failed without a correction"
    from conway.policies.target_turns import target_action
    action, _ = target_action(rec)
    if action is None:
        return None, "no action"
    box = target_box(rec)
    if settings.snap_to_grid and box and action.get("x") is not None:
        geo = rec.get("geometry") or {}
        captured = tuple(geo.get("captured_size") or (rec.get("observation") or {}).get("captured_size"))
        sent = tuple(geo.get("sent_size") or captured)
        x, y = snap_point(box, settings.snap_to_grid, sent, captured)  # type: ignore[arg-type]
        action = {**action, "x": x, "y": y}
    return {**rec, "labels": {**labels, "corrected_action": action}}, "ok"


# --- prompts -------------------------------------------------------------------------------


def _image_of(row: dict[str, Any], rec: dict[str, Any], home_root: Path | None) -> bytes | None:
    if row.get("image"):
        return row["image"]
    from conway.experience.steps import record_image
    return record_image(rec, home_root)


def build_examples(rows: Iterable[dict[str, Any]], settings: DataSettings, config: Any,
                   home_root: Path | None = None) -> tuple[list[Example], dict[str, int]]:
    """Rows → examples; returns (examples, counts of why rows were skipped)."""
    from conway.policies.target_turns import render_target

    family = get_family(settings.policy_kind)
    convention = settings.convention if settings.convention != "auto" else family.convention.value
    examples: list[Example] = []
    skipped: dict[str, int] = {}
    rows = list(rows)
    for row in rows:
        rec, why = teaching_record(row["record"], settings)
        if rec is None:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        png = _image_of(row, rec, home_root)
        if png is None:
            skipped["no image"] = skipped.get("no image", 0) + 1
            continue
        from conway.experience.conversation import step_context
        ctx = step_context(rec, png, config)
        messages, image = policy_messages(ctx, settings.policy_kind, settings.resize, settings.convention,
                                          settings.image_encoding)
        rec = {**rec, "geometry": {**(rec.get("geometry") or {}), "sent_size": list(image.sent_size),
                                   "captured_size": list(image.captured_size),
                                   "convention": convention, "policy": family.name}}
        try:
            target = render_target(rec, family)
        except ValueError as exc:
            skipped[f"not renderable: {exc}"] = skipped.get(f"not renderable: {exc}", 0) + 1
            continue
        examples.append(Example(messages=messages, image_png=image.data, completion=target.text,
                                meta={"session": rec.get("session"), "step": rec.get("step"),
                                      "hindsight": bool((rec.get("labels") or {}).get("hindsight")),
                                      "target_box": target_box(rec),
                                      "sent_size": list(image.sent_size),
                                      "captured_size": list(image.captured_size),
                                      # the answer's coordinates are read back in the convention they were
                                      # written in (held-out scoring), whatever the family's default
                                      "convention": target.convention}))
    if not examples:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())) or "no rows"
        if settings.require_labels and skipped.get("unlabelled"):
            raise UserError(f"no labelled steps to train on ({len(rows)} row(s); skipped {reasons}). The recipe "
                            "needs labels (data.require_labels=true): label steps with `conway review`, or export "
                            "vision-check practice with `conway export --from-report REPORT`")
        raise UserError(f"no usable training rows ({len(rows)} row(s); skipped {reasons})")
    rng = random.Random(settings.seed)
    rng.shuffle(examples)
    if settings.max_examples:
        examples = examples[: settings.max_examples]
    return examples, skipped


def split(examples: list[Example], eval_fraction: float) -> tuple[list[Example], list[Example]]:
    n_eval = int(round(len(examples) * eval_fraction))
    if eval_fraction > 0 and len(examples) >= 4:
        n_eval = max(1, n_eval)
    else:
        n_eval = 0
    return examples[n_eval:], examples[:n_eval]


# --- tokenization --------------------------------------------------------------------------


def hf_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI image_url parts → the `{"type": "image"}` parts HF chat templates expect."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [{"type": "image"} if p.get("type") in ("image_url", "image") else p for p in content]
        out.append({"role": m["role"], "content": content})
    return out


class Encoder:
    """The model's own tokenizer and image processor; turns examples into model inputs."""

    IMAGE_TOKEN = "<|image_pad|>"

    def __init__(self, tokenizer: Any, image_processor: Any, end_of_turn: str = "<|im_end|>"):
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.end_of_turn = end_of_turn
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.IMAGE_TOKEN)
        self.merge = int(getattr(image_processor, "merge_size", 2))
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else tokenizer.convert_tokens_to_ids("<|endoftext|>")

    @classmethod
    def from_pretrained(cls, path: str | Path) -> "Encoder":
        from transformers import AutoImageProcessor, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(path))
        ip = AutoImageProcessor.from_pretrained(str(path))
        return cls(tok, ip)

    def prompt_text(self, messages: list[dict[str, Any]]) -> str:
        return self.tokenizer.apply_chat_template(hf_messages(messages), tokenize=False, add_generation_prompt=True)

    def image_inputs(self, png: bytes) -> dict[str, Any]:
        from PIL import Image

        with Image.open(io.BytesIO(png)) as im:
            img = im.convert("RGB")
        return dict(self.image_processor(images=[img], return_tensors="pt"))

    def encode(self, ex: Example, with_completion: bool = True) -> dict[str, Any]:
        import torch

        text = self.prompt_text(ex.messages)
        out: dict[str, Any] = {}
        if ex.image_png is not None:
            img = self.image_inputs(ex.image_png)
            n = int(img["image_grid_thw"][0].prod()) // (self.merge ** 2)
            if text.count(self.IMAGE_TOKEN) != 1:
                raise ValueError(f"the chat template placed {text.count(self.IMAGE_TOKEN)} image markers; expected 1")
            text = text.replace(self.IMAGE_TOKEN, self.IMAGE_TOKEN * n)
            out.update(pixel_values=img["pixel_values"], image_grid_thw=img["image_grid_thw"])
        prompt_ids = self.tokenizer(text, add_special_tokens=False).input_ids
        completion_ids = self.completion_ids(ex.completion) if with_completion else []
        ids = prompt_ids + completion_ids
        out["input_ids"] = torch.tensor(ids)
        out["labels"] = torch.tensor([-100] * len(prompt_ids) + completion_ids)
        out["prompt_len"] = len(prompt_ids)
        return out

    def completion_ids(self, completion: str) -> list[int]:
        """The target turn's tokens, then the real end of turn. The target is text: a `<|im_end|>` the model
        wrote (copied from a screen) stays characters, never the special token, or training would teach
        ending the turn there."""
        text = self.tokenizer(completion, add_special_tokens=False, split_special_tokens=True).input_ids
        return list(text) + list(self.tokenizer(self.end_of_turn, add_special_tokens=False).input_ids)

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """Right-padded batch; loss only on completion tokens; mm_token_type_ids marks image tokens."""
        import torch

        length = max(len(it["input_ids"]) for it in items)
        ids = torch.full((len(items), length), self.pad_id, dtype=torch.long)
        labels = torch.full((len(items), length), -100, dtype=torch.long)
        att = torch.zeros((len(items), length), dtype=torch.long)
        for i, it in enumerate(items):
            n = len(it["input_ids"])
            ids[i, :n] = it["input_ids"]
            labels[i, :n] = it["labels"]
            att[i, :n] = 1
        batch: dict[str, Any] = {"input_ids": ids, "attention_mask": att, "labels": labels,
                                 "mm_token_type_ids": (ids == self.image_token_id).long()}
        if any("pixel_values" in it for it in items):
            batch["pixel_values"] = torch.cat([it["pixel_values"] for it in items if "pixel_values" in it])
            batch["image_grid_thw"] = torch.cat([it["image_grid_thw"] for it in items if "image_grid_thw" in it])
        return batch
