"""Journal → step records: one `conway-traj/1` record per step, with its labels and screenshot.


Format `conway-traj/1`, one JSON object per step:

    format, session, step, t_start, t_end
    instruction   the goals / task text the model saw at that step (journaled when it changes)
    host_facts    the host-facts part's text the model saw at that step (journaled when it changes;
                  absent when the part was off, or from a journal older than that record)
    observation   the journal's observation record: screenshot path + sha256,
                  captured size, logical size, accessibility length, ...
    geometry      captured_size, sent_size, convention, resize_rule (what the
                  model saw and how its coordinates read; from the decision)
    prompt        sha256 and the names of the parts the prompt was built from
                  (when the policy recorded them)
    decision      raw output, thought, reasoning, parsed actions, usage, meta
    actions       results (or errors) of what was dispatched
    errors        pre-dispatch errors
    uncertain, dry_run, discarded, finish (the model's own word, never a label)
    model_id, harness_revision
    labels        {"success": "unknown"} unless an independent source said
                  otherwise (see `conway.experience.labels`)

Image bytes never appear in the JSONL. `--format hf` writes a Hugging Face
`datasets` folder instead, with the screenshot as an `Image` feature; `--style`
renders each step's target turn in one model family's own action format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from conway.errors import UserError
from conway.experience.labels import LabelIndex, label_summary, labels_path, read_labels
from conway.store.events import Acceptance, Decision, Finish, Intent, SessionGoals, SessionHostFacts, SessionStart
from conway.store.journal import read_journal

FORMAT = "conway-traj/1"
GEOMETRY_KEYS = ("sent_size", "captured_size", "convention", "resize_rule", "policy")


def read_records(path: Path, not_json: str) -> list[dict[str, Any]]:
    """The records of a conway-traj/1 JSONL file, in order (blank lines skipped).

    A line that is not JSON is a UserError naming it, with `not_json` after
    (what the file should be); so is one that is not a conway-traj/1 record.
    """
    records = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise UserError(f"{path}:{n} is not JSON{not_json}") from None
            if not isinstance(rec, dict) or rec.get("format") != FORMAT:
                raise UserError(f"{path}:{n} is not a {FORMAT} record")
            records.append(rec)
    return records


def steps_from_events(events: Iterable[dict[str, Any]], include_dry_runs: bool = False,
                      include_uncertain: bool = False) -> list[dict[str, Any]]:
    """Group events by (session, step) into step records. Image bytes never appear.

    Dry runs and uncertain steps are left out unless asked for: a dry run did
    nothing, and an uncertain step may or may not have happened.
    """
    grouping = _Grouping()
    for ev in events:
        kind = ev.get("kind")
        if kind == "session":
            grouping.session_event(ev)
            continue
        if kind in ("recovery", "control", "memory"):  # not a step's: memory's compaction runs between cycles
            continue
        if kind == "human":  # a person's action during a takeover (or `conway record`): a row of its own
            grouping.human_row(ev)
            continue
        rec = grouping.record_for(ev)
        rec["t_end"] = ev.get("ts")
        _apply_event(rec, kind, ev.get("payload") or {})
    return grouping.records(include_dry_runs, include_uncertain)


@dataclass
class _Grouping:
    """The step records being built, in first-seen order, and what the session events say about them."""

    steps: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    order: list[tuple[str, int]] = field(default_factory=list)
    revisions: dict[str, str | None] = field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    goals: dict[str, str] = field(default_factory=dict)
    facts: dict[str, str] = field(default_factory=dict)

    def session_event(self, ev: dict[str, Any]) -> None:
        start, told, accepted = SessionStart.of(ev), SessionGoals.of(ev), Acceptance.of(ev)
        host = SessionHostFacts.of(ev)
        if start:
            self.revisions[ev.get("session", "?")] = start.revision
        elif told:  # the goals / task text the model saw from here on
            self.goals[ev.get("session", "?")] = told.text  # type: ignore[assignment]
        elif host and isinstance(host.text, str):  # the host facts from here on: journaled while the step's
            sid = ev.get("session", "?")           # prompt is built, after its observation
            self.facts[sid] = host.text
            here = self.steps.get((sid, _step_of(ev)))
            if here is not None and host.text:
                here["host_facts"] = host.text
            elif here is not None:  # the part emptied: this step's prompt had none
                here.pop("host_facts", None)
        elif accepted and accepted.verified is not None:
            # a task's acceptance criteria, checked by Conway (never the model's word): labels the session
            self.checks[ev.get("session", "?")] = {"success": "success" if accepted.verified else "failure",
                                                   "source": "task-check", "scope": "session",
                                                   "report": accepted.report}

    def record_for(self, ev: dict[str, Any]) -> dict[str, Any]:
        """The step record of the event's (session, step), begun at its first event."""
        key = (ev.get("session", "?"), int(ev.get("step", 0)))
        rec = self.steps.get(key)
        if rec is None:
            rec = self.steps[key] = {"format": FORMAT, "session": key[0], "step": key[1], "t_start": ev.get("ts"),
                                     "t_end": ev.get("ts"), "observation": None, "geometry": None, "prompt": None,
                                     "decision": None, "actions": [], "errors": [], "uncertain": False,
                                     "dry_run": False, "finish": None, "model_id": None, "harness_revision": None,
                                     "labels": {"success": "unknown"}}
            if self.goals.get(key[0]):
                rec["instruction"] = self.goals[key[0]]
            if self.facts.get(key[0]):
                rec["host_facts"] = self.facts[key[0]]
            self.order.append(key)
        return rec

    def human_row(self, ev: dict[str, Any]) -> None:
        """A person's action (a step of its own) as a labelled row: the screen they acted on and their action,
        which is the label."""
        p = ev.get("payload") or {}
        if p.get("valid") is False or not isinstance(p.get("action"), dict):
            return
        rec = self.record_for(ev)
        rec.update(actor="human", t_end=ev.get("ts"), observation=p.get("observation"),
                   actions=[{"kind": "human", "action": p["action"], "ok": True}],
                   labels={"success": "unknown", "source": "human", "verdict": "correct",
                           "corrected_action": p["action"], "note": "a person's own action (takeover or recording)"})

    def records(self, include_dry_runs: bool, include_uncertain: bool) -> list[dict[str, Any]]:
        """The finished records, in order, without those left out (dry runs, uncertain, empty steps)."""
        out = []
        for key in self.order:
            rec = self.steps[key]
            rec["harness_revision"] = rec["harness_revision"] or self.revisions.get(key[0])
            if key[0] in self.checks:
                rec["labels"] = dict(self.checks[key[0]])
            if rec["geometry"] is None and rec["observation"]:
                size = rec["observation"].get("captured_size")
                rec["geometry"] = {"captured_size": size} if size else None
            if rec["dry_run"] and not include_dry_runs:
                continue
            if rec["uncertain"] and not include_uncertain:
                continue
            if rec["observation"] is None and rec["decision"] is None and not rec["actions"]:
                continue
            out.append(rec)
        return out


