"""One exported step as a conversation: the policy's own messages, the image as sent, the target turn.

    ctx = step_context(rec, png, config)             # the DecisionContext the step was decided in
    messages, image = policy_messages(ctx, "generic")  # exactly what ModelPolicy.decide sends (image as a marker)
    turns = typed_parts(message["content"])            # HF chat-template parts: text / image

`conway export --format hf` writes these as the `messages` and `images`
columns (TRL's conversational vision layout, `export.conversation_row`);
training/data.py builds its rows from the same functions, so every trainer
sees the same prompt text, the same resized image and the same target turn.
"""

from __future__ import annotations

import hashlib
from typing import Any

IMAGE_MARKER = "conway:image"


def step_context(rec: dict[str, Any], png: bytes, config: Any) -> Any:
    """The DecisionContext a step was decided in, as closely as the record allows.

    Vision-check steps rebuild exactly (fixed prompt + instruction). Loop
    steps: the journal keeps the prompt's hash and part names, not its text,
    so the goal recorded with the step, the host facts in effect at it (from
    the journal's `host_facts` record; none from a journal older than it) and
    the action space (from the action types the loop offered, when journaled)
    are rebuilt; constitution, memory and recent steps are not. A home with
    an empty constitution.md, no memory and no skills, on a step without
    history, rebuilds exactly: `provenance.prompt_record(ctx.parts)` then
    equals the journaled `prompt_sha256`.
    """
    from conway.actions import describe_action_space
    from conway.prompt.budget import build_parts, resolve_budget
    from conway.protocols import DecisionContext, Observation

    task = rec.get("task") or {}
    obs_rec = rec.get("observation") or {}
    captured = tuple((rec.get("geometry") or {}).get("captured_size") or obs_rec.get("captured_size") or ())
    if len(captured) != 2:
        raise ValueError("the step records no captured size")
    digest = hashlib.sha256(png).hexdigest()
    if task.get("kind") == "vision-check":
        from conway.prompt.click_check import click_check_context
        return click_check_context("vision-check", png, captured, task.get("index"),  # type: ignore[arg-type]
                                   task.get("instruction") or "", config)
    obs = Observation(png=png, captured_size=captured, source=obs_rec.get("source", "screen"),  # type: ignore[arg-type]
                      content_hash=digest, change_key=digest[:16],
                      logical_size=tuple(obs_rec.get("logical_size") or captured))  # type: ignore[arg-type]
    decision = rec.get("decision") or {}
    offered = (decision.get("context") or {}).get("action_types")
    if offered:  # the loop journals the action types it offered: the same action space text, wait cap included
        types = [str(t) for t in offered]
        action_space = (describe_action_space(types)
                        + f"\nA wait lasts at most {config.agent.model_wait_cap_s:g} s (longer requests are cut).")
    else:
        recorded = [a.get("type") for a in decision.get("actions") or [] if isinstance(a, dict)]
        types = sorted({t for t in recorded if t} | {"click", "double_click", "type", "key", "hotkey", "scroll",
                                                     "wait"})
        action_space = describe_action_space(types)
    parts, dropped = build_parts(constitution=task.get("constitution", ""),
                                 goals=task.get("instruction") or rec.get("instruction") or "",
                                 memory="", action_space=action_space, latest=None, recent=[],
                                 budget_tokens=resolve_budget(config.context.budget_tokens, None),
                                 chars_per_token=config.context.chars_per_token,
                                 host_facts=rec.get("host_facts") or "")
    return DecisionContext(parts=parts, observation=obs, step=int(rec.get("step", 0)), action_types=types,
                           dropped=dropped)



def policy_messages(ctx: Any, policy_kind: str, resize: str = "auto", convention: str = "auto",
                    encoding: str = "jpeg", sent_size: tuple[int, int] | None = None
                    ) -> tuple[list[dict[str, Any]], Any]:
    """(messages, SentImage) exactly as `ModelPolicy.decide` builds them (image url left as a marker).

    `sent_size` (a recorded step's sent size) resizes the image to exactly that size, so the image, the size
    the prompt states and a target rendered in the recorded geometry agree; else the resize rule decides.
    """
    from conway.actions import ACTION_TYPES
    from conway.geometry import Convention
    from conway.policies.families import get_family, get_resize_rule
    from conway.policies.images import prepare_image
    from conway.policies.messages import decision_messages

    family = get_family(policy_kind)
    adapter = family.adapter()
    rule_name = family.resize.name if resize == "auto" else resize
    conv = family.convention if convention == "auto" else Convention(convention)
    obs = ctx.observation
    image = prepare_image(obs, rule_name, get_resize_rule(rule_name), encoding, size=sent_size)
    types = [t for t in ctx.action_types if t in ACTION_TYPES] or list(ACTION_TYPES)
    messages = decision_messages(ctx, adapter, instructions=adapter.instructions(types, image.sent_size, conv),
                                 image_url=IMAGE_MARKER, sent_size=image.sent_size)  # one step: no past turns
    return messages, image


def typed_parts(content: Any) -> list[dict[str, Any]]:
    """OpenAI-style content → `{"type": "text", "text": …}` / `{"type": "image", "text": None}` parts."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out = []
    for part in content:
        if part.get("type") == "text":
            out.append({"type": "text", "text": part["text"]})
        elif part.get("type") in ("image_url", "image"):
            out.append({"type": "image", "text": None})
    return out
