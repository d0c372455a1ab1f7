"""The order of a decision prompt's parts on the wire, and Conway's own conversation laid out from them.

Laid out for prompt caches: the **stable part first** — the adapter's instructions, the constitution tagged
with its file name, the action space, the tool listings, what untrusted data means, the host facts (last: they
change most) — then what only grows, oldest first (goals, memory's step log, the recent-steps window), then
what changes every cycle (accessibility, what the budget left out), and last the latest result, the request
line and the image, so a cache reuses everything up to the first part that changed and the model reads the
newest facts right before the screenshot.

A family trained on its own conversation lays it out itself (its adapter's `messages`, in `conway/policies/`);
`split_parts` gives it Conway's text in two slots. Conway's own layout is `build_messages`.
"""

from __future__ import annotations

from typing import Any, Collection, Literal, Protocol, Sequence

from conway.prompt.fence import render_part
from conway.prompt.parts import PartName, frame_of
from conway.protocols import DecisionContext

__all__ = ["STABLE_PARTS", "GROWING_PARTS", "VOLATILE_PARTS", "VARIABLE_ORDER", "Layout", "PastTurn",
           "framed_part", "split_parts", "build_messages", "DEVIATION_PARTS"]

STABLE_PARTS = (PartName.CONSTITUTION, PartName.ACTION_SPACE, PartName.TOOLS, PartName.DATA_RULE,
                PartName.HOST_FACTS)
"""Context parts that rarely change: they go first, in the system message (host facts last: they change most)."""
GROWING_PARTS = (PartName.GOALS, PartName.MEMORY, PartName.RECENT_STEPS)
"""Parts that change rarely or only grow at their end (oldest first): right after the stable part."""
VOLATILE_PARTS = (PartName.ACCESSIBILITY, PartName.LEFT_OUT, PartName.LATEST_RESULT)
"""Parts that change every cycle, in this order at the end; the request line and the image follow them."""
VARIABLE_ORDER = GROWING_PARTS + VOLATILE_PARTS
"""Order of the changing parts, least volatile first (parts of other names go between the two groups)."""

Layout = Literal["stable-first", "variable-first", "bare"]
"""`bare`: the goals and the screenshot line only, no system message (the generic family's `policy.prompt=bare`,
for a model trained on that form: the tiny demo base; a named deviation, `conway.policies.deviations`)."""


class PastTurn(Protocol):
    """One past turn as a layout sends it (`conway.policies.conversation.Past`)."""

    turn: Any
    """The kept turn (`conway.history.Turn`): its `answer` is replayed."""
    image_url: str | None
    """Its screenshot as it was sent (None: only its answer goes)."""


def framed_part(name: str, text: str) -> str:
    """The part in its frame (owner's file, Conway's text, untrusted data), escaped: `conway/prompt/fence.py`."""
    return render_part(name, text, frame_of(name))


def _texts(ctx: DecisionContext, action_space: str | None) -> dict[str, str]:
    """The parts' texts by name, the family's own action space in place of the loop's where it has one."""
    by_name = {p.name: p.text for p in ctx.parts}
    if action_space is not None:
        by_name[PartName.ACTION_SPACE] = action_space
    return by_name


def _others(ctx: DecisionContext) -> list[str]:
    """Parts of names the order does not know (the screen note …): between the growing and the volatile parts."""
    known = set(STABLE_PARTS) | set(VARIABLE_ORDER)
    return [p.name for p in ctx.parts if p.name not in known]


DEVIATION_PARTS = {PartName.CONSTITUTION: "constitution", PartName.MEMORY: "memory", PartName.TOOLS: "skills",
                   PartName.HOST_FACTS: "host_facts", PartName.ACTION_SPACE: "action_list",
                   PartName.LATEST_RESULT: "latest_result", PartName.ACCESSIBILITY: "accessibility"}
"""The parts a trained family's official request does not carry, each sent only under its deviation key
(`policy.deviations`); the goals go framed as `goals.md` under `goals`, else as the bare instruction."""


