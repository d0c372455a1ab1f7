"""The pipeline's second stage: one decision's messages, in the family's trained conversation or Conway's own.

A family trained on a conversation (its adapter's `messages`) is shown its own past answers, as it wrote them
less the reasoning, after the screenshots exactly as they were sent (`DecisionContext.history`,
`conway/history.py`); every other family gets Conway's layout (`conway/prompt/layout.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Collection

from conway.geometry import Size
from conway.history import TurnHistory
from conway.policies.adapter import Adapter
from conway.policies.conversation import Past, Slots
from conway.policies.images import SentImage
from conway.policies.output import AnswerForm
from conway.prompt.layout import Layout, build_messages, split_parts
from conway.protocols import DecisionContext

__all__ = ["Prompt", "decision_messages", "past_turns", "replays_answers"]


def past_turns(history: TurnHistory | None, replay_text: bool) -> list[Past]:
    """The history as a layout sends it: every kept answer (`replay_text`) or only those with their screenshot."""
    from conway.policies.backends.http_client import png_data_url

    if history is None:
        return []
    return [Past(t, png_data_url(t.image.data, t.image.mime) if t.image is not None else None)
            for t in history.turns if replay_text or t.image is not None]


def replays_answers(adapter: Adapter) -> bool:
    """The adapter lays out its family's trained conversation and replays every kept answer (a grounding model's
    layout, `replays = False`, sends none)."""
    return adapter.messages is not None and adapter.replays


def decision_messages(ctx: DecisionContext, adapter: Adapter, *, instructions: str, image_url: str | None,
                      sent_size: Size, layout: Layout = "stable-first", past: list[Past] | None = None,
                      deviations: Collection[str] | None = None) -> list[dict[str, Any]]:
    """One decision's messages: the family's trained conversation where its adapter lays one out (`messages`),
    else Conway's own (`build_messages`). `ModelPolicy.decide` and the exports (`experience/conversation.py`)
    both build them here. `deviations`: what of Conway's parts a trained conversation carries (None: all)."""
    if adapter.messages is not None:
        task, tail = split_parts(ctx, adapter.action_space(ctx), deviations)
        return adapter.messages(Slots(instructions, task, tail, image_url), past or [])
    return build_messages(ctx, instructions=instructions, action_space=adapter.action_space(ctx),
                          request_text=adapter.request_text(), image_url=image_url, sent_size=sent_size,
                          layout=layout, past=past)


@dataclass
class Prompt:
    """One decision's prompt as the stages after the layout see it: rebuilt whenever the fit cuts its parts or
    the history, or a refusal changes where the tool schema goes."""

    context: DecisionContext
    """A working copy of the loop's context: the fit cuts its parts, the loop's own stay as built (a retry or a
    comparison decides the same text again); it shares the loop's history."""
    adapter: Adapter
    image: SentImage
    image_url: str | None
    layout: Layout
    form: AnswerForm
    """The instructions and the request's `tools` (a refusal of the `tools` field changes them)."""
    notes_before: int
    """How many notes the history held before this decision (those after are recorded with it)."""
    deviations: Collection[str] | None = None
    """The opted-in deviations (`PolicySettings.deviations`): which of Conway's parts a trained conversation
    carries (None: all)."""

    @classmethod
    def of(cls, context: DecisionContext, adapter: Adapter, image: SentImage, layout: Layout,
           form: AnswerForm, deviations: Collection[str] | None = None) -> "Prompt":
        work = replace(context, parts=[replace(p) for p in context.parts], dropped=[])
        notes = len(context.history.notes) if context.history is not None else 0
        return cls(work, adapter, image, image.data_url(), layout, form, notes, deviations)

    @property
    def history(self) -> TurnHistory | None:
        return self.context.history

    @property
    def replays(self) -> bool:
        return replays_answers(self.adapter)

    def past(self) -> list[Past]:
        return past_turns(self.history, replay_text=self.replays)

    def messages(self) -> list[dict[str, Any]]:
        return decision_messages(self.context, self.adapter, instructions=self.form.instructions,
                                 image_url=self.image_url, sent_size=self.image.sent_size, layout=self.layout,
                                 past=self.past(), deviations=self.deviations)
