"""The toolbox: which tool runs which action type (the table `tool_rows`, read from each tool's module), and what can run
here (the loop's `Actuator`)."""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import Any

from conway.actions import ACTION_GROUPS, ACTION_TYPES, GUI_TYPES, ActionProblem, _Action
from conway.config import SkillsConfig, ToolsConfig
from conway.geometry import ScreenGeometry
from conway.protocols import Tool, ToolResult
from conway.sandbox.environment import BubblewrapEnvironment, Environment, LocalEnvironment
from conway.tools.row import Setup, ToolRow

NO_DESKTOP = "no desktop tools available"


class Toolbox:
    """Routes each action type to the tool that runs it here; implements `conway.protocols.Actuator`."""

    def __init__(self, tools: list[Tool]):
        self.tools = tools
        self._by_type: dict[str, Tool] = {}
        self._unavailable: dict[str, str] = {}
        self.report: dict[str, tuple[bool, str]] = {}
        for tool in tools:
            ok, reason = tool.availability()
            self.report[tool.name] = (ok, reason)
            for t in tool.action_types:
                if ok:
                    self._by_type[t] = tool
                else:
                    self._unavailable.setdefault(t, reason)

    def available_types(self) -> list[str]:
        """Action types the model may propose: runnable tools plus the control actions."""
        return [t for t, cls in ACTION_TYPES.items() if t in self._by_type or cls.group == "control"]

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        """Dispatch to the action's tool; `screen` (the observation's geometry) goes with it."""
        tool = self._by_type.get(action.type)  # type: ignore[attr-defined]
        if tool is None:
            kind = action.type  # type: ignore[attr-defined]
            reason = self._unavailable.get(kind)
            if kind in GUI_TYPES:
                return ToolResult(ok=False, error=f"{NO_DESKTOP}: {reason}" if reason else NO_DESKTOP)
            return ToolResult(ok=False, error=reason or f"no tool for {kind} is enabled here")
        return tool.run(action, screen)

    def cancellable(self, action: _Action) -> bool:
        """Whether a stop can cut `action` short (its tool is `cancellable`: the shell, MCP); unknown types cannot."""
        tool = self._by_type.get(action.type)  # type: ignore[attr-defined]
        return tool is not None and tool.cancellable

    def check(self, action: _Action) -> "_Action | ActionProblem":
        """Pre-dispatch validation a tool owns (an MCP tool's argument schema); nothing is sent."""
        tool = self._by_type.get(action.type)  # type: ignore[attr-defined]
        if tool is None and action.group in (refused := _refused()):  # no intent for what cannot run at all
            reason = self._unavailable.get(action.type)  # type: ignore[attr-defined]
            down, absent = refused[action.group]
            return ActionProblem(message=f"{down}: {reason}" if reason else absent, raw=action.model_dump())
        return tool.check(action) if tool is not None else action

    def describe(self) -> str:
        """Prompt text the runnable tools add to the action space (MCP tools, skill names); bounded by each."""
        texts = [t.describe() for t in self.tools if self.report.get(t.name, (False, ""))[0]]
        return "".join(f"\n\n{t}" for t in texts if t)

    def findings(self) -> list[dict[str, Any]]:
        """What the tools found at start (MCP servers and their tools, skills), for the journal."""
        return [f for t in self.tools for f in t.findings()]

    def close(self) -> None:
        for tool in self.tools:
            tool.close()


@functools.cache
def tool_rows() -> tuple[ToolRow, ...]:
    """The toolbox's one table: each action group's tool row, from the module `ACTION_GROUPS` names for it, in
    that table's order (the prompt's tool texts and the start-up findings follow it). A new tool is its module
    (its `Tool` and `ROW`, `conway.tools.row`) plus its action classes and group in `conway/actions.py`. Read on
    first use, so a command that builds no toolbox (`conway stop`) never imports the tools."""
    rows = []
    for group, runner in ACTION_GROUPS.items():
        if runner is None:
            continue  # control: the loop runs it itself
        row: ToolRow = importlib.import_module(f"conway.tools.{runner.module}").ROW
        if row.group != group:
            raise TypeError(f"conway/tools/{runner.module}.py's ROW runs {row.group!r}; ACTION_GROUPS gives it {group!r}")
        rows.append(row)
    return tuple(rows)




def _refused() -> dict[str, tuple[str, str]]:
    return {row.group: row.refused for row in tool_rows() if row.refused}


def build_toolbox(cfg: ToolsConfig, workdir: Path, gui: bool = True, *, home_root: Path | None = None,
                  skills: SkillsConfig | None = None, api_key_env: str | None = None,
                  shell_env: dict[str, str] | None = None, environment: Environment | None = None,
                  display: str | None = None) -> Toolbox:
    """Tools from config, one per row of `tool_rows()` that is turned on. `gui=False` leaves the desktop alone (mock
    and acceptance runs).

    With `home_root`, Agent Skills are offered and MCP servers keep logs and images in the home.
    Configured MCP servers are started here (each within its timeout) and stopped by `close`.
    `api_key_env` names the variable holding the model's API key: the shell never sees it.
    `shell_env`: variables the shell's commands get on top of that environment (a task's CONWAY_HOME).
    `environment`: where the shell and files tools act (None: `tools.environment`; the shell tool closes it).
    `display`: the X display of the GUI tool (None: `$DISPLAY`).
    """
    if environment is None:
        environment = (BubblewrapEnvironment.for_workdir(workdir, network=cfg.sandbox_network)
                       if cfg.environment == "sandbox" else LocalEnvironment())
    setup = Setup(cfg, workdir, gui, home_root, skills, api_key_env, shell_env or {}, environment, display)
    made = (row.make(setup) for row in tool_rows() if row.enabled_as is None or row.enabled_as in cfg.enabled)
    return Toolbox([tool for tool in made if tool is not None])
