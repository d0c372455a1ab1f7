"""Trajectory export: a pure function from journal events (+ labels) to one record per step.

Format `conway-traj/1`, one JSON object per step:

    format, session, step, t_start, t_end
    instruction   the goals / task text the model saw at that step (journaled when it changes)
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
                  otherwise (see `conway.labels`)

Image bytes never appear in the JSONL. `--format hf` writes a Hugging Face
`datasets` folder instead, with the screenshot as an `Image` feature; `--style`
renders each step's target turn in one model family's own action format.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .errors import UserError
from .journal import read_journal
from .labels import LabelIndex, label_summary, labels_path, read_labels
from .redact import redact_known

FORMAT = "conway-traj/1"
STYLES = ("generic", "opencua", "uitars")
_GEOMETRY_KEYS = ("sent_size", "captured_size", "convention", "resize_rule", "policy")


def steps_from_events(events: Iterable[dict[str, Any]], include_dry_runs: bool = False,
                      include_uncertain: bool = False) -> list[dict[str, Any]]:
    """Group events by (session, step) into step records. Image bytes never appear.

    Dry runs and uncertain steps are left out unless asked for: a dry run did
    nothing, and an uncertain step may or may not have happened.
    """
    steps: dict[tuple[str, int], dict[str, Any]] = {}
    order: list[tuple[str, int]] = []
    revisions: dict[str, str | None] = {}
    checks: dict[str, dict[str, Any]] = {}
    goals: dict[str, str] = {}
    for ev in events:
        kind = ev.get("kind")
        p = ev.get("payload") or {}
        if kind == "session":
            if p.get("event") == "start":
                revisions[ev.get("session", "?")] = p.get("harness_revision") or p.get("revision")
            elif p.get("event") == "goals":  # the goals / task text the model saw from here on
                goals[ev.get("session", "?")] = p.get("text")
            elif p.get("event") == "acceptance" and p.get("verified") is not None:
                # a task's acceptance criteria, checked by Conway (never the model's word): labels the session
                checks[ev.get("session", "?")] = {"success": "success" if p["verified"] else "failure",
                                                  "source": "task-check", "scope": "session",
                                                  "report": p.get("report")}
            continue
        if kind in ("recovery", "control"):
            continue
        key = (ev.get("session", "?"), int(ev.get("step", 0)))
        rec = steps.get(key)
        if rec is None:
            rec = steps[key] = {"format": FORMAT, "session": key[0], "step": key[1], "t_start": ev.get("ts"),
                                "t_end": ev.get("ts"), "observation": None, "geometry": None, "prompt": None,
                                "decision": None, "actions": [], "errors": [], "uncertain": False,
                                "dry_run": False, "finish": None, "model_id": None, "harness_revision": None,
                                "labels": {"success": "unknown"}}
            if goals.get(key[0]):
                rec["instruction"] = goals[key[0]]
            order.append(key)
        rec["t_end"] = ev.get("ts")
        if kind == "observation":
            rec["observation"] = p
        elif kind == "decision":
            if p.get("discarded"):
                rec["discarded"] = True
            rec["decision"] = {k: p.get(k) for k in p if k not in ("dry_run",)}
            rec["model_id"] = p.get("model_id")
            if p.get("harness_revision"):
                rec["harness_revision"] = p["harness_revision"]
            rec["dry_run"] = rec["dry_run"] or bool(p.get("dry_run"))
            geo = {k: p[k] for k in _GEOMETRY_KEYS if p.get(k) is not None}
            if geo:
                rec["geometry"] = geo
            prompt = {k: p[k] for k in ("prompt_sha256", "prompt_parts") if p.get(k) is not None}
            if prompt:
                rec["prompt"] = {"sha256": prompt.get("prompt_sha256"), "parts": prompt.get("prompt_parts")}
        elif kind in ("result", "error", "suppressed"):
            if p.get("dry_run"):
                rec["dry_run"] = True
            entry = {"kind": kind, **p}
            (rec["errors"] if kind == "error" and "action" not in p else rec["actions"]).append(entry)
        elif kind == "uncertain":
            rec["uncertain"] = True
            rec["actions"].append({"kind": "uncertain", **p})
        elif kind == "finish":
            rec["finish"] = {"status": p.get("status"), "message": p.get("message"), "declared_by": "model"}
        elif kind == "intent":
            rec.setdefault("intents", []).append(p.get("action"))
    out = []
    for key in order:
        rec = steps[key]
        rec["harness_revision"] = rec["harness_revision"] or revisions.get(key[0])
        if key[0] in checks:
            rec["labels"] = dict(checks[key[0]])
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


def attach_labels(records: list[dict[str, Any]], labels: LabelIndex) -> int:
    """Put each step's latest label into its record; returns how many steps carry one."""
    n = 0
    for rec in records:
        lab = labels.get(rec["session"], rec["step"])
        if lab is None and (rec.get("labels") or {}).get("source"):
            n += 1  # a session-level check already labelled it
            continue
        rec["labels"] = label_summary(lab)
        n += lab is not None
    return n


