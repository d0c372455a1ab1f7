"""`conway doctor`: what this machine is and what actually runs here (tried, not guessed)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from .config import ConwayConfig

EXTRAS = {
    "gui": ["mss", "pyautogui"],
    "llama": ["llama_cpp"],
    "train": ["torch", "transformers", "peft", "datasets"],
}


def host_facts(path: Path | None = None) -> dict[str, Any]:
    import psutil

    vm = psutil.virtual_memory()
    disk = shutil.disk_usage(path or Path.cwd())
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "memory_total_gb": round(vm.total / 2**30, 1),
        "memory_available_gb": round(vm.available / 2**30, 1),
        "disk_free_gb": round(disk.free / 2**30, 1),
    }


def _import_ok(module: str) -> tuple[bool, str]:
    """Installed or not, with its version. Found, not imported: pyautogui cannot even be
    imported without a display, and that is the display's problem, reported below."""
    import importlib.metadata as md
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return False, "not installed"
    dists = md.packages_distributions().get(module, [])
    for dist in dists:
        try:
            return True, md.version(dist)
        except md.PackageNotFoundError:
            continue
    return True, "installed"


def display_report() -> tuple[bool, str]:
    if sys.platform.startswith("linux"):
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            return False, "no DISPLAY set"
        if os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("DISPLAY"):
            return False, "Wayland without XWayland DISPLAY: native Wayland input is not implemented"
    try:
        from .platform import display_problem
    except ImportError:  # the gui extra is missing; the mss probe below says so
        display_problem = None
    if display_problem is not None:
        problem = display_problem()
        if problem:
            return False, problem
    try:
        proc = subprocess.run([sys.executable, "-c", "import mss; m = mss.MSS(); print(m.monitors[1])"],
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return False, "screenshot probe timed out"
    if proc.returncode == 0:
        return True, f"display reachable, primary monitor {proc.stdout.strip()}"
    return False, (proc.stderr.strip().splitlines() or ["unreachable"])[-1][:160]


def doctor(config: ConwayConfig, workdir: Path, home_root: Path | None = None) -> dict[str, Any]:
    from .skills import find_skills
    from .tools.registry import build_toolbox

    extras = {}
    for extra, modules in EXTRAS.items():
        extras[extra] = {m: _import_ok(m) for m in modules}
    shown, why = display_report()
    logs_in = home_root if home_root is not None and home_root.is_dir() else None  # never creates a home
    toolbox = build_toolbox(config.tools, workdir, gui=shown, home_root=logs_in)  # starts MCP servers: tried
    tools = {name: {"runs": ok, "detail": reason} for name, (ok, reason) in toolbox.report.items()}
    mcp = next((t.servers() for t in toolbox.tools if t.name == "mcp"), [])
    skills = find_skills(home_root, config.skills).record() if home_root is not None else None
    if not shown and "gui" in config.tools.enabled:
        tools["gui"] = {"runs": False, "detail": f"GUI tools unavailable: {why}"}
    toolbox.close()
    try:
        from .observe.accessibility import accessibility_problem
        access = accessibility_problem()
    except ImportError as exc:
        access = str(exc)
    return {"accessibility": {"ready": access is None, "detail": access or "AT-SPI available (off by default: "
                              "observe.accessibility=true)"},
            "host": host_facts(workdir), "extras": {e: {m: {"ok": ok, "detail": d} for m, (ok, d) in mods.items()}
                                                 for e, mods in extras.items()},
            "display": {"reachable": shown, "detail": why}, "tools": tools, "mcp_servers": mcp, "skills": skills}


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
