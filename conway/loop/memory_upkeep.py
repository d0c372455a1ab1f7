"""Compacting memory.md between cycles (docs/architecture.md#memory): a model's summary, else the marked truncation.

The loop calls `between_cycles` before each cycle's budget check, so a summary request never stands between a
decision and its dispatch: every result of the last decision is recorded by then. The request is text only
(`conway.prompt.summary`), bounded by `memory.summary_max_tokens` and `memory.summary_timeout_s`, and runs as a
decision does (`Control.cancellable`): a stop aborts it within the usual second and ends the run with memory.md
left as it was (it is compacted on the next run). Each compaction is journaled: a `memory` `request` event
before the request (prompt hash, model, sizes) and a `compacted` one after (outcome, reason, sizes, duration,
the new text).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from conway.cancel import DecisionAborted
from conway.loop.control import Control
from conway.loop.parts import LoopParts
from conway.prompt.memory import Memory
from conway.prompt.summary import refusal, summary_request, unfenced
from conway.protocols import PolicyError, TextAnswer
from conway.store.events import MemoryCompacted, MemoryRequest


class MemoryUpkeep:
    """memory.md of a run (`memory`, which the prompt reads) and what compacts it (`LoopParts.summariser`)."""

    def __init__(self, parts: LoopParts, control: Control, record: Callable[[str, dict[str, Any]], None]):
        self.cfg = cfg = parts.config.memory
        self.memory = Memory(parts.home.memory, parts.home.memory_previous, cfg.max_chars, cfg.keep_chars)
        self.summariser, self.control, self.record, self.say = parts.summariser, control, record, parts.say
        self.unsummarised = "no summariser: memory.summarise=false" if not cfg.summarise else \
            f"no summariser: the policy {parts.policy.model_id} has no model to ask"

    def between_cycles(self) -> None:
        if not self.memory.due():
            return
        text = self.memory.text()
        summary, reason, facts = self._summary(text) if self.summariser is not None else \
            (None, self.unsummarised, {})
        done = self.memory.compact(text, summary, reason)
        if done is None:
            self.record("memory", MemoryCompacted("skipped", "memory.md was edited during the summary; compacted "
                                                  "at the next cycle", **facts).to_payload())
            return
        self.record("memory", MemoryCompacted("summarised" if done.summarised else "truncated", done.reason, **facts,
                                              memory_chars=len(done.text), dropped_chars=done.dropped_chars,
                                              memory=done.text).to_payload())
        self.say(f"memory.md {'summarised' if done.summarised else f'truncated ({done.reason})'}: "
                 f"{len(text)} → {len(done.text)} characters")

    def _summary(self, text: str) -> tuple[str | None, str | None, dict[str, Any]]:
        """(the summary, None) or (None, why not), and the request's facts for the journal."""
        model = self.summariser
        assert model is not None
        request = summary_request(text, self.memory.summary_target())
        max_tokens, timeout = self.cfg.resolved_summary_max_tokens, self.cfg.summary_timeout_s
        facts: dict[str, Any] = {"model_id": model.model_id, "prompt_sha256": request.sha256, "input_chars": len(text)}
        left = self.control.seconds_left()
        if left is not None and left <= 0:  # the run ends at the budget check next: no model time left to spend
            return None, "the max-seconds budget is spent", facts
        if left is not None and left < timeout:  # the summary never outlasts --max-seconds
            timeout = round(left, 3)
        self.record("memory", MemoryRequest(model.where, model.model_id,
                                            request.sha256, len(request.prompt), len(text), request.target_chars,
                                            max_tokens, timeout).to_payload())
        started = time.perf_counter()
        answer: TextAnswer | None = None
        try:
            answer = self.control.cancellable(lambda: model.complete_text(request.prompt, max_tokens), timeout)
            reason = refusal(answer, request, max_tokens)
        except DecisionAborted:
            stop = self.control.pending_stop()
            if stop is not None:  # a stop, not the deadline: memory.md stays as it is, the run ends
                self.record("memory", MemoryCompacted("aborted", f"stopped during the summary: {stop.reason}", **facts,
                                                      duration_s=round(time.perf_counter() - started, 3)).to_payload())
                raise stop from None
            reason = f"the summary request timed out after {timeout:g} s" + (
                " (memory.summary_timeout_s)" if timeout == self.cfg.summary_timeout_s else " (what --max-seconds left)")
        except PolicyError as exc:
            reason = f"the summary request failed: {exc}"
        except Exception as exc:  # a summary is an aid: a failing one costs the summary, never the run or memory
            reason = f"the summary request failed: {type(exc).__name__}: {exc}"
        facts["duration_s"] = round(time.perf_counter() - started, 3)
        if answer is not None:
            facts.update(output_chars=len(answer.text), usage=answer.usage or None)
            if answer.model_id:
                facts["model_id"] = answer.model_id
        return (unfenced(answer.text) if answer is not None and reason is None else None), reason, facts
