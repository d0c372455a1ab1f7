"""Facts about this machine, gathered cheaply: for `doctor` and reports (`host_facts`) and for the prompt's
host-facts part (`conway/prompt/host_facts.py`), one gatherer for both."""

from __future__ import annotations

import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["host_facts", "os_name", "programs_on_path"]


def host_facts(path: Path | None = None) -> dict[str, Any]:
    """Python, platform, CPUs, memory and the free disk of `path`'s filesystem (the current folder's)."""
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


def os_name(os_release: Path = Path("/etc/os-release")) -> str:
    """The operating system as a person names it: the distribution's PRETTY_NAME where there is one, and the
    kernel (`Ubuntu 22.04.4 LTS, Linux 5.15`)."""
    kernel = f"{platform.system()} {'.'.join(platform.release().split('.')[:2])}".strip()
    try:
        lines = os_release.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return kernel or "unknown"
    pretty = next((ln.split("=", 1)[1].strip().strip('"') for ln in lines if ln.startswith("PRETTY_NAME=")), "")
    return f"{pretty}, {kernel}" if pretty else kernel


def programs_on_path(names: list[str]) -> list[str]:
    """Those of `names` that are executables on PATH (found, not started: cheap enough to ask every refresh)."""
    return [n for n in names if shutil.which(n)]
