"""What one decision sees: the files of the home, the action space of the tools at hand, the latest result.

`ContextBuilder.build` reads constitution.md and memory.md, describes the action space
(cached while the tools stay the same, so the prompt's prefix does too) and lets
`context.build_parts` lay it all out inside the token budget. memory.md is reread only
when `memory_changed` says so or someone else edited it: between, the prompt only grows.
"""

from __future__ import annotations

from pathlib import Path

from .actions import describe_action_space
from .config import ConwayConfig
from .context import StepNote, build_parts
from .home import Home
from .memory import Memory
from .protocols import DecisionContext, Observation
from .tools.registry import Toolbox


def read_text(path: Path, default: str) -> str:
    """A home file as the model sees it: missing → `default`; unreadable → a line saying so."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return default
    except OSError as exc:  # replaced by a folder while running, unreadable …: say so, carry on
        return f"(cannot read {path.name}: {exc.strerror})"


class ContextBuilder:
    def __init__(self, home: Home, config: ConwayConfig, toolbox: Toolbox, memory: Memory):
        self.home = home
        self.cfg = config
        self.toolbox = toolbox
        self.memory = memory
        self.memory_view: str | None = None
        """memory.md as shown to the model: refreshed when the recent-steps window slides (the steps since are
        in the window), when memory is compacted or edited by someone else, so the prompt only grows between."""
        self._action_spaces: dict[tuple[str, ...], str] = {}

    def memory_changed(self) -> None:
        self.memory_view = None

    def build(self, goals: str, obs: Observation, step: int, latest: str | None,
              recent: list[StepNote]) -> DecisionContext:
        types = self.toolbox.available_types()
        key = tuple(types)
        if key not in self._action_spaces:  # the same text every cycle while the tools stay the same
            self._action_spaces[key] = describe_action_space(types)
        action_space = self._action_spaces[key] + self.toolbox.describe()  # + MCP tools, skill names
        parts, dropped = build_parts(
            constitution=read_text(self.home.constitution, "(no constitution.md)"),
            goals=goals, memory=self._memory_text(), action_space=action_space,
            latest=latest, recent=recent, budget_tokens=self.cfg.context.budget_tokens,
            chars_per_token=self.cfg.context.chars_per_token, accessibility=obs.accessibility)
        return DecisionContext(parts=parts, observation=obs, step=step, action_types=types, dropped=dropped)

    def _memory_text(self) -> str:
        if self.memory_view is None or self.memory.edited_elsewhere():
            self.memory_view = self.memory.read()
        return self.memory_view