# --- the target turn in a family's own format ------------------------------------------


@dataclass
class Target:
    """A step's target turn rendered for one model family."""

    text: str
    action: dict[str, Any]
    """The action rendered, in captured-screenshot pixels (as recorded / corrected)."""
    convention: str
    sent_size: tuple[int, int]
    captured_size: tuple[int, int]
    source: str
    """`label` (a corrected action from an independent source) or `recorded` (what the model did)."""


def target_action(rec: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The action a step should teach: a labelled correction first, else the recorded first action."""
    corrected = (rec.get("labels") or {}).get("corrected_action")
    if corrected:
        return corrected, "label"
    dec = rec.get("decision") or {}
    for a in dec.get("actions") or []:
        if isinstance(a, dict) and "type" in a:
            return a, "recorded"
    return None, "none"


def step_geometry(rec: dict[str, Any], style: str) -> tuple[str, tuple[int, int], tuple[int, int]]:
    """(convention, sent size, captured size) to render a step in `style`.

    The recorded sent size and convention are used when the step was recorded
    by the same family (or the style is generic); otherwise the family's own
    default convention and resize rule are applied to the captured size, so
    the rendered coordinates are what that family would have to answer.
    """
    from .geometry import get_rule

    geo = rec.get("geometry") or {}
    obs = rec.get("observation") or {}
    captured = geo.get("captured_size") or obs.get("captured_size")
    if not captured:
        raise ValueError("the step records no captured size")
    captured_t = (int(captured[0]), int(captured[1]))
    recorded_family = geo.get("policy")
    if geo.get("sent_size") and geo.get("convention") and (style == "generic" or recorded_family == style):
        sent = geo["sent_size"]
        return str(geo["convention"]), (int(sent[0]), int(sent[1])), captured_t
    family_convention = {"generic": "absolute", "opencua": "absolute", "uitars": "absolute"}[style]
    rule = get_rule({"generic": "qwen2.5-vl", "opencua": "opencua", "uitars": "uitars"}[style])
    return family_convention, rule.target_size(captured_t), captured_t


def _model_point(x: float, y: float, convention: str, sent: tuple[int, int],
                 captured: tuple[int, int]) -> tuple[Any, Any]:
    from .geometry import captured_to_model

    mx, my = captured_to_model(float(x), float(y), convention, sent, captured)
    if convention == "relative":
        return round(mx, 4), round(my, 4)
    # pixel and 0-1000 conventions are integers, as the families write them; clamp into range
    hi_x, hi_y = (sent[0] - 1, sent[1] - 1) if convention == "absolute" else \
        ((1000, 1000) if convention == "relative1000" else (captured[0] - 1, captured[1] - 1))
    return min(max(int(round(mx)), 0), hi_x), min(max(int(round(my)), 0), hi_y)


def canonical_action(action: dict[str, Any]) -> dict[str, Any]:
    """The action in the schema's own key order (type first), defaults other than `type` left out.

    The generic adapter's grammar fixes this order, so a model must be taught it.
    """
    from .actions import ACTION_TYPES

    cls = ACTION_TYPES.get(action.get("type", ""))
    if cls is None:
        return {k: v for k, v in action.items() if v is not None}
    out: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if name not in action or action[name] is None:
            continue
        if name != "type" and not info.is_required() and action[name] == info.default:
            continue
        out[name] = action[name]
    return out


def _generic(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    out = canonical_action(action)
    for (kx, ky), value in pt.items():
        out[kx], out[ky] = value
    return json.dumps({"thought": thought or "", "action": out}, ensure_ascii=False)


def _opencua(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    t = action["type"]
    x, y = pt.get(("x", "y"), (None, None))
    if t == "click":
        button = action.get("button", "left")
        code = f"pyautogui.click(x={x}, y={y})" if button == "left" else \
            (f"pyautogui.rightClick(x={x}, y={y})" if button == "right" else f"pyautogui.middleClick(x={x}, y={y})")
    elif t == "double_click":
        code = f"pyautogui.doubleClick(x={x}, y={y})"
    elif t == "triple_click":
        code = f"pyautogui.tripleClick(x={x}, y={y})"
    elif t == "right_click":
        code = f"pyautogui.rightClick(x={x}, y={y})"
    elif t == "move":
        code = f"pyautogui.moveTo(x={x}, y={y})"
    elif t == "drag":
        tx, ty = pt[("to_x", "to_y")]
        code = f"pyautogui.moveTo(x={x}, y={y})\npyautogui.dragTo(x={tx}, y={ty})"
    elif t == "type":
        code = f"pyautogui.write(message={json.dumps(action['text'], ensure_ascii=False)})"
    elif t == "key":
        code = f"pyautogui.press({json.dumps(action['key'])})"
    elif t == "hotkey":
        code = "pyautogui.hotkey(" + ", ".join(json.dumps(k) for k in action["keys"]) + ")"
    elif t == "scroll":
        dy, dx = int(action.get("dy") or 0), int(action.get("dx") or 0)
        where = f", x={x}, y={y}" if ("x", "y") in pt else ""
        code = f"pyautogui.hscroll({dx}{where})" if dx and not dy else f"pyautogui.scroll({dy}{where})"
    elif t == "wait":
        code = f"computer.wait(seconds={action.get('seconds') or 1})"
    elif t == "finish":
        status = "success" if action.get("status") == "DONE" else "failure"
        code = f"computer.terminate(status={json.dumps(status)}, answer={json.dumps(action.get('message', ''))})"
    else:
        raise ValueError(f"{t} has no OpenCUA form")
    parts = []
    if thought:
        parts.append(f"## Thought:\n{thought.strip()}")
    parts.append(f"## Action:\n{_describe(action)}")
    parts.append(f"## Code:\n```python\n{code}\n```")
    return "\n\n".join(parts)


def _uitars_quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _uitars(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    t = action["type"]
    box = None
    if ("x", "y") in pt:
        x, y = pt[("x", "y")]
        box = f"'({x},{y})'"
    if t == "click" and action.get("button", "left") == "left":
        call = f"click(start_box={box})"
    elif t == "right_click" or (t == "click" and action.get("button") == "right"):
        call = f"right_single(start_box={box})"
    elif t == "double_click":
        call = f"left_double(start_box={box})"
    elif t == "move":
        call = f"hover(start_box={box})"
    elif t == "drag":
        tx, ty = pt[("to_x", "to_y")]
        call = f"drag(start_box={box}, end_box='({tx},{ty})')"
    elif t == "type":
        call = f"type(content={_uitars_quote(action['text'])})"
    elif t == "key":
        call = f"press(key={_uitars_quote(action['key'])})"
    elif t == "hotkey":
        call = f"hotkey(key={_uitars_quote(' '.join(action['keys']))})"
    elif t == "scroll" and box is not None:
        dy, dx = int(action.get("dy") or 0), int(action.get("dx") or 0)
        direction = ("up" if dy > 0 else "down") if dy else ("right" if dx > 0 else "left")
        call = f"scroll(start_box={box}, direction='{direction}')"
    elif t == "wait":
        call = "wait()"
    elif t == "finish" and action.get("status") == "DONE":
        call = f"finished(content={_uitars_quote(action.get('message', ''))})"
    else:
        raise ValueError(f"{action.get('type')} has no UI-TARS form")
    return f"Thought: {(thought or _describe(action)).strip()}\nAction: {call}"


def _describe(action: dict[str, Any]) -> str:
    t = action["type"]
    return {"click": "Click the target.", "double_click": "Double-click the target.",
            "right_click": "Right-click the target.", "type": "Type the text.", "key": "Press the key.",
            "hotkey": "Press the key combination.", "scroll": "Scroll.", "wait": "Wait.",
            "finish": "Report the subgoal's status.", "move": "Move the pointer.",
            "drag": "Drag.", "triple_click": "Triple-click the target."}.get(t, t)


_RENDER = {"generic": _generic, "opencua": _opencua, "uitars": _uitars}


def render_target(rec: dict[str, Any], style: str) -> Target:
    """The step's target turn in `style`; ValueError (with the reason) when it cannot be rendered."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; known: {', '.join(STYLES)}")
    action, source = target_action(rec)
    if action is None:
        raise ValueError("the step has no action to teach (no parsed action and no corrected label)")
    convention, sent, captured = step_geometry(rec, style)
    points = {}
    for kx, ky in (("x", "y"), ("to_x", "to_y")):
        if action.get(kx) is not None and action.get(ky) is not None:
            points[(kx, ky)] = _model_point(action[kx], action[ky], convention, sent, captured)
    thought = (rec.get("decision") or {}).get("thought") if source == "recorded" else None
    text = _RENDER[style](action, points, thought)
    return Target(text=text, action=action, convention=convention, sent_size=sent, captured_size=captured,
                  source=source)


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
        from .evals.vision_cases import GENERATOR, generate_case

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


def records_from_vision_check(report_path: Path) -> list[dict[str, Any]]:
    """A vision-check report → one conway-traj/1 record per case, labelled by the case itself.

    The target box is ground truth: a hit is labelled correct; a miss becomes a
    hindsight example whose corrected action clicks the target's centre.
    Images are not copied: the generator, seed and index regenerate them.
    """
    from .evals.report import load_report

    try:
        data, cases = load_report(report_path)
    except UserError:
        raise
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read report {report_path}: {exc}") from None
    if data.get("kind") == "grounding-check":
        from .evals.grounding.records import records_from_grounding
        return records_from_grounding(report_path, data, cases, fmt=FORMAT, geometry_keys=_GEOMETRY_KEYS)
    if data.get("kind") != "vision-check":
        raise UserError(f"{report_path} is a {data.get('kind')!r} report; --from-report takes a vision-check or "
                        "grounding-check report")
    params = data.get("parameters") or {}
    seed = data.get("seed")
    size = params.get("size")
    if seed is None or not size or not params.get("generator"):
        raise UserError(f"{report_path} does not record seed, image size and generator; cannot rebuild its images")
    if not cases:
        raise UserError(f"nothing to export: {report_path} has no cases")
    revision = (data.get("conway") or {}).get("git_revision")
    out = []
    for c in cases:
        meta = c.get("decision_meta") or {}
        box = (c.get("target") or {}).get("box")
        centre = (c.get("target") or {}).get("centre")
        hit = bool(c.get("hit"))
        labels: dict[str, Any] = {"success": "success" if hit else "failure", "source": "vision-check",
                                  "verdict": "correct" if hit else "wrong", "hindsight": not hit}
        if not hit and centre:
            labels["corrected_action"] = {"type": "click", "x": centre[0], "y": centre[1], "button": "left"}
        geo = {k: meta[k] for k in _GEOMETRY_KEYS if meta.get(k) is not None}
        geo.setdefault("captured_size", list(size))
        out.append({
            "format": FORMAT, "session": f"vision-check-seed{seed}", "step": int(c["index"]),
            "t_start": data.get("started_at"), "t_end": data.get("ended_at"),
            "observation": {"source": "vision-check", "captured_size": list(size), "logical_size": list(size),
                            "sha256": (c.get("image") or {}).get("sha256"), "screenshot": None,
                            "accessibility_chars": 0},
            "geometry": geo, "prompt": None,
            "decision": {"raw_text": c.get("raw_output"), "actions": [c["action"]] if c.get("action") else [],
                         "model_id": c.get("model_id"), "thought": None},
            "actions": [], "errors": [{"kind": "error", "error": c["error"]}] if c.get("error") else [],
            "uncertain": False, "dry_run": False, "finish": None, "model_id": c.get("model_id"),
            "harness_revision": revision, "labels": labels,
            "instruction": c.get("instruction"),
            "task": {"kind": "vision-check", "instruction": c.get("instruction"), "index": int(c["index"]),
                     "target_box": box, "generator": {"name": params["generator"], "seed": seed,
                                                      "profile": params.get("profile", "standard"),
                                                      "index": int(c["index"]), "size": list(size)}},
        })
    return out


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


@dataclass
class ExportResult:
    written: int
    skipped_lines: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Steps left out for a missing screenshot (--skip-missing)."""
    unrendered: list[str] = field(default_factory=list)
    labelled: int = 0
    images_missing: list[str] = field(default_factory=list)
    """Steps kept without their screenshot (observation.image null, image_missing true)."""
    left_out_of_images: int = 0
    """--format hf: steps without an image left out of the image training data."""
    redacted: int = 0
    """Secret values (known ones from the environment, and key shapes) replaced by <redacted>."""


def collect_records(journal_dir: Path, *, include_dry_runs: bool = False, include_uncertain: bool = False,
                    home_root: Path | None = None) -> tuple[list[dict[str, Any]], list[str], int]:
    """(records with labels, torn journal lines, labelled count); UserError on an empty journal."""
    read = read_journal(journal_dir)
    if not read.events:
        raise UserError(f"nothing to export: the journal in {journal_dir} is empty (run the agent first)")
    records = steps_from_events(read.events, include_dry_runs=include_dry_runs,
                                include_uncertain=include_uncertain)
    root = home_root if home_root is not None else journal_dir.parent
    labelled = attach_labels(records, read_labels(labels_path(root)))
    return records, read.skipped, labelled


def _refuse_existing(output: Path) -> None:
    if output.exists():
        raise UserError(f"{output} already exists; choose a new file (export never overwrites)")
    if not output.parent.exists():
        raise UserError(f"folder {output.parent} does not exist")


def write_jsonl(records: list[dict[str, Any]], output: Path, style: str | None = None) -> list[str]:
    """Write records (with a `target` per step when a style is given); returns steps not rendered."""
    _refuse_existing(output)
    unrendered = []
    tmp = output.with_name(output.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as fh:
        for rec in records:
            if style:
                try:
                    t = render_target(rec, style)
                except ValueError as exc:
                    unrendered.append(f"{rec['session']} step {rec['step']}: {exc}")
                    continue
                rec = {**rec, "target": {"style": style, "text": t.text, "convention": t.convention,
                                         "sent_size": list(t.sent_size), "source": t.source}}
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    tmp.replace(output)
    return unrendered


def conversation_row(rec: dict[str, Any], png: bytes, style: str, config: Any) -> tuple[list[dict[str, Any]], bytes]:
    """(messages, image as sent): the step as policy family `style` sees it, with its target turn last.

    messages: system / user (the policy's text parts and one `{"type": "image"}` part where the policy puts
    the image) / assistant (the target in the family's format). The image went through the loop's resize rule
    and encoding, so the target's pixel coordinates refer to it. ValueError when the step cannot be rendered.
    """
    from .conversation import policy_messages, step_context, typed_parts
    from .policies.factory import make_adapter

    ctx = step_context(rec, png, config)
    messages, image = policy_messages(ctx, style, encoding=getattr(config.policy, "image_encoding", "jpeg"))
    rec = {**rec, "geometry": {**(rec.get("geometry") or {}), "sent_size": list(image.sent_size),
                               "captured_size": list(image.captured_size),
                               "convention": make_adapter(style).default_convention.value, "policy": style}}
    target = render_target(rec, style).text
    turns = [{"role": m["role"], "content": typed_parts(m["content"])} for m in messages]
    turns.append({"role": "assistant", "content": [{"type": "text", "text": target}]})
    return turns, image.data


def write_sharegpt(folder: Path, conversations: list[tuple[list[dict[str, Any]], bytes]]) -> None:
    """LLaMA-Factory's multimodal ShareGPT layout: data.json (`<image>` where the image goes), images/, and
    the dataset_info.json entry `conway` (formatting sharegpt, role/content tags, system turns kept)."""
    images = folder / "images"
    images.mkdir(parents=True)
    data = []
    for i, (turns, image) in enumerate(conversations):
        ext = "png" if image[:4] == b"\x89PNG" else "jpg"
        name = f"images/{i:06d}.{ext}"
        (folder / name).write_bytes(image)
        msgs = [{"role": t["role"], "content": "".join("<image>" if p["type"] == "image" else p["text"]
                                                        for p in t["content"])} for t in turns]
        data.append({"messages": msgs, "images": [name]})
    (folder / "data.json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    info = {"conway": {"file_name": "data.json", "formatting": "sharegpt",
                       "columns": {"messages": "messages", "images": "images"},
                       "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                                "assistant_tag": "assistant", "system_tag": "system"}}}
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def write_hf(records: list[dict[str, Any]], output: Path, home_root: Path | None,
             style: str = "generic") -> list[str]:
    """Write a `datasets` folder: image (Image feature), prompt, target text and the record as JSON; the same
    steps as conversations (`messages` + `images`, TRL's conversational vision layout); and a `sharegpt/`
    subfolder for LLaMA-Factory. A step whose prompt cannot be rebuilt (no captured size) keeps its Conway
    columns with empty `messages` / `images` and is left out of `sharegpt/`.

    Steps whose screenshot is gone (`image_missing`) are image training data without an image: left out.
    """
    records = [r for r in records if not (r.get("observation") or {}).get("image_missing")]
    try:
        from datasets import Dataset, Features, Image, List, Value
    except ImportError:
        raise UserError("--format hf needs the train extra (pip install -e '.[train]')") from None
    _refuse_existing(output)
    rows: dict[str, list[Any]] = {k: [] for k in ("session", "step", "image", "image_sha256", "instruction",
                                                  "target", "style", "convention", "sent_width", "sent_height",
                                                  "captured_width", "captured_height", "success",
                                                  "label_source", "hindsight", "record", "messages",
                                                  "images")}
    from .config import load_config
    config = load_config(None, [])
    conversations = []
    unrendered = []
    for rec in records:
        try:
            t = render_target(rec, style)
        except ValueError as exc:
            unrendered.append(f"{rec['session']} step {rec['step']}: {exc}")
            continue
        data = record_image(rec, home_root)
        labels = rec.get("labels") or {}
        rows["session"].append(rec["session"])
        rows["step"].append(rec["step"])
        rows["image"].append({"bytes": data, "path": None} if data is not None else None)
        rows["image_sha256"].append(hashlib.sha256(data).hexdigest() if data is not None else None)
        rows["instruction"].append(rec.get("instruction") or (rec.get("prompt") or {}).get("text") or "")
        rows["target"].append(t.text)
        rows["style"].append(style)
        rows["convention"].append(t.convention)
        rows["sent_width"].append(t.sent_size[0])
        rows["sent_height"].append(t.sent_size[1])
        rows["captured_width"].append(t.captured_size[0])
        rows["captured_height"].append(t.captured_size[1])
        rows["success"].append(labels.get("success", "unknown"))
        rows["label_source"].append(labels.get("source"))
        rows["hindsight"].append(bool(labels.get("hindsight", False)))
        rows["record"].append(json.dumps(rec, ensure_ascii=False, sort_keys=True))
        try:
            turns, sent = conversation_row(rec, data, style, config) if data is not None else ([], None)
        except ValueError:  # the target rendered above; a prompt that cannot be rebuilt leaves `messages` empty
            turns, sent = [], None
        rows["messages"].append(turns)
        rows["images"].append([{"bytes": sent, "path": None}] if sent is not None else [])
        if sent is not None:
            conversations.append((turns, sent))
    features = Features({"session": Value("string"), "step": Value("int64"), "image": Image(),
                         "image_sha256": Value("string"), "instruction": Value("string"),
                         "target": Value("string"), "style": Value("string"), "convention": Value("string"),
                         "sent_width": Value("int64"), "sent_height": Value("int64"),
                         "captured_width": Value("int64"), "captured_height": Value("int64"),
                         "success": Value("string"), "label_source": Value("string"),
                         "hindsight": Value("bool"), "record": Value("string"),
                         "messages": List({"role": Value("string"),
                                           "content": List({"type": Value("string"), "text": Value("string")})}),
                         "images": List(Image())})
    ds = Dataset.from_dict(rows, features=features)
    tmp = output.with_name(output.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    ds.save_to_disk(str(tmp))
    if conversations:
        write_sharegpt(tmp / "sharegpt", conversations)
    tmp.replace(output)
    return unrendered


def export_trajectory(journal_dir: Path, output: Path, include_dry_runs: bool = False, *,
                      include_uncertain: bool = False, fmt: str = "jsonl", style: str | None = None,
                      skip_missing: bool = False, home_root: Path | None = None) -> tuple[int, list[str]]:
    """Export the journal. Refuses to overwrite; keeps steps whose screenshot is gone (marked), or skips them.

    Called the old way (journal_dir, output[, include_dry_runs]) it returns
    (records written, skipped torn lines), as the foundation did.
    """
    result = export(journal_dir, output, include_dry_runs=include_dry_runs, include_uncertain=include_uncertain,
                    fmt=fmt, style=style, skip_missing=skip_missing, home_root=home_root)
    return result.written, result.skipped_lines


def export(journal_dir: Path, output: Path, *, include_dry_runs: bool = False, include_uncertain: bool = False,
           fmt: str = "jsonl", style: str | None = None, skip_missing: bool = False,
           home_root: Path | None = None, from_report: str | Path | None = None,
           secret_values: list[str] | None = None) -> ExportResult:
    """Export the journal (or a vision-check report) as JSONL or an hf dataset folder.

    Every string is scanned for `secret_values` (the API key and other credential-looking variables'
    values; see `conway.redact.known_secret_values`) and key shapes; each is replaced by <redacted>.
    """
    if fmt not in ("jsonl", "hf"):
        raise UserError(f"unknown --format {fmt!r}; use jsonl or hf")
    if style is not None and style not in STYLES:
        raise UserError(f"unknown --style {style!r}; use one of {', '.join(STYLES)}")
    _refuse_existing(output)
    root = home_root if home_root is not None else journal_dir.parent
    if from_report is not None:
        records, skipped = records_from_vision_check(Path(from_report)), []
        labelled = len(records)
    else:
        records, skipped, labelled = collect_records(journal_dir, include_dry_runs=include_dry_runs,
                                                     include_uncertain=include_uncertain, home_root=root)
    missing: list[str] = []
    if skip_missing:
        records, missing = check_screenshots(records, root, skip_missing=True)
    images_missing = mark_missing_images(records, root)
    records, redacted = redact_known(records, secret_values or [])
    if fmt == "hf":
        unrendered = write_hf(records, output, root, style or "generic")
        left_out = len(images_missing)
    else:
        unrendered = write_jsonl(records, output, style)
        left_out = 0
    return ExportResult(written=len(records) - len(unrendered) - left_out, skipped_lines=skipped, missing=missing,
                        unrendered=unrendered, labelled=labelled, images_missing=images_missing,
                        left_out_of_images=left_out, redacted=redacted)
