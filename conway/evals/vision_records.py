"""A vision-check report's cases as `conway-traj/1` records (`conway export --from-report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.experience.steps import FORMAT, GEOMETRY_KEYS


def records_from_vision_check(report_path: Path, data: dict[str, Any], cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A vision-check report → one conway-traj/1 record per case, labelled by the case itself.

    The target box is ground truth: a hit is labelled correct; a miss becomes a
    hindsight example whose corrected action clicks the target's centre.
    Images are not copied: the generator, seed and index regenerate them.
    """
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
        geo = {k: meta[k] for k in GEOMETRY_KEYS if meta.get(k) is not None}
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
