"""The pipeline's fit stage: the one budgeter of a model's window, owning every cut a prompt gets.

Before a decision it says how much room the loop's context parts have (`text_budget`: the window less the
image, the reply, the instructions, the past turns and a margin; `prompt.parts.build_parts` lays the parts out
inside it). At the decision it fits the laid-out prompt to the window (`fit`): the oldest past screenshots
go first, then the oldest past answers, then the parts are cut in slides (`slide_cut.py`), least needed
first, each cut said in the prompt's left-out part; it reports what it dropped (`Fitted.dropped`), and
refuses, before anything is sent, a prompt that cannot fit. What a server counted beyond the estimate is
learned (`calibrate`) and paid for from then on.
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
from conway.policies.slide_cut import SlidingCuts
from conway.prompt.parts import PartName
from conway.protocols import ContextExceeded, ContextPart, ContextWindow, DecisionContext

__all__ = ["Budgeter", "Fitted", "TextBudget", "FALLBACK_CHARS_PER_TOKEN", "TEMPLATE_MARGIN_TOKENS",
           "UNKNOWN_IMAGE_TOKENS", "SHRINK_ORDER", "HEAD_KEPT"]

TEMPLATE_MARGIN_TOKENS = 64
"""Allowance for the chat template (role markers, image delimiters) and the part headers."""
FALLBACK_CHARS_PER_TOKEN = 3.0
"""Estimate where no tokenizer can be asked (a little below English prose's ~4, to stay inside)."""
UNKNOWN_IMAGE_TOKENS = 1024
"""Image tokens assumed for a rule that leaves the size to the server, until a decision measures them."""
SHRINK_ORDER = (PartName.ACCESSIBILITY, PartName.RECENT_STEPS, PartName.MEMORY, PartName.HOST_FACTS, PartName.TOOLS,
                PartName.LATEST_RESULT, PartName.GOALS, PartName.CONSTITUTION)
"""Parts cut (in this order) when a prompt still exceeds the window: least needed first."""
HEAD_KEPT = (PartName.GOALS, PartName.CONSTITUTION)
"""Parts never cut away entirely: their head stays."""
_CUT = "cut to fit the model's context window"


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
    """The model's window, what a prompt costs in it, and every cut that makes one fit."""

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
        self._cuts = SlidingCuts()
        """Parts cut to fit the window, kept cut the same way from cycle to cycle (`_fit_parts`)."""

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

    # -- the cuts -------------------------------------------------------------------

    def fit(self, prompt: Prompt) -> Fitted:
        """The prompt fitted to the window with room for the reply: past screenshots first, then past answers,
        then the parts. Raises ContextExceeded, before anything is sent, when even the cut prompt does not fit."""
        dropped = self._fit_history(prompt)
        fitted = self.refit(prompt)
        return Fitted(fitted.messages, fitted.estimate, dropped + fitted.dropped)

    def refit(self, prompt: Prompt) -> Fitted:
        """The parts alone fitted again (a refusal changed the prompt or let past turns go)."""
        messages = prompt.messages()
        estimate, cpt = self.estimate(messages, prompt.image)
        window = self.context_window()
        if window is None:
            return Fitted(messages, estimate, [])
        limit = window.n_ctx - self.settings.max_tokens
        context, cut = prompt.context, []
        left_out: str | None = None  # the left-out part's own text, before any cut was said in it
        whole = {id(p): p.text for p in context.parts}  # every cut is made from the part as built
        for _ in range(6):
            if estimate <= limit:
                break
            need = int((estimate - limit) * max(1.0, cpt) * 1.02) + 16  # a little over: the loop cuts again if short
            self._cut_parts(context, need, whole, cut)
            if cut:  # said in the prompt before it is measured again, so the note itself is paid for
                left_out = _say_cut(context, cut, left_out)
            messages = prompt.messages()
            estimate, cpt = self.estimate(messages, prompt.image)
        if estimate > limit:
            raise ContextExceeded(estimate + self.settings.max_tokens, window.n_ctx,
                                  f"the prompt needs {estimate} tokens and the reply up to {self.settings.max_tokens} "
                                  f"(policy.max_tokens), but {window.source} allows {window.n_ctx}; "
                                  + self._largest_part(context, prompt.image, cpt))
        return Fitted(messages, estimate, [f"{name} ({_CUT})" for name in cut])

    def _cut_parts(self, context: DecisionContext, need: int, whole: dict[int, str], cut: list[str]) -> None:
        """Cut `need` characters from the parts, least needed first (`SHRINK_ORDER`); names what was cut."""
        for name in SHRINK_ORDER:
            for part in context.parts:
                if need <= 0 or part.name != name:
                    continue
                floor = 100 if name in HEAD_KEPT else 0
                keep = max(floor, len(part.text) - need)
                if keep >= len(part.text):
                    continue
                # in slides: the same cut as last cycle while it fits, so a prompt cache keeps its prefix
                text = self._cuts.cut(name, whole[id(part)], keep)
                need -= len(part.text) - len(text)
                part.text = text
                if part.name not in cut:
                    cut.append(part.name)
        context.parts = [p for p in context.parts if p.text or p.name in HEAD_KEPT]

    def _fit_history(self, prompt: Prompt) -> list[str]:
        """The oldest past screenshots go first when the prompt does not fit (before any text is cut), then the
        oldest past answers, marked; the screenshot window is held to what fitted, so it slides by half from then
        on instead of losing one screenshot a cycle."""
        window, history = self.context_window(), prompt.history
        if window is None or history is None:
            return []
        limit = window.n_ctx - self.settings.max_tokens
        gone = answers = 0
        while history.turns and self.estimate(prompt.messages(), prompt.image)[0] > limit:
            if history.with_images():
                gone += history.drop_oldest_images(1)
            else:
                del history.turns[0]
                answers += 1
        if gone:
            history.max_images = len(history.with_images())
        if not (gone or answers):
            return []
        what = ", ".join(x for x in (f"{gone} past screenshot(s)" if gone else "",
                                     f"{answers} past answer(s)" if answers else "") if x)
        _say(prompt.context, f"Cut to fit the model's context window: the oldest {what}.")
        return [f"{what} ({_CUT})"]

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


def _say(context: DecisionContext, line: str) -> None:
    """Add `line` to the prompt's left-out part (made when there is none)."""
    left = next((p for p in context.parts if p.name == PartName.LEFT_OUT), None)
    if left is None:
        context.parts.append(ContextPart(PartName.LEFT_OUT, line))
    else:
        left.text = left.text + " " + line


def _say_cut(context: DecisionContext, cut: list[str], before: str | None) -> str:
    """Say in the left-out part which parts were cut (replacing what an earlier round said); returns that part's
    text as it was before any cut was said in it."""
    line = "Cut to fit the model's context window: " + ", ".join(cut) + "."
    left = next((p for p in context.parts if p.name == PartName.LEFT_OUT), None)
    if left is None:
        context.parts.append(ContextPart(PartName.LEFT_OUT, line))
        return ""
    base = left.text if before is None else before
    left.text = f"{base} {line}" if base else line
    return base
