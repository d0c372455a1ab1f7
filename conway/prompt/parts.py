"""Assembling one decision's text inside a token budget.

Order on the wire is built for prompt caches (the policy lays the parts out,
`policies/base.py`): the stable part first (constitution, action space), then
what only grows, oldest first (goals, memory's step log, the recent-steps
window), then what changes every cycle, and last the latest result, right
before the request line and the image (where the model reads it). Every prompt's stable part also says
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

from conway.bounded import cut_text
from conway.prompt.fence import DATA_RULE, Frame
from conway.protocols import ContextPart


@dataclass
class StepNote:
    step: int
    action: str
    outcome: str


class PartName:
    """The names of a decision prompt's parts (`ContextPart.name`): the one place they are spelled.

    The policy lays the parts out by these names (`policies/base.py`), and the files among them are sent
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
    used = (len(constitution) + len(goals) + len(action_space) + len(tools) + len(host_facts)
            + (len(DATA_RULE) if data_rule else 0))
    dropped: list[str] = []

    def fits(text: str) -> bool:
        nonlocal used
        if used + len(text) <= budget_chars:
            used += len(text)
            return True
        return False

    latest_text = None
    if latest is not None:
        latest_text = latest if fits(latest) else cut_text(latest, max(200, budget_chars - used))[0]
        if latest_text is not latest:
            used += len(latest_text)
    access_text = None
    if accessibility:
        if fits(accessibility):
            access_text = accessibility
        else:
            dropped.append(PartName.ACCESSIBILITY)
    kept_steps: list[str] = []  # rendered once: the lines are what is counted and what is sent
    for note in reversed(recent):  # the newest are kept when the budget is short
        line = _render_step(note)
        if fits(line + "\n"):
            kept_steps.append(line)
        else:
            dropped.append(f"{len(recent) - len(kept_steps)} older step(s)")
            break
    kept_steps.reverse()
    memory_text = None
    if memory.strip():
        if fits(memory):
            memory_text = memory
        else:
            room = budget_chars - used
            if room > 400:  # keep the newest part of memory rather than nothing
                memory_text = cut_text(memory, room)[0]
                used += len(memory_text)
            else:
                dropped.append(PartName.MEMORY)

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


def _render_step(note: StepNote) -> str:
    return f"- step {note.step}: {note.action} → {note.outcome}"