def _apply_event(rec: dict[str, Any], kind: Any, p: dict[str, Any]) -> None:
    """What one step event adds to its step's record."""
    if kind == "observation":
        rec["observation"] = p
    elif kind == "decision":
        _apply_decision(rec, p)
    elif kind in ("result", "error", "suppressed"):
        if p.get("dry_run"):
            rec["dry_run"] = True
        entry = {"kind": kind, **p}
        (rec["errors"] if kind == "error" and "action" not in p else rec["actions"]).append(entry)
    elif kind == "uncertain":
        rec["uncertain"] = True
        rec["actions"].append({"kind": "uncertain", **p})
    elif kind == "finish":
        declared = Finish.from_payload(p)
        rec["finish"] = {"status": declared.status, "message": declared.message,
                         "declared_by": declared.declared_by or "model"}  # `conway record`'s: the person's
    elif kind == "intent":
        rec.setdefault("intents", []).append(Intent.from_payload(p).action)


def _apply_decision(rec: dict[str, Any], p: dict[str, Any]) -> None:
    decided = Decision.from_payload(p)
    if decided.discarded:
        rec["discarded"] = True
    rec["decision"] = {k: p.get(k) for k in p if k not in ("dry_run",)}
    rec["model_id"] = decided.model_id
    if decided.harness_revision:
        rec["harness_revision"] = decided.harness_revision
    rec["dry_run"] = rec["dry_run"] or bool(decided.dry_run)
    geo = {k: p[k] for k in GEOMETRY_KEYS if p.get(k) is not None}
    if geo:
        rec["geometry"] = geo
    prompt = {k: p[k] for k in ("prompt_sha256", "prompt_parts") if p.get(k) is not None}
    if prompt:
        rec["prompt"] = {"sha256": prompt.get("prompt_sha256"), "parts": prompt.get("prompt_parts")}


