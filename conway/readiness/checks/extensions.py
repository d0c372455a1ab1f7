"""The tools, tried: the toolbox a run would build, MCP servers (started, listed, stopped) and Agent Skills."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.config import ConwayConfig
from conway.readiness.checks import Check
from conway.store.home import Home


def skills_check(config: ConwayConfig, home_root: Path) -> Check:
    """The skills a run would offer; malformed ones are left out (a warning, never fatal)."""
    from conway.store.skills import find_skills
    found = find_skills(home_root, config.skills)
    names = ", ".join(s.name for s in found.skills) or "none"
    if found.problems:  # left out, never fatal: the run goes on with the others
        return Check("skills", "warn", f"{len(found.problems)} malformed skill(s) left out: "
                     + "; ".join(p.line() for p in found.problems) + f"; offered: {names}", found.record())
    return Check("skills", "ok", f"{len(found.skills)} skill(s): {names}", found.record())


def server_checks(servers: list[dict[str, Any]]) -> list[Check]:
    """One check per configured MCP server, from what the MCP tool saw when it started them (`McpTool.servers`)."""
    out = []
    for srv in servers:
        usable = [t["name"] for t in srv["tools"] if not t.get("problem")]
        if srv["ok"]:
            detail = f"{srv['transport']}: {len(usable)} tool(s): {', '.join(usable)}"
            if srv["left_out"]:
                detail += "; left out: " + "; ".join(srv["left_out"])
            out.append(Check(f"mcp: {srv['server']}", "warn" if srv["left_out"] else "ok", detail, srv))
        else:  # a run continues without it, so not fatal; but the owner configured it for a reason
            out.append(Check(f"mcp: {srv['server']}", "warn", f"not available: {srv['detail']}", srv))
    return out


def mcp_checks(config: ConwayConfig, home: Home) -> tuple[list[Check], str]:
    """Start the configured MCP servers, list their tools, stop them again; (checks, the prompt's MCP listing)."""
    if not config.tools.mcp_servers:
        return [Check("mcp servers", "ok", "none configured (tools.mcp_servers)")], ""
    from conway.tools.mcp import McpTool
    workdir = Path(config.tools.workdir).expanduser() if config.tools.workdir else home.scratch
    tool = McpTool(config.tools, workdir if workdir.is_dir() else Path.cwd(), home.root if home.root.is_dir() else None)
    try:
        return server_checks(tool.servers()), tool.describe()
    finally:
        tool.close()


def prompt_parts(config: ConwayConfig, home: Home, mcp_listing: str) -> dict[str, str]:
    """The texts every decision's prompt carries besides the instructions (for the context check)."""
    import time

    from conway.prompt.fence import DATA_RULE
    from conway.prompt.host_facts import HostFacts
    from conway.store.skills import find_skills, listing

    def read(path: Path) -> str:
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    skills = find_skills(home.root, config.skills).skills
    return {"constitution.md": read(home.constitution), "goals.md": read(home.goals),
            "MCP tool listing": mcp_listing, "skills list": listing(skills, config.skills.listing_max_chars),
            "untrusted-data rule": DATA_RULE,
            "host facts": HostFacts(config.agent, home.root if home.root.is_dir() else Path.cwd(), time.monotonic)
            .text(None)}


def toolbox_checks(config: ConwayConfig, workdir: Path, display: Check,
                   home_root: Path | None = None) -> tuple[list[Check], list[Check]]:
    """Build the toolbox a run would (MCP servers started: tried, not guessed), then close it.

    Returns (one check per tool, one per MCP server). GUI tools need the
    display: without one they are reported unavailable with the display's reason.
    """
    from conway.tools.registry import build_toolbox

    logs_in = home_root if home_root is not None and home_root.is_dir() else None  # never creates a home
    toolbox = build_toolbox(config.tools, workdir, gui=display.ok, home_root=logs_in)
    try:
        tools = {name: Check(name, "ok" if ok else "fail", reason) for name, (ok, reason) in toolbox.report.items()}
        servers = server_checks(next((t.servers() for t in toolbox.tools if t.name == "mcp"), []))
    finally:
        toolbox.close()
    if not display.ok and "gui" in config.tools.enabled:
        tools["gui"] = Check("gui", "fail", f"GUI tools unavailable: {display.detail}")
    return list(tools.values()), servers
