"""A grounding-check report's cases as trajectory records, each labelled by its own target box.

The box is ground truth independent of the model: a hit is labelled correct;
a miss (or an unusable answer) becomes a hindsight example whose corrected
action clicks the box centre. Images are referenced by path (the dataset's
file, or the screenshot saved beside a live run's report) with their sha256.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.experience.steps import FORMAT, GEOMETRY_KEYS


def records_from_grounding(report_path: Path, data: dict[str, Any], cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not cases:
        raise UserError(f"nothing to export: {report_path} has no cases")
    revision = (data.get("conway") or {}).get("git_revision")
    session = f"grounding-check-{report_path.stem}"
    out = []
    for c in cases:
        image = c.get("image") or {}
        path = image.get("path")
        if path and not Path(path).is_absolute():
            path = str((report_path.parent / path).resolve())
        size = image.get("size")
        target = c.get("target") or {}
        centre = target.get("centre")
        if not size or not centre:
            raise UserError(f"{report_path} case {c.get('index')} records no image size or target; not a "
                            "grounding-check case")
        hit = bool(c.get("hit"))
        labels: dict[str, Any] = {"success": "success" if hit else "failure", "source": "grounding-check",
                                  "verdict": "correct" if hit else "wrong", "hindsight": not hit}
        if not hit:
            labels["corrected_action"] = {"type": "click", "x": centre[0], "y": centre[1], "button": "left"}
        meta = c.get("decision_meta") or {}
        geo = {k: meta[k] for k in GEOMETRY_KEYS if meta.get(k) is not None}
        geo.setdefault("captured_size", list(size))
        out.append({
            "format": FORMAT, "session": session, "step": int(c["index"]),
            "t_start": data.get("started_at"), "t_end": data.get("ended_at"),
            "observation": {"source": "grounding-check", "captured_size": list(size), "logical_size": list(size),
                            "sha256": image.get("sha256"), "screenshot": path, "accessibility_chars": 0},
            "geometry": geo, "prompt": None,
            "decision": {"raw_text": c.get("raw_output"), "actions": [c["action"]] if c.get("action") else [],
                         "model_id": c.get("model_id"), "thought": None},
            "actions": [], "errors": [{"kind": "error", "error": c["error"]}] if c.get("error") else [],
            "uncertain": False, "dry_run": False, "finish": None, "model_id": c.get("model_id"),
            "harness_revision": revision, "labels": labels, "instruction": c.get("instruction"),
            "task": {"kind": "grounding-check", "instruction": c.get("instruction"), "index": int(c["index"]),
                     "case_id": c.get("id"), "target_box": target.get("box"), "source": c.get("source"),
                     "type": c.get("type"), "size_bucket": c.get("size_bucket")},
        })
    return out
