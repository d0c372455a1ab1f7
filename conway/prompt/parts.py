"""A decision prompt's parts: their names, how each is framed, and the recent-steps window.

The parts are laid out inside the text budget by `budget.build_parts` (which part keeps what when the budget is
short, and every later cut to the model's window: `budget.py`), and ordered on the wire for prompt caches by
`layout.py`: the stable part first (constitution, action space, tool listings, what untrusted data is, host
facts), then what only grows, oldest first (goals, memory's step log, the recent-steps window), then what changes
every cycle, and last the latest result, right before the request line and the image (where the model reads it).

The recent-steps window (`RecentSteps`) is only appended to until it holds
`size` steps; then it slides by half at once, so between slides the prompt
text before its newest line stays byte-identical and a KV cache reuses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from conway.prompt.fence import Frame


@dataclass
class StepNote:
    step: int
    action: str
    outcome: str

    def line(self) -> str:
        """The step as the recent-steps part says it (what the budget counts and what is sent)."""
        return f"- step {self.step}: {self.action} → {self.outcome}"


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
