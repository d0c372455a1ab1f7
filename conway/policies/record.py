"""The pipeline's last stage: the parsed answer as a `Decision`, its turn proposed to the history, and the facts
recorded with it (the size sent, the convention, the resize rule, the output constraint, token usage, cached
tokens and timings).

Hidden reasoning (`reasoning_content`, `<think>`) is kept in `Decision.reasoning` and never put into a later
prompt; an answer with a valid action is proposed to the history, which keeps it once the loop has acted on it
(`ContextBuilder.note` commits it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from conway.actions import ActionProblem
from conway.policies.messages import Prompt
from conway.policies.output import AnswerForm
from conway.policies.parsed import ParsedOutput
from conway.policies.retry import count_images
from conway.policies.settings import PolicySettings
from conway.protocols import Decision, cut_off_message

__all__ = ["Sent", "decision_of"]


@dataclass
class Sent:
    """What went to the backend last (after any retry) and what came back."""

    messages: list[dict[str, Any]]
    estimate: int
    """The prompt's estimated tokens (`Budgeter.estimate`)."""
    result: Any
    """The backend's `http_client.ChatResult`."""


def decision_of(prompt: Prompt, form: AnswerForm, sent: Sent, parsed: ParsedOutput, started: float, *,
                settings: PolicySettings, model_id: str, names: dict[str, str], tool_meta: dict[str, Any]
                ) -> Decision:
    """The decision: its actions (or what is wrong with the answer), the turn proposed, the facts recorded."""
    result = sent.result
    actions, error_cause = _actions(parsed, result, settings.max_tokens)
    reasoning = "\n\n".join(r for r in (result.reasoning, parsed.reasoning) if r) or None
    history, image = prompt.history, prompt.image
    if history is not None and parsed.ok:  # a candidate turn: kept once the loop has acted on it
        past_image = image.past_image() if image.data is not None and history.image_cap > 0 else None
        history.propose(result.text, past_image)  # kept in its replayed form (`history.replayed`)
    meta = {**settings.meta, **names, **_facts(settings, prompt, form, sent), **tool_meta,
            **_outcome(model_id, prompt, sent, error_cause)}
    return Decision(raw_text=result.text, actions=actions, model_id=model_id,
                    thought=parsed.thought, reasoning=reasoning, usage=dict(result.usage),
                    latency_s=time.perf_counter() - started, meta=meta)


def _actions(parsed: ParsedOutput, result: Any, max_tokens: int) -> tuple[list[Any], str | None]:
    """The parsed actions, or the problem a cut-off answer has, and why the answer gave no valid action."""
    if parsed.ok:
        return list(parsed.actions), None
    if result.finish_reason == "length":
        return [ActionProblem(message=cut_off_message(max_tokens), raw=result.text[:2000])], "cut off"
    return list(parsed.actions), "unparseable" if parsed.raw_action_text is None else "invalid action"


def _facts(settings: PolicySettings, prompt: Prompt, form: AnswerForm, sent: Sent) -> dict[str, Any]:
    """What was sent and how: the image's sizes and rule, the convention, the constraint, timings, the layout."""
    image, result = prompt.image, sent.result
    return {
        "sent_size": list(image.sent_size),
        "captured_size": list(image.captured_size),
        "convention": settings.convention.value,
        "resize_rule": image.rule,
        "image_tokens": image.image_tokens,
        "structured_output": form.mode,
        **({"structured_note": form.note} if form.note else {}),
        "finish_reason": result.finish_reason,
        "timings": {**result.timings, "image_prepare_ms": round(image.encode_s * 1000, 3)},
        "layout": settings.layout,
    }


def _outcome(model_id: str, prompt: Prompt, sent: Sent, error_cause: str | None) -> dict[str, Any]:
    """What came back (the model that served it, a cut-off, why no action), the estimate, the history sent."""
    result, history = sent.result, prompt.history
    meta: dict[str, Any] = {}
    if result.model and result.model != model_id:
        meta["served_model"] = result.model
    if result.finish_reason == "length":
        meta["truncated"] = True
    if error_cause:
        meta["error_cause"] = error_cause
    meta["prompt_tokens_estimate"] = sent.estimate
    if history is not None and (prompt.replays or history.with_images()):
        meta["history"] = {"past_images": count_images(sent.messages) - (1 if prompt.image_url else 0),
                           "past_answers": len(prompt.past())}
        if len(history.notes) > prompt.notes_before:
            meta["history"]["notes"] = history.notes[prompt.notes_before:]
    return meta
