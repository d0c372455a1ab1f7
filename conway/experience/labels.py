"""Labels: judgements about recorded steps, from independent sources only.

Labels live in `labels.jsonl` beside the journal folder (never inside the
journal, never in the model's own words). One line per judgement; a later
line about the same step replaces an earlier one, so a person can change
their mind with `conway review` without anything being rewritten.

Sources:

* ``review``            a person, through `conway review`;
* ``vision-check``      a generated case: the target box is ground truth;
* ``acceptance-check``  / ``task-check``: a checker verified (or not) what a
  session was asked to do.

A model's `finish` is never a source. Hindsight relabelling (a missed
vision-check case turned into an example with the true target) is allowed and
marked ``hindsight: true`` so a dataset can include or exclude it knowingly.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from conway.actions import ActionProblem, parse_action

SCHEMA = "conway-label/1"
LABELS_FILE = "labels.jsonl"
SOURCES = ("review", "vision-check", "acceptance-check", "task-check")
VERDICTS = ("correct", "wrong", "redundant")

Verdict = Literal["correct", "wrong", "redundant"]
Source = Literal["review", "vision-check", "acceptance-check", "task-check"]
Success = Literal["unknown", "success", "failure"]


class Label(BaseModel):
    """One judgement about one recorded step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_: str = Field(default=SCHEMA, alias="schema")
    """Format tag of a label line."""
    session: str = Field(min_length=1, max_length=200)
    """Session id of the step (as in the journal)."""
    step: int = Field(ge=0)
    """Step number inside the session."""
    source: Source
    """Who judged: a person (review) or an independent checker. Never the model."""
    verdict: Verdict | None = None
    """Was the recorded action correct, wrong, or redundant (did nothing useful)?"""
    success: Success = "unknown"
    """Outcome of the step's task as verified by the source (unknown when nobody checked)."""
    corrected_action: dict[str, Any] | None = None
    """The action that should have been taken (captured-screenshot pixels), if given."""
    hindsight: bool = False
    """True when the label was made after the fact from a known answer (e.g. a missed target)."""
    target_box: list[float] | None = Field(default=None, min_length=4, max_length=4)
    """Where a right action lands, [x0, y0, x1, y1] in captured-screenshot pixels, when the source knows it
    (e.g. a button's box from the application's own layout log); training snaps and scores answers with it."""
    note: str = Field(default="", max_length=4000)
    """Free text from the reviewer or checker."""
    ts: float = Field(default_factory=time.time)
    """When the judgement was recorded (unix seconds)."""

    @field_validator("corrected_action")
    @classmethod
    def _valid_action(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
        parsed = parse_action(v)
        if isinstance(parsed, ActionProblem):
            raise ValueError(parsed.message)
        return parsed.model_dump()

    def record(self) -> dict[str, Any]:
        out = self.model_dump(by_alias=True)
        if out.get("target_box") is None:
            out.pop("target_box", None)
        return out


def labels_path(home_root: Path) -> Path:
    """Where a home keeps its labels: `labels.jsonl` beside `journal/`."""
    return home_root / LABELS_FILE


def append_labels(path: Path, labels: Iterable[Label]) -> int:
    """Append label lines (flushed and fsynced); returns how many were written."""
    lines = [json.dumps(lab.record(), ensure_ascii=False, sort_keys=True) + "\n" for lab in labels]
    if not lines:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines(lines)
        fh.flush()
        import os
        os.fsync(fh.fileno())
    return len(lines)


@dataclass
class LabelIndex:
    """The latest label per (session, step), plus lines that did not parse."""

    by_step: dict[tuple[str, int], Label]
    skipped: list[str]

    def get(self, session: str, step: int) -> Label | None:
        return self.by_step.get((session, step))

    def __len__(self) -> int:
        return len(self.by_step)


def read_labels(path: Path) -> LabelIndex:
    """Read `labels.jsonl`; a torn or invalid line is listed in `skipped`, never fatal."""
    index = LabelIndex({}, [])
    if not path.exists():
        return index
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                lab = Label.model_validate(json.loads(raw))
            except (ValueError, ValidationError):
                index.skipped.append(f"{path.name}:{n}")
                continue
            index.by_step[(lab.session, lab.step)] = lab
    return index


def label_summary(label: Label | None) -> dict[str, Any]:
    """What a trajectory record carries in `labels` (success unknown without a label)."""
    if label is None:
        return {"success": "unknown"}
    out: dict[str, Any] = {"success": label.success, "source": label.source, "hindsight": label.hindsight}
    if label.verdict:
        out["verdict"] = label.verdict
    if label.corrected_action:
        out["corrected_action"] = label.corrected_action
    if label.target_box:
        out["target_box"] = label.target_box
    if label.note:
        out["note"] = label.note
    return out
