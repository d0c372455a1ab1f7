"""What a tool's module declares: its `ROW`, how the toolbox makes the tool from the run's setup.

`conway.actions.ACTION_GROUPS` names, for each action group, the module under `conway/tools/` that runs it;
`conway.tools.registry` reads that module's `ROW`. So a new tool is its module (its `Tool` class and `ROW`) plus its
action classes and group entry in `conway/actions.py`. This module imports no tool, so every tool may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from conway.actions import ACTION_GROUPS, _Action
from conway.config import SkillsConfig, ToolsConfig
from conway.geometry import ScreenGeometry
from conway.protocols import Tool, ToolResult
from conway.sandbox.environment import Environment


@dataclass(frozen=True)
class Setup:
    """What the tool factories are built from (`build_toolbox`'s arguments)."""

    cfg: ToolsConfig
    workdir: Path
    gui: bool
    home_root: Path | None
    skills: SkillsConfig | None
    api_key_env: str | None
    shell_env: dict[str, str]
    """Set in the shell's environment on top of the filtered one (a task's own CONWAY_HOME)."""
    environment: Environment
    """Where the shell and files tools act (`tools.environment`, or one handed in: a task's desktop)."""
    display: str | None = None
    """The X display the GUI tool acts on (None: `$DISPLAY`); a task's disposable desktop has its own."""


@dataclass(frozen=True)
class ToolRow:
    """One tool: the action group it runs, how it is made, and what `check` says when it cannot run."""

    group: str
    """The action group (`actions.ACTION_GROUPS`) whose every type this tool runs."""
    make: Callable[[Setup], Tool | None]
    """The tool for this run, or None when nothing is configured for it (no MCP server, no home)."""
    refused: tuple[str, str] | None = None
    """`check` refuses its actions before any intent when it cannot run: (when its tool is down, when none is
    configured). None: the action reaches `run`, which answers ok=False."""

    @property
    def enabled_as(self) -> str | None:
        """Its name in `tools.enabled` (its module's name; config's Literal is `actions.TOOL_NAMES`); None: its own
        configuration turns it on."""
        runner = ACTION_GROUPS[self.group]
        return runner.module if runner is not None and runner.by_name else None


class Unavailable(Tool):
    """Stands in for a tool that cannot run here: it reports why, and every action it is sent fails with that."""

    def __init__(self, name: str, types: frozenset[str], reason: str):
        self.name, self.action_types, self._reason = name, types, reason

    def availability(self) -> tuple[bool, str]:
        return False, self._reason

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        return ToolResult(ok=False, error=self._reason)
