"""A recorded step's target turn, written in one model family's own action format.

The mirror of the families' parsers: what those read from a model, the families'
renderers (each family folder's `turn.py`, named in its record) write for training
data, in the coordinate convention and image size the model was sent. What they
share is here: the step's action and geometry, the point in the model's
convention, and the words and pointer calls several families use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conway.policies.family import Family


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


def step_geometry(rec: dict[str, Any], family: Family) -> tuple[str, tuple[int, int], tuple[int, int]]:
    """(convention, sent size, captured size) to render a step in `family`'s format.

    The recorded sent size and convention are used when the step was recorded
    by the same family (or the family follows the geometry its prompt states);
    otherwise the family's own default convention and resize rule are applied
    to the captured size, so the rendered coordinates are what that family
    would have to answer.
    """
    geo = rec.get("geometry") or {}
    obs = rec.get("observation") or {}
    captured = geo.get("captured_size") or obs.get("captured_size")
    if not captured:
        raise ValueError("the step records no captured size")
    captured_t = (int(captured[0]), int(captured[1]))
    recorded_family = geo.get("policy")
    if geo.get("sent_size") and geo.get("convention") and (family.follows_prompted_geometry
                                                           or recorded_family == family.name):
        sent = geo["sent_size"]
        return str(geo["convention"]), (int(sent[0]), int(sent[1])), captured_t
    return family.convention.value, family.resize.target_size(captured_t), captured_t


def _model_point(x: float, y: float, convention: str, sent: tuple[int, int],
                 captured: tuple[int, int]) -> tuple[Any, Any]:
    from conway.geometry import Convention, captured_to_model

    mx, my = captured_to_model(float(x), float(y), convention, sent, captured)
    top = Convention(convention).rule.integer_range(sent, captured)
    if top is None:  # fractions
        return round(mx, 4), round(my, 4)
    # pixel and 0-1000 / 0-999 conventions are integers, as the families write them; clamp into range
    return min(max(int(round(mx)), 0), top[0]), min(max(int(round(my)), 0), top[1])


def canonical_action(action: dict[str, Any]) -> dict[str, Any]:
    """The action in the schema's own key order (type first), defaults other than `type` left out.

    The generic adapter's grammar fixes this order, so a model must be taught it.
    """
    from conway.actions import ACTION_TYPES

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


def pointer_call(action: dict[str, Any], by_type: dict[str, str], by_button: dict[str, str],
                  other_button: str | None = None) -> str | None:
    """A family's call for a pointer action at one point: a click's by its button (`other_button` for any other
    button), the other types' by type; None when the family has none for it (or it is no such action)."""
    t = action["type"]
    if t == "click":
        button = action.get("button", "left")
        return by_button.get(button, other_button) if isinstance(button, str) else other_button
    return by_type.get(t) if isinstance(t, str) else None


def describe(action: dict[str, Any]) -> str:
    """A plain sentence for an action, where a family's answer needs words and the step recorded no thought."""
    t = action["type"]
    return {"click": "Click the target.", "double_click": "Double-click the target.",
            "right_click": "Right-click the target.", "type": "Type the text.", "key": "Press the key.",
            "hotkey": "Press the key combination.", "scroll": "Scroll.", "wait": "Wait.",
            "finish": "Report the subgoal's status.", "move": "Move the pointer.",
            "drag": "Drag.", "triple_click": "Triple-click the target."}.get(t, t)


def render_target(rec: dict[str, Any], family: Family) -> Target:
    """The step's target turn in `family`'s format; ValueError (with the reason) when it cannot be rendered."""
    action, source = target_action(rec)
    if action is None:
        raise ValueError("the step has no action to teach (no parsed action and no corrected label)")
    convention, sent, captured = step_geometry(rec, family)
    points = {}
    for kx, ky in (("x", "y"), ("to_x", "to_y")):
        if action.get(kx) is not None and action.get(ky) is not None:
            points[(kx, ky)] = _model_point(action[kx], action[ky], convention, sent, captured)
    thought = (rec.get("decision") or {}).get("thought") if source == "recorded" else None
    text = family.render(action, points, thought)
    return Target(text=text, action=action, convention=convention, sent_size=sent, captured_size=captured,
                  source=source)
