"""A decision's text budget and every cut its prompt gets: one set of rules, one account of what went.

A prompt is cut at two stages, both by the rules kept here:

1. **to the context budget** (characters), when the context builder lays the loop's parts out. The budget is
   sized once (`context_budget`: what the model's window leaves, the policy's `text_budget`, capped by
   `context.budget_tokens`), and `build_parts` places the parts in it, most needed first: the constitution
   and the goals (at most a third of the budget each, cut and marked beyond), the action space, tool listings,
   host facts and data rule (always whole), then the latest result (cut to what is left, never under 200
   characters), the accessibility snapshot (whole or not at all), the recent steps (newest kept), memory (its
   newest part when there is room for one). What is left out is said in the left-out part.
2. **to the model's window** (tokens, measured by the policy's budgeter, `conway/policies/window.py`), on the
   laid-out prompt: the oldest past screenshots go first, then the oldest past answers (`HistoryCut`), then the
   parts are cut, least needed first (`SHRINK_ORDER`; `HEAD_KEPT` keep their head), in slides that stay the
   same from cycle to cycle while they fit (`WindowCuts`, `slide_cut.py`), so a prompt cache keeps serving
   them. Each cut is said in the left-out part.

What was dropped is named here only: the first stage's names come back with the parts (`build_parts`), the
second's are added to the decision's context once (`report_dropped`); the journal keeps them with the decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conway.history import TurnHistory
from conway.prompt.fence import DATA_RULE
from conway.prompt.parts import PartName, StepNote
from conway.prompt.slide_cut import SlidingCuts
from conway.protocols import ContextPart, DecisionContext
from conway.text.bounded import cut_text

__all__ = ["DEFAULT_BUDGET_TOKENS", "MIN_BUDGET_TOKENS", "SHRINK_ORDER", "HEAD_KEPT", "WINDOW_CUT", "ContextBudget",
           "WindowCuts", "HistoryCut", "PartCut", "build_parts", "context_budget", "report_dropped", "resolve_budget"]

# -- the budget -------------------------------------------------------------------------

DEFAULT_BUDGET_TOKENS = 6000
"""Text budget when neither the configuration nor the model's context window sizes it."""
MIN_BUDGET_TOKENS = 64


def resolve_budget(configured: int | None, fitted: int | None) -> int:
    """The text budget: what the model's window leaves (`fitted`), capped by `context.budget_tokens`.

    A configured budget never lets a prompt exceed the window; with neither known, the default.
    """
    if fitted is None:
        return configured if configured is not None else DEFAULT_BUDGET_TOKENS
    fitted = max(MIN_BUDGET_TOKENS, fitted)
    return fitted if configured is None else min(configured, fitted)


@dataclass
class ContextBudget:
    """One decision's text budget, decided once (`context_budget`) and journaled with the decision."""

    tokens: int
    chars_per_token: float
    record: dict[str, Any]
    """How it was sized (tokens, window, where the window came from): `DecisionContext.budget`."""


def context_budget(configured: int | None, chars_per_token: float, fitted: Any | None) -> ContextBudget:
    """The budget for the parts: what the model's window leaves (`fitted`: the policy's `text_budget`, None when
    the model does not say), capped by `context.budget_tokens`, counted with the model's characters per token
    where it has a tokenizer (never more than the configured estimate)."""
    budget = resolve_budget(configured, fitted.text_tokens if fitted else None)
    if fitted is not None:
        chars_per_token = min(chars_per_token, fitted.chars_per_token)
    info: dict[str, Any] = {"budget_tokens": budget, "chars_per_token": round(chars_per_token, 3)}
    if fitted is not None:
        info.update({k: v for k, v in fitted.record().items() if k not in info})
    elif configured is None:
        info["window_source"] = "unknown (the model does not say): the default budget"
    return ContextBudget(budget, chars_per_token, info)


# -- stage 1: the parts laid out inside the budget ------------------------------------------

LATEST_MIN_CHARS = 200
"""The latest result keeps at least this much (its head and tail), however short the budget."""
MEMORY_PART_MIN_CHARS = 400
"""Memory's newest part is kept when more than this is left; less, and memory is left out."""


