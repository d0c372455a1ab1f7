"""`conway review`: a person labels recorded steps (interactively or one step at a time).

Reads the steps through the export's record collector and writes `conway.experience.labels`
lines with source ``review``; the journal itself is never touched.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from conway.actions import ActionProblem, parse_action
from conway.errors import UserError
from conway.experience.labels import Label, append_labels, labels_path, read_labels
from conway.experience.steps import collect_records


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
    records, _, _, _ = collect_records(home.journal_dir, include_dry_runs=include_dry_runs, include_uncertain=True,
                                       home_root=home.root)
    if session:
        records = [r for r in records if r["session"] == session]
        if not records:
            raise UserError(f"no recorded steps for session {session!r}")
    path = labels_path(home.root)
    existing = read_labels(path)
    if verdict is not None or step is not None:  # one step, from the command line
        return _label_one(records, path, session=session, step=step, verdict=verdict, action=action, note=note,
                          relabel=relabel, say=say)
    todo = [r for r in records if existing.get(r["session"], r["step"]) is None]
    if not todo:
        say(f"every recorded step already has a label ({len(existing)} in {path})")
        return 0
    say(f"{len(todo)} unlabelled step(s). Answer c (correct), w (wrong) [corrected action JSON], "
        "r (redundant), s (skip) or q (quit).")
    written = 0
    for rec in todo:
        say(_step_summary(rec))
        v, corrected = _ask(read, say)
        if v == "quit":
            break
        if v == "skip":
            continue
        append_labels(path, [Label(session=rec["session"], step=rec["step"], source="review",
                                   verdict=v, corrected_action=corrected, note=note)])  # type: ignore[arg-type]
        written += 1
    say(f"wrote {written} label(s) to {path}")
    return written


def _ask(read: Callable[[str], str], say: Callable[[str], None]) -> tuple[str, dict[str, Any] | None]:
    """One answer to the prompt, asked again until it parses; end of input is quit."""
    while True:
        try:
            answer = read("   label> ")
        except EOFError:
            answer = "q"
        try:
            return parse_review_line(answer)
        except UserError as exc:
            say(f"   {exc}")


def _label_one(records: list[dict[str, Any]], path: Any, *, session: str | None, step: int | None,
               verdict: str | None, action: str | None, note: str, relabel: bool,
               say: Callable[[str], None]) -> int:
    """--step N --verdict V [--action JSON]: one label, from the command line."""
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
