"""The toolbox: which tool runs which action type (the TOOLS table), and what can run here (the loop's `Actuator`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from conway.actions import ACTION_TYPES, GUI_TYPES, ActionProblem, _Action
from conway.config import SkillsConfig, ToolsConfig
from conway.geometry import ScreenGeometry
from conway.protocols import Tool, ToolResult
from conway.redact import tool_environment
from conway.sandbox.environment import BubblewrapEnvironment, Environment, LocalEnvironment

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
        if tool is None and action.group in _REFUSED:  # no intent for what cannot run at all
            reason = self._unavailable.get(action.type)  # type: ignore[attr-defined]
            down, absent = _REFUSED[action.group]
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
    """One tool: the action group it runs, how it is turned on, how it is made."""

    group: str
    """The action group (`actions.ACTION_GROUPS`) whose every type this tool runs."""
    enabled_as: str | None
    """Its name in `tools.enabled` (config's Literal lists the same names); None: its own config turns it on."""
    make: Callable[[Setup], Tool | None]
    """The tool for this run, or None when nothing is configured for it (no MCP server, no home)."""
    refused: tuple[str, str] | None = None
    """`check` refuses its actions before any intent when it cannot run: (when its tool is down, when none is
    configured). None: the action reaches `run`, which answers ok=False."""


def _skills(s: Setup) -> Tool | None:
    if s.home_root is None or s.skills is None:
        return None
    from conway.tools.skills import SkillsTool
    return SkillsTool(s.home_root, s.skills)


def _mcp(s: Setup) -> Tool | None:
    if not s.cfg.mcp_servers:
        return None
    from conway.tools.mcp import McpTool
    return McpTool(s.cfg, s.workdir, s.home_root)


def _files(s: Setup) -> Tool:
    from conway.tools.files import FileTools
    return FileTools(s.workdir, read_max_bytes=s.cfg.read_max_bytes, list_max_entries=s.cfg.list_max_entries,
                     environment=s.environment)


def _shell(s: Setup) -> Tool:
    from conway.tools.shell import ShellTool
    cfg = s.cfg

    def env() -> dict[str, str]:  # read at each command: the environment may change during a run
        return {**tool_environment(os.environ, drop=[s.api_key_env], drop_patterns=cfg.shell_env_drop,
                                   keep=cfg.shell_env_keep)[0], **s.shell_env}
    return ShellTool(s.workdir, timeout_s=cfg.shell_timeout_s, max_output_bytes=cfg.shell_max_output_bytes, env=env,
                     environment=s.environment)


def _browser(s: Setup) -> Tool:
    from conway.tools.browser import BrowserTool
    return BrowserTool()


def _gui(s: Setup) -> Tool:
    if not s.gui:
        return _Unavailable("gui", GUI_TYPES, "the mock policy runs without the desktop")
    try:
        from conway.tools.gui import GuiTool
    except ImportError as exc:  # the desktop extra is optional
        return _Unavailable("gui", GUI_TYPES, f"GUI tools unavailable: {exc}")
    return GuiTool(pause_s=s.cfg.gui_pause_s, failsafe=s.cfg.gui_failsafe, display=s.display)


TOOLS: tuple[ToolRow, ...] = (  # in this order: the prompt's tool texts and the start-up findings follow it
    ToolRow("skill", None, _skills, refused=("no Agent Skills are available",
                                             "no Agent Skills are installed (see `conway skills`)")),
    ToolRow("mcp", None, _mcp, refused=("no MCP tool is available", "no MCP server is configured (tools.mcp_servers)")),
    ToolRow("file", "files", _files),
    ToolRow("shell", "shell", _shell),
    ToolRow("browser", "browser", _browser),
    ToolRow("gui", "gui", _gui),
)
"""The toolbox's one table: a new tool is its module plus a row here (and an action group in `actions.py`)."""
_REFUSED = {row.group: row.refused for row in TOOLS if row.refused}


def build_toolbox(cfg: ToolsConfig, workdir: Path, gui: bool = True, *, home_root: Path | None = None,
                  skills: SkillsConfig | None = None, api_key_env: str | None = None,
                  shell_env: dict[str, str] | None = None, environment: Environment | None = None,
                  display: str | None = None) -> Toolbox:
    """Tools from config, one per row of TOOLS that is turned on. `gui=False` leaves the desktop alone (mock
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
    made = (row.make(setup) for row in TOOLS if row.enabled_as is None or row.enabled_as in cfg.enabled)
    return Toolbox([tool for tool in made if tool is not None])


class _Unavailable(Tool):
    def __init__(self, name: str, types: frozenset[str], reason: str):
        self.name, self.action_types, self._reason = name, types, reason

    def availability(self) -> tuple[bool, str]:
        return False, self._reason

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        return ToolResult(ok=False, error=self._reason)
