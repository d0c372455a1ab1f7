"""Assembling one decision's text inside a token budget.

Order on the wire is built for prompt caches (the part order: `layout.py`): the
stable part first (constitution, action space), then what only grows, oldest
first (goals, memory's step log, the recent-steps window), then what changes
every cycle, and last the latest result, right before the request line and the
image (where the model reads it). Every prompt's stable part also says
once what untrusted data is (`DATA_RULE`, see `fence`), and carries the host facts when they are on. Priority
when the budget is short: constitution and goals are always present (cut and
marked if they alone are too big), then the latest result, then recent steps
(newest kept), then memory. Whatever does not fit is dropped and the drop is
marked.

The recent-steps window (`RecentSteps`) is only appended to until it holds
`size` steps; then it slides by half at once, so between slides the prompt
text before its newest line stays byte-identical and a KV cache reuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conway.prompt.fence import DATA_RULE, Frame
from conway.protocols import ContextPart
from conway.text.bounded import cut_text


@dataclass
class StepNote:
    step: int
    action: str
    outcome: str


class PartName:
    """The names of a decision prompt's parts (`ContextPart.name`): the one place they are spelled.

    The parts are laid out by these names (`prompt/layout.py`), and the files among them are sent
    inside `<file name="…">` tags, the others under a heading or an untrusted-data tag (`frame_of`), so a
    name is also what the model reads."""

    CONSTITUTION = "constitution.md"
    DATA_RULE = "untrusted data"
    """What the untrusted-data frame means (`fence.DATA_RULE`): said once, in the stable part."""
    HOST_FACTS = "host facts"
    """The machine the agent works on (`prompt.host_facts`): stable, refreshed when the facts change."""
    ACTION_SPACE = "action space"
    TOOLS = "tools"
    """What the runnable tools list: the MCP tools and the Agent Skills (stable; cut, marked, when too long)."""
    GOALS = "goals.md"
    MEMORY = "memory.md"
    RECENT_STEPS = "recent steps (oldest first)"
    """The recent-steps window."""
    SCREEN = "screen"
    """Why this step has no screenshot."""
    ACCESSIBILITY = "accessibility snapshot"
    LEFT_OUT = "left out"
    """What was dropped or cut to stay inside the budget or the model's window."""
    LATEST_RESULT = "latest result"


OWNER_FILES = (PartName.CONSTITUTION, PartName.GOALS)
"""The owner's files: instructions, sent tagged with their file name."""
CONWAY_PARTS = (PartName.DATA_RULE, PartName.HOST_FACTS, PartName.ACTION_SPACE, PartName.SCREEN, PartName.LEFT_OUT)
"""Text Conway writes itself: instructions and facts, under a `## name` heading."""


def frame_of(name: str) -> Frame:
    """How a part is framed: the owner's file, Conway's own text, or untrusted data (every other part: tool
    listings and results, memory and recent steps, accessibility text, and any part not named here)."""
    if name in OWNER_FILES:
        return "file"
    return "conway" if name in CONWAY_PARTS else "data"


class RecentSteps:
    """The recent-steps window, oldest first: appended every step, slid by half when it outgrows `size`."""

    def __init__(self, size: int):
        self.size = size
        self.notes: list[StepNote] = []

    def add(self, note: StepNote) -> bool:
        """Append one step; True when the window slid (its oldest half left)."""
        self.notes.append(note)
        if len(self.notes) <= self.size:
            return False
        keep = max(1, self.size // 2) if self.size else 0
        del self.notes[:len(self.notes) - keep]
        return True


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


class _Room:
    """Characters left in the budget as the parts are placed, most needed first."""

    def __init__(self, budget_chars: int, used: int):
        self.budget_chars = budget_chars
        self.used = used

    def fits(self, text: str) -> bool:
        """Take `text`'s room when it fits whole."""
        if self.used + len(text) <= self.budget_chars:
            self.used += len(text)
            return True
        return False

    def left(self) -> int:
        return self.budget_chars - self.used


def build_parts(*, constitution: str, goals: str, memory: str, action_space: str,
                latest: str | None, recent: list[StepNote], budget_tokens: int,
                chars_per_token: float, accessibility: str | None = None,
                tools: str = "", host_facts: str = "", data_rule: bool = True) -> tuple[list[ContextPart], list[str]]:
    """Return (parts in wire order, names of what was dropped); `recent` is oldest first.

    `tools`: what the runnable tools list (MCP tools, skills), counted like the action space; `host_facts`:
    the machine's (`prompt.host_facts`, empty when off), counted the same way. `data_rule=False` leaves out
    what untrusted data means, for a prompt that can hold none (a vision-check or grounding case: Conway's own
    instruction and the case's target, no tool output, memory or steps)."""
    budget_chars = int(budget_tokens * chars_per_token)
    fixed_share = budget_chars // 3  # identity and goals may use at most a third each
    constitution = cut_text(constitution, fixed_share)[0]
    goals = cut_text(goals, fixed_share)[0]
    tools, host_facts = tools.strip(), host_facts.strip()
    room = _Room(budget_chars, len(constitution) + len(goals) + len(action_space) + len(tools) + len(host_facts)
                 + (len(DATA_RULE) if data_rule else 0))
    dropped: list[str] = []
    latest_text = _latest(latest, room)
    access_text = None
    if accessibility:
        if room.fits(accessibility):
            access_text = accessibility
        else:
            dropped.append(PartName.ACCESSIBILITY)
    kept_steps = _kept_steps(recent, room, dropped)
    memory_text = _memory(memory, room, dropped)
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
    if dropped:
        parts.append(ContextPart(PartName.LEFT_OUT, "Left out to stay inside the context budget: "
                                 + ", ".join(dropped) + "."))
    if latest_text is not None:
        parts.append(ContextPart(PartName.LATEST_RESULT, latest_text))
    return parts, dropped


def _latest(latest: str | None, room: _Room) -> str | None:
    """The latest result: whole when it fits, else its head and tail in what is left (at least 200 characters)."""
    if latest is None:
        return None
    latest_text = latest if room.fits(latest) else cut_text(latest, max(200, room.left()))[0]
    if latest_text is not latest:
        room.used += len(latest_text)
    return latest_text


def _kept_steps(recent: list[StepNote], room: _Room, dropped: list[str]) -> list[str]:
    """The recent steps' lines that fit, newest kept when the budget is short (rendered once: the lines are what
    is counted and what is sent), oldest first."""
    kept: list[str] = []
    for note in reversed(recent):
        line = _render_step(note)
        if room.fits(line + "\n"):
            kept.append(line)
        else:
            dropped.append(f"{len(recent) - len(kept)} older step(s)")
            break
    kept.reverse()
    return kept


def _memory(memory: str, room: _Room, dropped: list[str]) -> str | None:
    """memory.md whole when it fits, else its newest part when there is room for one, else dropped."""
    if not memory.strip():
        return None
    if room.fits(memory):
        return memory
    if room.left() > 400:  # keep the newest part of memory rather than nothing
        text = cut_text(memory, room.left())[0]
        room.used += len(text)
        return text
    dropped.append(PartName.MEMORY)
    return None


def _render_step(note: StepNote) -> str:
    return f"- step {note.step}: {note.action} → {note.outcome}"