def build_parts(*, constitution: str, goals: str, memory: str, action_space: str,
                latest: str | None, recent: list[StepNote], budget_tokens: int,
                chars_per_token: float, accessibility: str | None = None,
                tools: str = "", host_facts: str = "", data_rule: bool = True) -> tuple[list[ContextPart], list[str]]:
    """Return (parts in wire order, names of what was left out); `recent` is oldest first.

    `tools`: what the runnable tools list (MCP tools, skills), counted like the action space; `host_facts`:
    the machine's (`prompt.host_facts`, empty when off), counted the same way. `data_rule=False` leaves out
    what untrusted data means, for a prompt that can hold none (a vision-check or grounding case: Conway's own
    instruction and the case's target, no tool output, memory or steps)."""
    room = _Room(int(budget_tokens * chars_per_token))
    constitution, goals = room.owner_file(constitution), room.owner_file(goals)
    tools, host_facts = tools.strip(), host_facts.strip()
    room.used = (len(constitution) + len(goals) + len(action_space) + len(tools) + len(host_facts)
                 + (len(DATA_RULE) if data_rule else 0))  # always sent whole
    latest_text = room.latest(latest)  # then the rest, most needed first
    access_text = room.accessibility(accessibility)
    kept_steps = room.steps([note.line() for note in recent])
    memory_text = room.memory(memory)
    parts = [ContextPart(PartName.CONSTITUTION, constitution), ContextPart(PartName.ACTION_SPACE, action_space)]
    if tools:
        parts.append(ContextPart(PartName.TOOLS, tools))
    if data_rule:
        parts.append(ContextPart(PartName.DATA_RULE, DATA_RULE))
    if host_facts:
        parts.append(ContextPart(PartName.HOST_FACTS, host_facts))
    parts.append(ContextPart(PartName.GOALS, goals))
    if memory_text is not None:
        parts.append(ContextPart(PartName.MEMORY, memory_text))
    if kept_steps:
        parts.append(ContextPart(PartName.RECENT_STEPS, "\n".join(kept_steps)))
    if access_text is not None:
        parts.append(ContextPart(PartName.ACCESSIBILITY, access_text))
    if room.dropped:
        parts.append(_left_out(room.dropped))
    if latest_text is not None:
        parts.append(ContextPart(PartName.LATEST_RESULT, latest_text))
    return parts, room.dropped


