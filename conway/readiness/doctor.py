"""`conway doctor`: what this machine is and what actually runs here (tried, not guessed).

The checks live in `conway/readiness/` (shared with preflight and probe); this
module selects the machine's checks and renders them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.config import ConwayConfig
from conway.readiness.checks.extensions import skills_check, toolbox_checks
from conway.readiness.checks.host import accessibility_check, display_check, extras_checks, host_facts


def doctor(config: ConwayConfig, workdir: Path, home_root: Path | None = None) -> dict[str, Any]:
    extras = extras_checks()
    display = display_check()
    tools, servers = toolbox_checks(config, workdir, display, home_root)
    access = accessibility_check()
    return {"accessibility": {"ready": access.ok, "detail": access.detail},
            "host": host_facts(workdir),
            "extras": {e: {c.check: {"ok": c.ok, "detail": c.detail} for c in checks} for e, checks in extras.items()},
            "display": {"reachable": display.ok, "detail": display.detail},
            "tools": {c.check: {"runs": c.ok, "detail": c.detail} for c in tools},
            "mcp_servers": [c.data for c in servers],
            "skills": skills_check(config, home_root).data if home_root is not None else None}


def render_doctor(report: dict[str, Any]) -> str:
    h = report["host"]
    lines = [f"Python {h['python']} on {h['platform']} ({h['machine']}), {h['cpus']} CPUs, "
             f"{h['memory_available_gb']}/{h['memory_total_gb']} GiB memory free, {h['disk_free_gb']} GiB disk free",
             "", "Optional extras:"]
    for extra, mods in report["extras"].items():
        state = "ok" if all(m["ok"] for m in mods.values()) else "missing"
        detail = ", ".join(f"{name} {m['detail'] if m['ok'] else '(' + m['detail'] + ')'}" for name, m in mods.items())
        lines.append(f"  {extra:6} {state:8} {detail}")
    d = report["display"]
    lines += ["", f"Display: {'reachable' if d['reachable'] else 'not reachable'} — {d['detail']}", "", "Tools (tried):"]
    for name, t in report["tools"].items():
        lines.append(f"  {name:8} {'runs' if t['runs'] else 'unavailable':12} {t['detail']}")
    a = report["accessibility"]
    lines += ["", f"Accessibility snapshots: {'ready' if a['ready'] else 'unavailable'} — {a['detail']}"]
    lines += ["", "MCP servers (tools.mcp_servers; started and stopped again):" if report["mcp_servers"]
              else "MCP servers: none configured (tools.mcp_servers)"]
    for srv in report["mcp_servers"]:
        lines.append(f"  {srv['server']:12} {'runs' if srv['ok'] else 'unavailable':12} {srv['transport']:6} {srv['detail']}")
        for t in srv["tools"]:
            mark = "unusable: " + t["problem"] if t.get("problem") else ("read-only" if t["read_only"] else "side effect")
            lines.append(f"    {t['name']:24} {mark}")
    skills = report.get("skills")
    if skills is not None:
        names = ", ".join(s["name"] for s in skills["skills"]) or "none"
        lines += ["", f"Skills: {names}"] + [f"  left out: {p}" for p in skills["problems"]]
    return "\n".join(lines)
