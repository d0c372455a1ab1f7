"""The toolbox: which tool runs which action type, and what can run here (the loop's `Actuator`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from conway.actions import ACTION_TYPES, GUI_TYPES, ActionProblem, _Action
from conway.config import SkillsConfig, ToolsConfig
from conway.geometry import ScreenGeometry
from conway.protocols import Tool, ToolResult
from conway.redact import tool_environment

NO_DESKTOP = "no desktop tools available"
_REFUSED_UNAVAILABLE = {  # family: (message when its tool is down, message when none is configured)
    "mcp": ("no MCP tool is available", "no MCP server is configured (tools.mcp_servers)"),
    "skill": ("no Agent Skills are available", "no Agent Skills are installed (see `conway skills`)")}


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
        return [t for t in ACTION_TYPES if t in self._by_type or t in ("wait", "finish")]

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
        """Whether the tool that runs `action` ends it early on a stop (the shell); unknown types are not."""
        tool = self._by_type.get(action.type)  # type: ignore[attr-defined]
        return tool is not None and tool.cancellable

    def check(self, action: _Action) -> "_Action | ActionProblem":
        """Pre-dispatch validation a tool owns (an MCP tool's argument schema); nothing is sent."""
        tool = self._by_type.get(action.type)  # type: ignore[attr-defined]
        if tool is None and action.family in _REFUSED_UNAVAILABLE:  # no intent for what cannot run at all
            reason = self._unavailable.get(action.type)  # type: ignore[attr-defined]
            down, absent = _REFUSED_UNAVAILABLE[action.family]
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


def build_toolbox(cfg: ToolsConfig, workdir: Path, gui: bool = True, *, home_root: Path | None = None,
                  skills: SkillsConfig | None = None, api_key_env: str | None = None,
                  shell_env: dict[str, str] | None = None) -> Toolbox:
    """Tools from config. `gui=False` leaves the desktop alone (mock and acceptance runs).

    With `home_root`, Agent Skills are offered and MCP servers keep logs and images in the home.
    Configured MCP servers are started here (each within its timeout) and stopped by `close`.
    `api_key_env` names the variable holding the model's API key: the shell never sees it.
    `shell_env`: variables the shell's commands get on top of that environment (a task's CONWAY_HOME).
    """
    tools: list[Tool] = []
    if home_root is not None and skills is not None:
        from conway.tools.skills import SkillsTool
        tools.append(SkillsTool(home_root, skills))
    if cfg.mcp_servers:
        from conway.tools.mcp import McpTool
        tools.append(McpTool(cfg, workdir, home_root))
    if "files" in cfg.enabled:
        from conway.tools.files import FileTools
        tools.append(FileTools(workdir, read_max_bytes=cfg.read_max_bytes, list_max_entries=cfg.list_max_entries))
    if "shell" in cfg.enabled:
        from conway.tools.shell import ShellTool
        def env() -> dict[str, str]:  # read at each command: the environment may change during a run
            return {**tool_environment(os.environ, drop=[api_key_env], drop_patterns=cfg.shell_env_drop,
                                       keep=cfg.shell_env_keep)[0], **(shell_env or {})}
        tools.append(ShellTool(workdir, timeout_s=cfg.shell_timeout_s, max_output_bytes=cfg.shell_max_output_bytes,
                               env=env))
    if "browser" in cfg.enabled:
        from conway.tools.browser import BrowserTool
        tools.append(BrowserTool())
    if "gui" in cfg.enabled and gui:
        try:
            from conway.tools.gui import GuiTool
        except ImportError as exc:  # the desktop extra is optional
            tools.append(_Unavailable("gui", GUI_TYPES, f"GUI tools unavailable: {exc}"))
        else:
            tools.append(GuiTool(pause_s=cfg.gui_pause_s, failsafe=cfg.gui_failsafe))
    elif "gui" in cfg.enabled:
        tools.append(_Unavailable("gui", GUI_TYPES, "the mock policy runs without the desktop"))
    return Toolbox(tools)


class _Unavailable(Tool):
    def __init__(self, name: str, types: frozenset[str], reason: str):
        self.name, self.action_types, self._reason = name, types, reason

    def availability(self) -> tuple[bool, str]:
        return False, self._reason

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        return ToolResult(ok=False, error=self._reason)
