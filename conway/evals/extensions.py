"""Preflight checks of the ecosystem parts: Agent Skills and MCP servers (started, listed, stopped)."""

from __future__ import annotations

from pathlib import Path

from ..config import ConwayConfig
from ..home import Home
from .readiness import Check


def skills_check(config: ConwayConfig, home: Home) -> Check:
    from ..skills import find_skills
    found = find_skills(home.root, config.skills)
    names = ", ".join(s.name for s in found.skills) or "none"
    if found.problems:  # left out, never fatal: the run goes on with the others
        return Check("skills", "warn", f"{len(found.problems)} malformed skill(s) left out: "
                     + "; ".join(p.line() for p in found.problems) + f"; offered: {names}", found.record())
    return Check("skills", "ok", f"{len(found.skills)} skill(s): {names}", found.record())


def mcp_checks(config: ConwayConfig, home: Home) -> list[Check]:
    if not config.tools.mcp_servers:
        return [Check("mcp servers", "ok", "none configured (tools.mcp_servers)")]
    from ..tools.mcp import McpTool
    workdir = Path(config.tools.workdir).expanduser() if config.tools.workdir else home.scratch
    tool = McpTool(config.tools, workdir if workdir.is_dir() else Path.cwd(), home.root if home.root.is_dir() else None)
    try:
        out = []
        for srv in tool.servers():
            usable = [t["name"] for t in srv["tools"] if not t.get("problem")]
            if srv["ok"]:
                detail = f"{srv['transport']}: {len(usable)} tool(s): {', '.join(usable)}"
                if srv["left_out"]:
                    detail += "; left out: " + "; ".join(srv["left_out"])
                out.append(Check(f"mcp: {srv['server']}", "warn" if srv["left_out"] else "ok", detail, srv))
            else:  # a run continues without it, so not fatal; but the owner configured it for a reason
                out.append(Check(f"mcp: {srv['server']}", "warn", f"not available: {srv['detail']}", srv))
        return out
    finally:
        tool.close()