class _Room:
    """Characters left in the budget as the parts are placed, most needed first; what each part keeps, and the
    names of those left out."""

    def __init__(self, budget_chars: int):
        self.budget_chars = budget_chars
        self.used = 0
        self.dropped: list[str] = []

    def fits(self, text: str) -> bool:
        """Take `text`'s room when it fits whole."""
        if self.used + len(text) <= self.budget_chars:
            self.used += len(text)
            return True
        return False

    def left(self) -> int:
        return self.budget_chars - self.used

    def owner_file(self, text: str) -> str:
        """constitution.md or goals.md: at most a third of the budget each, cut and marked beyond."""
        return cut_text(text, self.budget_chars // 3)[0]

    def latest(self, latest: str | None) -> str | None:
        """The latest result: whole when it fits, else its head and tail in what is left."""
        if latest is None:
            return None
        latest_text = latest if self.fits(latest) else cut_text(latest, max(LATEST_MIN_CHARS, self.left()))[0]
        if latest_text is not latest:
            self.used += len(latest_text)
        return latest_text

    def accessibility(self, accessibility: str | None) -> str | None:
        """The accessibility snapshot whole when it fits, else left out."""
        if not accessibility:
            return None
        if self.fits(accessibility):
            return accessibility
        self.dropped.append(PartName.ACCESSIBILITY)
        return None

    def steps(self, lines: list[str]) -> list[str]:
        """The recent steps' lines that fit, newest kept when the budget is short, oldest first (the lines are
        what is counted and what is sent)."""
        kept: list[str] = []
        for line in reversed(lines):
            if self.fits(line + "\n"):
                kept.append(line)
            else:
                self.dropped.append(f"{len(lines) - len(kept)} older step(s)")
                break
        kept.reverse()
        return kept

    def memory(self, memory: str) -> str | None:
        """memory.md whole when it fits, else its newest part when there is room for one, else left out."""
        if not memory.strip():
            return None
        if self.fits(memory):
            return memory
        if self.left() > MEMORY_PART_MIN_CHARS:  # keep the newest part of memory rather than nothing
            text = cut_text(memory, self.left())[0]
            self.used += len(text)
            return text
        self.dropped.append(PartName.MEMORY)
        return None


# -- stage 2: the laid-out prompt cut to the model's window -------------------------------

SHRINK_ORDER = (PartName.ACCESSIBILITY, PartName.RECENT_STEPS, PartName.MEMORY, PartName.HOST_FACTS, PartName.TOOLS,
                PartName.LATEST_RESULT, PartName.GOALS, PartName.CONSTITUTION)
"""Parts cut (in this order) when a prompt still exceeds the window: least needed first."""
HEAD_KEPT = (PartName.GOALS, PartName.CONSTITUTION)
"""Parts never cut away entirely: their head stays."""
HEAD_KEPT_CHARS = 100
"""What a `HEAD_KEPT` part keeps at least."""
WINDOW_CUT = "cut to fit the model's context window"
"""How a cut to the window is named in what was dropped."""


class WindowCuts:
    """Every cut of one policy's prompts to its window; the parts' cuts are kept between cycles (the same cut
    while it fits)."""

    def __init__(self) -> None:
        self.slides = SlidingCuts()

    def history(self, history: TurnHistory) -> HistoryCut:
        """One fitting's past turns to let go, first."""
        return HistoryCut(history)

    def parts(self, context: DecisionContext) -> PartCut:
        """One fitting of `context`'s parts, then: every cut made from the parts as they are now."""
        return PartCut(context, self.slides)


class HistoryCut:
    """The past turns let go, one at a time while the prompt does not fit: the oldest screenshots first, then
    the oldest answers."""

    def __init__(self, history: TurnHistory):
        self.history = history
        self.screenshots = 0
        self.answers = 0

    def possible(self) -> bool:
        return bool(self.history.turns)

    def one(self) -> None:
        if self.history.with_images():
            self.screenshots += self.history.drop_oldest_images(1)
        else:
            del self.history.turns[0]
            self.answers += 1

    def said(self, context: DecisionContext) -> list[str]:
        """Once the prompt fits: the screenshot window held to what fitted (so it slides by half from then on
        instead of losing one screenshot a cycle), the cut said in the prompt; what was dropped."""
        if self.screenshots:
            self.history.max_images = len(self.history.with_images())
        if not (self.screenshots or self.answers):
            return []
        what = ", ".join(x for x in (f"{self.screenshots} past screenshot(s)" if self.screenshots else "",
                                     f"{self.answers} past answer(s)" if self.answers else "") if x)
        _say(context, f"Cut to fit the model's context window: the oldest {what}.")
        return [f"{what} ({WINDOW_CUT})"]


class PartCut:
    """One fitting's cuts of a prompt's parts, least needed first, each said in its left-out part."""

    def __init__(self, context: DecisionContext, slides: SlidingCuts):
        self.context = context
        self.slides = slides
        self.cut: list[str] = []
        self._whole = {id(p): p.text for p in context.parts}  # every cut is made from the part as built
        self._left_out: str | None = None  # the left-out part's own text, before any cut was said in it

    def shrink(self, over_tokens: int, chars_per_token: float) -> None:
        """Cut the parts by what `over_tokens` is in characters (a little over: the caller measures again and
        asks for more when short), and say it in the prompt before it is measured again (the note is paid for)."""
        need = int(over_tokens * max(1.0, chars_per_token) * 1.02) + 16
        self._cut_parts(need)
        if self.cut:
            self._left_out = _say_cut(self.context, self.cut, self._left_out)

    @property
    def dropped(self) -> list[str]:
        return [f"{name} ({WINDOW_CUT})" for name in self.cut]

    def _cut_parts(self, need: int) -> None:
        """Cut `need` characters from the parts, least needed first (`SHRINK_ORDER`)."""
        context = self.context
        for name in SHRINK_ORDER:
            for part in context.parts:
                if need <= 0 or part.name != name:
                    continue
                floor = HEAD_KEPT_CHARS if name in HEAD_KEPT else 0
                keep = max(floor, len(part.text) - need)
                if keep >= len(part.text):
                    continue
                # in slides: the same cut as last cycle while it fits, so a prompt cache keeps its prefix
                text = self.slides.cut(name, self._whole[id(part)], keep)
                need -= len(part.text) - len(text)
                part.text = text
                if part.name not in self.cut:
                    self.cut.append(part.name)
        context.parts = [p for p in context.parts if p.text or p.name in HEAD_KEPT]


# -- how a cut is said -----------------------------------------------------------------

def report_dropped(context: DecisionContext, dropped: list[str]) -> None:
    """Add what the window's cuts dropped to the decision's context (journaled with it), each said once."""
    context.dropped.extend(d for d in dropped if d not in context.dropped)


def _left_out(dropped: list[str]) -> ContextPart:
    """The left-out part of a prompt laid out inside the budget: what did not fit."""
    return ContextPart(PartName.LEFT_OUT, "Left out to stay inside the context budget: " + ", ".join(dropped) + ".")


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