def _step_of(ev: dict[str, Any]) -> int:
    try:
        return int(ev.get("step", 0))
    except (TypeError, ValueError):
        return -1


def attach_labels(records: list[dict[str, Any]], labels: LabelIndex) -> int:
    """Put each step's latest label into its record; returns how many steps carry one."""
    n = 0
    for rec in records:
        if rec.get("actor") == "human":  # the person's action is its own label
            n += 1
            continue
        lab = labels.get(rec["session"], rec["step"])
        if lab is None and (rec.get("labels") or {}).get("source"):
            n += 1  # a session-level check already labelled it
            continue
        rec["labels"] = label_summary(lab)
        n += lab is not None
    return n


# --- files ---------------------------------------------------------------------------


def screenshot_file(rec: dict[str, Any], home_root: Path | None) -> Path | None:
    """Where the step's screenshot should be (None when none was archived)."""
    shot = (rec.get("observation") or {}).get("screenshot")
    if not shot:
        return None
    path = Path(shot)
    if not path.is_absolute() and home_root is not None:
        path = home_root / path
    return path


def record_image(rec: dict[str, Any], home_root: Path | None) -> bytes | None:
    """PNG bytes of a step's image: the archived screenshot, or a regenerated vision-check case (hash-checked)."""
    gen = (rec.get("task") or {}).get("generator")
    if gen:
        from conway.observe.vision_cases import GENERATOR, generate_case

        if gen.get("name") != GENERATOR:
            raise UserError(f"{rec['session']} step {rec['step']}: made by image generator {gen.get('name')!r}, "
                            f"this Conway has {GENERATOR!r}; the image cannot be regenerated")
        case = generate_case(int(gen["seed"]), int(gen["index"]), (int(gen["size"][0]), int(gen["size"][1])),
                             gen.get("profile", "standard"))
        want = (rec.get("observation") or {}).get("sha256")
        if want and case.sha256 != want:
            raise UserError(f"{rec['session']} step {rec['step']}: the regenerated image's sha256 differs from the "
                            "recorded one (a different generator version); refusing to train on the wrong image")
        return case.png
    path = screenshot_file(rec, home_root)
    return path.read_bytes() if path is not None and path.is_file() else None


def check_screenshots(records: list[dict[str, Any]], home_root: Path | None,
                      skip_missing: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """Drop steps whose archived screenshot is gone (with --skip-missing) or refuse naming them."""
    missing = []
    kept = []
    for rec in records:
        path = screenshot_file(rec, home_root)
        if path is not None and not path.is_file():
            missing.append(f"{rec['session']} step {rec['step']}: {path}")
            continue
        kept.append(rec)
    if missing and not skip_missing:
        shown = "\n  ".join(missing[:10]) + (f"\n  … and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise UserError(f"{len(missing)} step(s) name screenshots that are missing:\n  {shown}\n"
                        "(add --skip-missing to export without those steps)")
    return kept, missing


def mark_missing_images(records: list[dict[str, Any]], home_root: Path | None) -> list[str]:
    """Keep steps whose archived screenshot was rotated away, marked `observation.image: null` and
    `image_missing: true` (the normal state of a long run: only the newest screenshots are kept)."""
    missing = []
    for rec in records:
        path = screenshot_file(rec, home_root)
        if path is not None and not path.is_file():
            rec["observation"] = {**rec["observation"], "image": None, "image_missing": True}
            missing.append(f"{rec['session']} step {rec['step']}: {path}")
    return missing


def collect_records(journal_dir: Path, *, include_dry_runs: bool = False, include_uncertain: bool = False,
                    home_root: Path | None = None) -> tuple[list[dict[str, Any]], list[str], list[str], int]:
    """(records with labels, torn journal lines (`file:line`), NUL runs skipped inside the files ("FILE: skipped
    N unreadable bytes at offset O"), labelled count); UserError on an empty journal."""
    read = read_journal(journal_dir)
    if not read.events:
        raise UserError(f"nothing to export: the journal in {journal_dir} is empty (run the agent first)")
    records = steps_from_events(read.events, include_dry_runs=include_dry_runs,
                                include_uncertain=include_uncertain)
    root = home_root if home_root is not None else journal_dir.parent
    labelled = attach_labels(records, read_labels(labels_path(root)))
    return records, read.skipped, [str(span) for span in read.unreadable], labelled
