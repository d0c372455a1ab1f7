"""The pipeline's fit stage: the model's window, what a prompt costs in it, and what the server counted beyond.

Before a decision it says how much room the loop's context parts have (`text_budget`: the window less the
image, the reply, the instructions, the past turns and a margin; `conway.prompt.budget.build_parts` lays the
parts out inside it). At the decision it measures the laid-out prompt against the window (`fit`) and, while it
does not fit, has the prompt's budgeter cut it (`conway/prompt/budget.py`, which owns every cut and says what
it dropped: the oldest past screenshots first, then the oldest past answers, then the parts in slides, least
needed first); it refuses, before anything is sent, a prompt that cannot fit. What a server counted beyond the
estimate is learned (`calibrate`) and paid for from then on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conway.actions import ACTION_TYPES
from conway.geometry import ResizeRule, Size, image_tokens
from conway.history import TurnHistory
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import Backend
from conway.policies.images import SentImage
from conway.policies.messages import Prompt, replays_answers
from conway.policies.settings import PolicySettings
from conway.prompt.budget import WindowCuts
from conway.prompt.parts import PartName
from conway.protocols import ContextExceeded, ContextWindow, DecisionContext

__all__ = ["Budgeter", "Fitted", "TextBudget", "FALLBACK_CHARS_PER_TOKEN", "TEMPLATE_MARGIN_TOKENS",
           "UNKNOWN_IMAGE_TOKENS", "CUT_ROUNDS"]

TEMPLATE_MARGIN_TOKENS = 64
"""Allowance for the chat template (role markers, image delimiters) and the part headers."""
FALLBACK_CHARS_PER_TOKEN = 3.0
"""Estimate where no tokenizer can be asked (a little below English prose's ~4, to stay inside)."""
UNKNOWN_IMAGE_TOKENS = 1024
"""Image tokens assumed for a rule that leaves the size to the server, until a decision measures them."""
CUT_ROUNDS = 6
"""Times the parts are cut and the prompt measured again before a prompt that still does not fit is refused."""


@dataclass
class TextBudget:
    """Room left for the loop's context parts once everything else in the window is paid for."""

    text_tokens: int
    n_ctx: int
    source: str
    image_tokens: int
    reply_tokens: int
    instruction_tokens: int
    margin_tokens: int
    chars_per_token: float
    """Characters per token of this model's tokenizer on the instructions (None counted: the config's estimate)."""
    history_tokens: int = 0
    """What the replayed past turns cost (their screenshots and answers), as of the last decision."""

    def record(self) -> dict[str, Any]:
        return {"budget_tokens": self.text_tokens, "n_ctx": self.n_ctx, "window_source": self.source,
                "image_tokens": self.image_tokens, "reply_tokens": self.reply_tokens,
                **({"history_tokens": self.history_tokens} if self.history_tokens else {}),
                "instruction_tokens": self.instruction_tokens, "margin_tokens": self.margin_tokens,
                "chars_per_token": round(self.chars_per_token, 3)}


@dataclass
class Fitted:
    """A prompt that fits the window: its messages, their estimated tokens, and what was dropped to fit."""

    messages: list[dict[str, Any]]
    estimate: int
    dropped: list[str]


class Budgeter:
    """The model's window, what a prompt costs in it, and the measuring that has a prompt cut to fit."""

    def __init__(self, adapter: Adapter, backend: Backend, settings: PolicySettings, rule: ResizeRule):
        self.adapter = adapter
        self.backend = backend
        self.settings = settings
        self.rule = rule
        self._window: ContextWindow | None = None
        self._window_known = False
        self.calibration = 0
        """Tokens a server counted beyond our last estimate (template, image): added to later estimates."""
        self.history: TurnHistory | None = None
        """The run's past turns, as the last decision was handed them (the text budget pays for them)."""
        self.cuts = WindowCuts()
        """The prompt's budgeter's cuts to this window, kept the same way from cycle to cycle (`refit`)."""

    # -- the window and what things cost in it ------------------------------------------

    def context_window(self) -> ContextWindow | None:
        """Tokens one request may hold, learned once from the backend (None: it does not say)."""
        if not self._window_known:
            self._window = self.backend.context_window()
            self._window_known = True
        return self._window

    def count(self, text: str) -> tuple[int, bool]:
        """(tokens, exact?): the backend's tokenizer when it has one, else an estimate."""
        n = self.backend.count_tokens(text)
        if isinstance(n, int):
            return n, True
        return int(len(text) / FALLBACK_CHARS_PER_TOKEN) + 1, False

    def image_tokens_for(self, captured_size: Size | None) -> int:
        """Image tokens an observation of `captured_size` costs (the family's resize rule decides)."""
        if not captured_size or min(captured_size) <= 0:
            return 0
        if self.rule.passthrough:
            return self.settings.image_max_tokens or UNKNOWN_IMAGE_TOKENS
        return image_tokens(self.rule.target_size(captured_size), self.rule.factor)

    def text_budget(self, captured_size: Size | None, action_types: list[str]) -> TextBudget | None:
        """Tokens left for the context parts: window − image − reply (max_tokens) − instructions − margin."""
        window = self.context_window()
        if window is None:
            return None
        types = [t for t in action_types if t in ACTION_TYPES] or list(ACTION_TYPES)
        has_image = bool(captured_size) and min(captured_size or (0, 0)) > 0
        sent = self.rule.target_size(captured_size) if has_image else (1, 1)  # type: ignore[arg-type]
        fixed = self.adapter.instructions(types, sent, self.settings.convention) + "\n" + self.adapter.request_text()
        n_instr, exact = self.count(fixed)
        cpt = len(fixed) / max(1, n_instr) if exact else FALLBACK_CHARS_PER_TOKEN
        image_n = self.image_tokens_for(captured_size) if has_image else 0
        margin = TEMPLATE_MARGIN_TOKENS + self.calibration
        text = window.n_ctx - image_n - self.settings.max_tokens - n_instr - margin
        # the history takes at most half of the text's room: what does not fit then goes at decide (`fit`),
        # oldest screenshots first, instead of the goals being cut for screenshots that go anyway
        past = min(self._past_tokens() + self._past_text_tokens(cpt), max(0, text // 2))
        text -= past
        return TextBudget(text_tokens=text, n_ctx=window.n_ctx, source=window.source, image_tokens=image_n,
                          reply_tokens=self.settings.max_tokens, instruction_tokens=n_instr, margin_tokens=margin,
                          chars_per_token=cpt, history_tokens=past)

    def calibrate(self, usage: Any, estimate: int) -> None:
        """Learn what the estimate missed from the prompt tokens the server counted."""
        served_prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if isinstance(served_prompt, int) and served_prompt > estimate:
            self.calibration += served_prompt - estimate

    def _past_tokens(self) -> int:
        """Image tokens of the past screenshots the next request sends again."""
        if self.history is None:
            return 0
        return sum(t.image.tokens if t.image.tokens is not None else UNKNOWN_IMAGE_TOKENS
                   for t in self.history.with_images())

    def _past_text_tokens(self, cpt: float) -> int:
        if self.history is None:
            return 0
        turns = self.history.turns if replays_answers(self.adapter) else self.history.with_images()
        return int(sum(len(t.answer) for t in turns) / max(1.0, cpt))

    def estimate(self, messages: list[dict[str, Any]], image: SentImage) -> tuple[int, float]:
        """(prompt tokens with the template allowance, characters per text token) of these messages."""
        texts = []
        for m in messages:
            content = m.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [p.get("text", "") for p in content if p.get("type") == "text"]
        text = "\n".join(texts)
        text_n, _ = self.count(text)
        image_n = (image.image_tokens if image.image_tokens is not None else UNKNOWN_IMAGE_TOKENS) \
            if image.data is not None else 0
        image_n += self._past_tokens()
        return text_n + image_n + TEMPLATE_MARGIN_TOKENS + self.calibration, len(text) / max(1, text_n)

    # -- fitting to the window ---------------------------------------------------------

    def fit(self, prompt: Prompt) -> Fitted:
        """The prompt fitted to the window with room for the reply. A trained family's window (its agent's
        screenshots and answers) is never shrunk to fit: only Conway's own parts are cut, and a window that still
        does not fit is refused, before anything is sent, naming both ways out. Under `half_slide` and in Conway's
        own layout past screenshots go first, then past answers, then the parts. Raises ContextExceeded."""
        if not self.shrinks_history():
            try:
                return self.refit(prompt)
            except ContextExceeded as exc:
                raise self.window_refused(prompt, exc) from None
        dropped = self._fit_history(prompt)
        fitted = self.refit(prompt)
        return Fitted(fitted.messages, fitted.estimate, dropped + fitted.dropped)

    def shrinks_history(self) -> bool:
        """Whether past screenshots and answers may go to fit (before sending, or after a server's refusal for
        length): Conway's own layout, or the opt-in half slide. A trained family's window is otherwise the user's
        choice alone (`policy.history_images`), never shrunk behind it."""
        return self.adapter.messages is None or "half_slide" in self.settings.deviations

    def window_refused(self, prompt: Prompt, exc: ContextExceeded) -> ContextExceeded:
        """The refusal of a faithful window that does not fit, in one line with the numbers and the ways out:
        before sending (the window is known), or after a server refused it for length (a server that states no
        context, such as vLLM: its refusal gives the numbers)."""
        history = prompt.history
        past = len(history.with_images()) if history is not None else 0
        window = self.context_window()
        n_ctx = window.n_ctx if window is not None else exc.n_ctx
        if not past:
            return exc
        source = window.source if window is not None else "the server (it states no context; its refusal says)"
        needs = f"~{exc.n_tokens}" if exc.n_tokens is not None else "more"
        if exc.n_tokens is not None and n_ctx is not None:
            per = max(1, self._past_tokens() // past)
            keep = max(0, past - -(-(exc.n_tokens - n_ctx) // per)) + 1
            raise_to, smaller = f" to at least {exc.n_tokens}", f"policy.history_images={keep}"
        else:
            raise_to, smaller = "", f"policy.history_images below {past + 1}"
        return ContextExceeded(exc.n_tokens, n_ctx,
                               f"the window ({past + 1} screenshots and {len(history.turns)} replayed answers: "  # type: ignore[union-attr]
                               f"the agent's) needs {needs} tokens with the reply, but {source} allows "
                               f"{n_ctx if n_ctx is not None else 'less'}: raise the server's context (-c, "
                               f"--max-model-len, or runtime.n_ctx){raise_to}, or set a smaller window, {smaller} (a "
                               "deviation, listed in every report)")

    def refit(self, prompt: Prompt) -> Fitted:
        """The parts alone fitted again (a refusal changed the prompt or let past turns go)."""
        messages = prompt.messages()
        estimate, cpt = self.estimate(messages, prompt.image)
        window = self.context_window()
        if window is None:
            return Fitted(messages, estimate, [])
        limit = window.n_ctx - self.settings.max_tokens
        cut = self.cuts.parts(prompt.context)
        for _ in range(CUT_ROUNDS):
            if estimate <= limit:
                break
            cut.shrink(estimate - limit, cpt)  # the prompt's budgeter decides what goes, and says it
            messages = prompt.messages()
            estimate, cpt = self.estimate(messages, prompt.image)
        if estimate > limit:
            raise ContextExceeded(estimate + self.settings.max_tokens, window.n_ctx,
                                  f"the prompt needs {estimate} tokens and the reply up to {self.settings.max_tokens} "
                                  f"(policy.max_tokens), but {window.source} allows {window.n_ctx}; "
                                  + self._largest_part(prompt.context, prompt.image, cpt))
        return Fitted(messages, estimate, cut.dropped)

    def _fit_history(self, prompt: Prompt) -> list[str]:
        """Past turns let go, one at a time, while the prompt does not fit (before any text is cut): which go,
        and how it is said, the prompt's budgeter decides (`WindowCuts.history`)."""
        window, history = self.context_window(), prompt.history
        if window is None or history is None:
            return []
        limit = window.n_ctx - self.settings.max_tokens
        cut = self.cuts.history(history)
        while cut.possible() and self.estimate(prompt.messages(), prompt.image)[0] > limit:
            cut.one()
        return cut.said(prompt.context)

    def _largest_part(self, context: DecisionContext, image: SentImage, cpt: float) -> str:
        """Which part of a prompt that does not fit is the largest, with its size and what lowers it."""
        sizes = {f"{p.name} part": int(len(p.text) / max(1.0, cpt)) for p in context.parts}
        sizes["image"] = (image.image_tokens or UNKNOWN_IMAGE_TOKENS) if image.data is not None else 0
        sizes["reply"] = self.settings.max_tokens
        remedy = {"image": "lower policy.image_max_tokens", "reply": "lower policy.max_tokens",
                  f"{PartName.TOOLS} part": "lower tools.mcp_listing_max_chars / skills.listing_max_chars",
                  f"{PartName.ACTION_SPACE} part": "offer fewer tools (tools.enabled)"}
        name, n = max(sizes.items(), key=lambda kv: kv[1])
        return (f"the largest part is the {name} (~{n} tokens): {remedy.get(name, 'shorten it')}, or raise the "
                "model's context window (runtime.n_ctx, or the server's own -c)")

