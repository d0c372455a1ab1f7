"""The toolbox: which tool runs which action type, and what can run here."""

from __future__ import annotations

import os
from pathlib import Path

from ..actions import ACTION_TYPES, GUI_TYPES, _Action
from ..config import ToolsConfig
from ..geometry import ScreenGeometry
from ..protocols import Observation, Tool, ToolResult
from ..redact import tool_environment

NO_DESKTOP = "no desktop tools available"


class Toolbox:
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

    def run(self, action: _Action) -> ToolResult:
        tool = self._by_type.get(action.type)  # type: ignore[attr-defined]
        if tool is None:
            kind = action.type  # type: ignore[attr-defined]
            reason = self._unavailable.get(kind)
            if kind in GUI_TYPES:
                return ToolResult(ok=False, error=f"{NO_DESKTOP}: {reason}" if reason else NO_DESKTOP)
            return ToolResult(ok=False, error=reason or f"no tool for {kind} is enabled here")
        return tool.run(action)

    def note_observation(self, obs: Observation) -> None:
        """Tell screen-bound tools where the latest screenshot came from (HiDPI scale, origin)."""
        if obs.source != "screen":
            return
        cw, ch = obs.captured_size
        lw, lh = obs.logical_size or obs.captured_size
        screen = ScreenGeometry(origin_x=int(obs.origin[0]), origin_y=int(obs.origin[1]),
                                captured_w=int(cw), captured_h=int(ch), logical_w=int(lw), logical_h=int(lh))
        for tool in self.tools:
            setter = getattr(tool, "set_screen", None)
            if setter:
                setter(screen)

    def close(self) -> None:
        for tool in self.tools:
            close = getattr(tool, "close", None)
            if close:
                close()


def build_toolbox(cfg: ToolsConfig, workdir: Path, gui: bool = True, api_key_env: str | None = None) -> Toolbox:
    """Tools from config. `gui=False` leaves the desktop alone (mock and acceptance runs).

    `api_key_env` names the variable holding the model's API key: the shell never sees it.
    """
    tools: list[Tool] = []
    if "files" in cfg.enabled:
        from .files import FileTools
        tools.append(FileTools(workdir, read_max_bytes=cfg.read_max_bytes, list_max_entries=cfg.list_max_entries))
    if "shell" in cfg.enabled:
        from .shell import ShellTool
        env, _ = tool_environment(os.environ, drop=[api_key_env], drop_patterns=cfg.shell_env_drop,
                                  keep=cfg.shell_env_keep)
        tools.append(ShellTool(workdir, timeout_s=cfg.shell_timeout_s, max_output_bytes=cfg.shell_max_output_bytes,
                               env=env))
    if "browser" in cfg.enabled:
        from .browser import BrowserTool
        tools.append(BrowserTool())
    if "gui" in cfg.enabled and gui:
        try:
            from .gui import GuiTool
        except ImportError as exc:  # the desktop extra is optional
            tools.append(_Unavailable("gui", GUI_TYPES, f"GUI tools unavailable: {exc}"))
        else:
            tools.append(GuiTool(pause_s=cfg.gui_pause_s, failsafe=cfg.gui_failsafe))
    elif "gui" in cfg.enabled:
        tools.append(_Unavailable("gui", GUI_TYPES, "the mock policy runs without the desktop"))
    return Toolbox(tools)


class _Unavailable:
    def __init__(self, name: str, types: frozenset[str], reason: str):
        self.name, self.action_types, self._reason = name, types, reason

    def availability(self) -> tuple[bool, str]:
        return False, self._reason

    def run(self, action: _Action) -> ToolResult:
        return ToolResult(ok=False, error=self._reason)