def split_parts(ctx: DecisionContext, action_space: str | None,
                deviations: Collection[str] | None = None) -> tuple[str, str]:
    """(task, tail) for a family's trained conversation (`conversation.Slots`): the stable and growing parts but
    the recent steps (the replayed answers take their place), and what changes every cycle. `deviations`: the
    opted-in keys (None: every part, framed); without `goals` the goals' text is the instruction, as it is."""
    by_name = _texts(ctx, action_space)
    if deviations is not None:
        by_name = {n: t for n, t in by_name.items() if DEVIATION_PARTS.get(n, "") in ("", *deviations)}
        if not any(frame_of(n) == "data" and t.strip() for n, t in by_name.items()
                   if n not in (PartName.DATA_RULE, PartName.RECENT_STEPS)):  # the replayed answers replace these
            by_name.pop(PartName.DATA_RULE, None)  # nothing untrusted is sent: the rule about it neither
    bare = deviations is not None and "goals" not in deviations
    task_names = (*STABLE_PARTS, PartName.GOALS, PartName.MEMORY)
    task = [by_name[n].strip() if bare and n == PartName.GOALS else framed_part(n, by_name[n])
            for n in task_names if by_name.get(n, "").strip()]
    order = _others(ctx) + [n for n in VOLATILE_PARTS if n in by_name]
    return "\n\n".join(task), "\n\n".join(framed_part(n, by_name[n]) for n in order)


def build_messages(ctx: DecisionContext, *, instructions: str, action_space: str | None,
                   request_text: str, image_url: str | None, sent_size: tuple[int, int],
                   layout: Layout = "stable-first", past: Sequence[PastTurn] | None = None) -> list[dict[str, Any]]:
    """OpenAI chat messages for one decision.

    `stable-first` (the default): system = instructions + constitution + action
    space; user = goals, memory, recent steps (oldest first), other parts,
    accessibility, what was left out, the latest result, the request line,
    then the image. `variable-first` puts the changing parts
    before the stable ones (only for measuring what the layout is worth).
    `bare`: one user turn, the framed goals and the closing's last line (the
    image's size, or the request line without an image), then the image: what
    `training.data.Example.short(keep_goals=True)` cuts a stable-first request
    to, so a model trained on that form is asked in it (a test holds them equal).
    `past` (generic with `policy.history_images` > 1): the model's earlier JSON
    answers, each after its screenshot, between the system and the user turn.
    """
    by_name = _texts(ctx, action_space)
    stable = [framed_part(n, by_name[n]) for n in STABLE_PARTS if by_name.get(n, "").strip()]  # empty: left out
    order = [n for n in GROWING_PARTS if n in by_name] + _others(ctx) + [n for n in VOLATILE_PARTS if n in by_name]
    variable = [framed_part(n, by_name[n]) for n in order]
    closing = request_text
    if image_url is not None:
        closing += f"\nThe screenshot below is {sent_size[0]}x{sent_size[1]} pixels."
    if layout == "bare":
        goals = by_name.get(PartName.GOALS, "")
        system = ""
        user_text = "\n\n".join([*([framed_part(PartName.GOALS, goals)] if goals.strip() else []),
                                  closing.strip().splitlines()[-1]])
        past = []  # the bare form is one screenshot and no history
    elif layout == "stable-first":
        system = "\n\n".join([instructions.strip(), *stable])
        user_text = "\n\n".join([*variable, closing])
    else:
        system = ""
        user_text = "\n\n".join([*variable, instructions.strip(), *stable, closing])
    content: list[dict[str, Any]] = [{"type": "text", "text": user_text}]
    if image_url is not None:
        content.append({"type": "image_url", "image_url": {"url": image_url}})
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for p in past or []:
        if p.image_url is not None:
            messages.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": p.image_url}}]})
            messages.append({"role": "assistant", "content": p.turn.answer})
    messages.append({"role": "user", "content": content})
    return messages
