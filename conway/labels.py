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
from typing import Any, Callable, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .actions import ActionProblem, parse_action
from .errors import UserError

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
        return self.model_dump(by_alias=True)


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
    if label.note:
        out["note"] = label.note
    return out


def parse_review_line(text: str) -> tuple[str, dict[str, Any] | None]:
    """Parse what a reviewer typed: `c`, `w`, `r`, `s` (skip) or `w {json action}`.

    Returns (verdict or 'skip'/'quit', corrected action or None). Raises
    UserError with a reason for anything else.
    """
    text = text.strip()
    if not text:
        return "skip", None
    head, _, rest = text.partition(" ")
    verdicts = {"c": "correct", "correct": "correct", "w": "wrong", "wrong": "wrong",
                "r": "redundant", "redundant": "redundant", "s": "skip", "skip": "skip",
                "q": "quit", "quit": "quit"}
    verdict = verdicts.get(head.lower())
    if verdict is None:
        raise UserError(f"unknown answer {head!r}: type c (correct), w (wrong), r (redundant), s (skip) or q (quit); "
                        'after w you may add the corrected action as JSON, e.g. w {"type": "click", "x": 10, "y": 20}')
    action = None
    if rest.strip():
        if verdict != "wrong":
            raise UserError("a corrected action only goes with w (wrong)")
        try:
            raw = json.loads(rest)
        except (ValueError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
            raise UserError(f"the corrected action is not JSON: {reason}") from None
        parsed = parse_action(raw)
        if isinstance(parsed, ActionProblem):
            raise UserError(f"the corrected action is not valid: {parsed.message}")
        action = parsed.model_dump()
    return verdict, action


# --- `conway review` ------------------------------------------------------------------------


def _step_summary(rec: dict[str, Any]) -> str:
    dec = rec.get("decision") or {}
    obs = rec.get("observation") or {}
    lines = [f"── {rec['session']} step {rec['step']}  ({rec.get('t_start')})"
             + ("  [dry run]" if rec.get("dry_run") else "") + ("  [uncertain]" if rec.get("uncertain") else "")]
    if obs:
        lines.append(f"   screenshot: {obs.get('screenshot') or '(not archived)'}  size {obs.get('captured_size')}")
    if dec.get("thought"):
        lines.append(f"   thought:  {str(dec['thought'])[:300]}")
    for a in dec.get("actions") or []:
        lines.append(f"   proposed: {json.dumps(a, ensure_ascii=False)[:300]}")
    for a in rec.get("actions") or []:
        what = a.get("error") or a.get("output") or a.get("detail") or ""
        lines.append(f"   {a.get('kind')}: {str(what)[:200]}")
    for e in rec.get("errors") or []:
        lines.append(f"   error: {str(e.get('error'))[:200]}")
    if rec.get("finish"):
        lines.append(f"   model's own report: {rec['finish'].get('status')} (not a label)")
    return "\n".join(lines)


def review(home: Any, *, session: str | None = None, step: int | None = None, verdict: str | None = None,
           action: str | None = None, note: str = "", include_dry_runs: bool = False,
           relabel: bool = False, read: Callable[[str], str] = input,
           say: Callable[[str], None] = print) -> int:
    """Label recorded steps as a person: interactively, or one step at a time with --step/--verdict.

    Returns how many labels were written. Labels go to labels.jsonl beside the
    journal with source `review`; the journal itself is never touched.
    """
    from .export import collect_records

    records, _, _ = collect_records(home.journal_dir, include_dry_runs=include_dry_runs, include_uncertain=True,
                                    home_root=home.root)
    if session:
        records = [r for r in records if r["session"] == session]
        if not records:
            raise UserError(f"no recorded steps for session {session!r}")
    path = labels_path(home.root)
    existing = read_labels(path)
    if verdict is not None or step is not None:  # one step, from the command line
        if step is None or verdict is None:
            raise UserError("--step and --verdict go together (and --session when several sessions recorded it)")
        matches = [r for r in records if r["step"] == step]
        if not matches:
            raise UserError(f"no recorded step {step}" + (f" in session {session}" if session else ""))
        if len({r["session"] for r in matches}) > 1:
            raise UserError(f"step {step} exists in several sessions ({', '.join(sorted({r['session'] for r in matches}))}); "
                            "add --session")
        text = verdict + (f" {action}" if action else "")
        v, corrected = parse_review_line(text)
        if v in ("skip", "quit"):
            raise UserError("--verdict must be correct, wrong or redundant")
        lab = Label(session=matches[0]["session"], step=step, source="review", verdict=v,  # type: ignore[arg-type]
                    corrected_action=corrected, note=note, hindsight=relabel)
        append_labels(path, [lab])
        say(f"labelled {lab.session} step {step}: {v}" + (" with a corrected action" if corrected else ""))
        return 1
    todo = [r for r in records if existing.get(r["session"], r["step"]) is None]
    if not todo:
        say(f"every recorded step already has a label ({len(existing)} in {path})")
        return 0
    say(f"{len(todo)} unlabelled step(s). Answer c (correct), w (wrong) [corrected action JSON], "
        "r (redundant), s (skip) or q (quit).")
    written = 0
    for rec in todo:
        say(_step_summary(rec))
        while True:
            try:
                answer = read("   label> ")
            except EOFError:
                answer = "q"
            try:
                v, corrected = parse_review_line(answer)
                break
            except UserError as exc:
                say(f"   {exc}")
        if v == "quit":
            break
        if v == "skip":
            continue
        append_labels(path, [Label(session=rec["session"], step=rec["step"], source="review",
                                   verdict=v, corrected_action=corrected, note=note)])  # type: ignore[arg-type]
        written += 1
    say(f"wrote {written} label(s) to {path}")
    return written
