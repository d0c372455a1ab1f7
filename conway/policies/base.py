"""A model policy: one family's adapter on one backend, deciding through one pipeline.

A model policy is an *adapter* (how to instruct one model family, which parser reads its answers, its
coordinate convention and resize rule, which output constraint fits it: `adapter.py`) on top of a *backend*
(an OpenAI-compatible HTTP endpoint or llama-cpp-python in this process: `backend.py`). `ModelPolicy.decide`
is the same for all of them, one stage a module:

1. **prepare** the screenshot with the family's resize rule, and read archived past screenshots again
   (`images.py`);
2. **lay out** the family's conversation, or Conway's own (`messages.py`; the part order:
   `conway/prompt/layout.py`), with the answer's form: the instructions and where a tool schema goes
   (`output.py`);
3. **fit** it to the model's window (`window.py`, which also sizes the loop's text budget beforehand): measured
   against the window and cut by the prompt's budgeter, which owns every cut (past screenshots and answers
   first, then the parts) and says what it dropped (`conway/prompt/budget.py`);
4. **complete** through the backend, constrained where it can be (GBNF grammar, JSON schema: `output.py`),
   asked again once when a refusal can be answered (`retry.py`);
5. **parse** with the adapter's parser (never executing anything the model wrote);
6. **record** the decision and the facts sent with it, and propose its turn to the history (`record.py`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable

from conway.actions import ACTION_TYPES
from conway.geometry import Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import Backend
from conway.policies.families import get_resize_rule
from conway.policies.images import SentImage, ServerTakesNoImages, prepare_image, reread_history
from conway.policies.messages import Prompt
from conway.policies.output import OutputForm
from conway.policies.record import Sent, decision_of
from conway.policies.retry import count_images, shrink_for
from conway.policies.settings import PolicySettings
from conway.policies.window import Budgeter, Fitted, TextBudget
from conway.prompt.budget import report_dropped
from conway.protocols import ContextExceeded, ContextWindow, Decision, DecisionContext, Observation, Policy, PolicyError

__all__ = ["ModelPolicy"]


class ModelPolicy(Policy):
    """One adapter on one backend; implements the `Policy` protocol."""

    def __init__(self, adapter: Adapter, backend: Backend, settings: PolicySettings,
                 on_close: list[Callable[[], None]] | None = None):
        self.adapter = adapter
        self.backend = backend
        self.settings = settings
        self.model_id = backend.model_id
        rule = get_resize_rule(settings.resize_rule)
        if settings.image_max_tokens and not rule.passthrough:
            try:
                rule = rule.with_token_cap(settings.image_max_tokens)
            except ValueError:
                pass  # the cap is below the family's minimum: keep the family rule
        self.rule = rule
        self.budget = Budgeter(adapter, backend, settings, rule)
        """The model's window and every cut a prompt gets (the fit stage)."""
        self.output = OutputForm(adapter, backend, settings)
        """The output constraint and the tool schema's place."""
        self._on_close = list(on_close or [])
        self._closed = False
        self.description: list[str] = []
        """Human-readable lines about the model and where it runs (printed by `conway probe`)."""
        self.deviations: list[str] | None = None
        """How this policy's requests differ from its family's official agent's, one line each (the factory's
        `deviations.deviation_lines`; None: not a trained family); journaled at a session's start."""

    @property
    def abortable(self) -> bool:  # `Policy.abortable`: as its backend is
        return bool(self.backend.abortable)

    # -- what the loop and the readiness checks ask --------------------------------------

    def structured_mode(self) -> str:
        """The output constraint in use; detected on first use (PolicyError when a requested one is unsupported)."""
        return self.output.structured_mode()

    def structured_support(self) -> tuple[list[str], dict[str, str]]:
        """The backend's honoured modes (detected by trying, cached) and what each try showed."""
        return self.backend.structured_support(), dict(self.backend.structured_report)

    def context_window(self) -> ContextWindow | None:
        """Tokens one request may hold, learned once from the backend (None: it does not say)."""
        return self.budget.context_window()

    def served_by(self) -> dict[str, Any]:
        """What served the model (server, version or build, model file and digest, quantisation, context,
        projector), as its server or file says it; {} when nothing says. Never fails a run or a report: a server
        that cannot be asked leaves the facts it would have given out."""
        try:
            return self.backend.served_by()
        except Exception:  # the facts are provenance, not the run's work: a failure to ask them is not an error
            return {}

    def image_tokens_for(self, captured_size: Size | None) -> int:
        """Image tokens an observation of `captured_size` costs (the family's resize rule decides)."""
        return self.budget.image_tokens_for(captured_size)

    def text_budget(self, captured_size: Size | None, action_types: list[str]) -> TextBudget | None:
        """Tokens left for the context parts (`Budgeter.text_budget`)."""
        return self.budget.text_budget(captured_size, action_types)

    # -- decide -----------------------------------------------------------------

    def decide(self, context: DecisionContext) -> Decision:
        """prepare → lay out → fit → complete → parse → record."""
        started = time.perf_counter()
        image = self._prepare(context.observation)
        sent_size, captured = _answer_sizes(image)
        types = [t for t in context.action_types if t in ACTION_TYPES] or list(ACTION_TYPES)
        self.budget.history = context.history  # the next text budget pays for these past turns
        form = self.output.instructions(types, sent_size)
        prompt = Prompt.of(context, self.adapter, image, self.settings.layout, form, self.settings.deviations)
        reread_history(prompt.history, self.settings.resize_rule, self.rule, self.settings.image_encoding)
        fitted = self.budget.fit(prompt)  # cuts a copy: the loop's context stays as built
        report_dropped(context, fitted.dropped)  # what the cuts dropped, said once, journaled with the decision
        self.output.constrain(form, types, sent_size, captured)
        sent = self._complete(prompt, fitted, types, sent_size)
        if self.adapter.answer_text is not None:  # its thinking block is part of its answer: read and kept with it
            text, reasoning = self.adapter.answer_text(sent.result.text, sent.result.reasoning)
            sent = replace(sent, result=replace(sent.result, text=text, reasoning=reasoning))
        self.budget.calibrate(sent.result.usage, sent.estimate)
        parsed = self.adapter.parse(sent.result.text, convention=self.settings.convention, sent_size=sent_size,
                                    captured_size=captured)
        return decision_of(prompt, form, sent, parsed, started, settings=self.settings, model_id=self.model_id,
                           names={"policy": self.adapter.name, "backend": self.backend.kind},
                           tool_meta=self.output.record(form))

    def _prepare(self, obs: Observation) -> SentImage:
        """The screenshot as the model is sent it; refused at once by a server that takes no images."""
        image = prepare_image(obs, self.settings.resize_rule, self.rule, self.settings.image_encoding)
        if image.data is not None and self.backend.takes_images() is False:  # before any refusal
            raise ServerTakesNoImages("the model server takes no images (llama-server /props: modalities.vision is "
                                      "false): it was started without the model's vision projector")
        return image

    def _complete(self, prompt: Prompt, fitted: Fitted, types: list[str], sent_size: Size) -> Sent:
        """One completion; asked again, once, after a refusal of the `tools` field or one the history answers."""
        form, history = prompt.form, prompt.history

        def ask(messages: list[dict[str, Any]]) -> Any:  # reads the form as it is then (a refusal changes it)
            return self._ask(messages, form)
        try:
            return Sent(fitted.messages, fitted.estimate, ask(fitted.messages))
        except PolicyError as exc:
            tools_refused = self.output.refused_tools(form, exc, types, sent_size)
            if not tools_refused and isinstance(exc, ContextExceeded) and not self.budget.shrinks_history():
                raise self.budget.window_refused(prompt, exc) from None  # never shrunk unasked: refused, in one line
            if not tools_refused and not shrink_for(exc, history, count_images(fitted.messages)):
                raise
            again = self.budget.refit(prompt)
            result = ask(again.messages)
            if not tools_refused and history is not None and isinstance(exc, ContextExceeded):
                history.server_images = count_images(again.messages)  # what went through is what it takes
            return Sent(again.messages, again.estimate, result)

    def _ask(self, messages: list[dict[str, Any]], form: Any) -> Any:
        """One completion at the family's sampling; an answer that did not end with finish_reason "stop" asked
        again with the same request, as the family's agent does (`retry_unfinished` times; OpenCUA's 20), until
        one does or the server gives the same answer again (asking once more would change nothing)."""
        s = self.settings
        sampling = {**s.sampling, **self.adapter.request_fields()}
        result = None
        for _ in range(1 + s.retry_unfinished):
            previous = result
            result = self.backend.complete(messages, mode=form.mode, spec=form.spec,
                                           max_tokens=s.max_tokens if s.max_tokens_sent else None,
                                           temperature=s.temperature, seed=s.seed, sampling=sampling)
            if not s.retry_unfinished or result.finish_reason == "stop":
                return result
            if previous is not None and previous.text == result.text:
                break
        raise PolicyError(f"the answer did not finish (finish_reason {result.finish_reason!r}, "  # type: ignore[union-attr]
                          f"policy.max_tokens={s.max_tokens}) and asking again gave no finished one, as the family's "
                          "agent asks until one ends with \"stop\"")

    # -- lifetime -----------------------------------------------------------------

    def close(self) -> None:
        """Release the backend and stop a server Conway started for this policy (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.backend.close()
        finally:
            for fn in reversed(self._on_close):
                fn()

    def __enter__(self) -> "ModelPolicy":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _answer_sizes(image: SentImage) -> tuple[Size, Size]:
    """(sent, captured) sizes the answer's coordinates map between; (1, 1) without a screenshot: GUI actions are
    not offered then, coordinates never map."""
    sent, captured = image.sent_size, image.captured_size
    if image.data is None or min(sent) <= 0 or min(captured) <= 0:
        return (1, 1), (1, 1)
    return sent, captured
