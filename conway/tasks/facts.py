"""The environment a task suite ran in, as a report records it: the applications (and their versions), the display.

Versions come from the package manager that installed the program (Debian's
`dpkg-query`), else the program's own `--version` line: tried, never guessed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Iterable

VERSION_TIMEOUT_S = 5.0


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                              env={**os.environ, "LC_ALL": "C"}, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def app_version(executable: str) -> dict[str, Any]:
    """{"name", "path", "package", "version"} of one program; missing ones say so (`path` None)."""
    path = shutil.which(executable)
    out: dict[str, Any] = {"name": executable, "path": path, "package": None, "version": None}
    if path is None:
        return out
    real = os.path.realpath(path)
    if shutil.which("dpkg-query"):
        for candidate in dict.fromkeys((real, path)):
            owner = _run(["dpkg-query", "-S", candidate])
            if owner:
                package = owner.splitlines()[0].split(":", 1)[0].strip()
                version = _run(["dpkg-query", "-W", "-f=${Version}", package])
                if version:
                    out.update(package=package, version=version)
                    return out
    line = _run([path, "--version"])
    if line:
        out["version"] = line.splitlines()[0][:120]
    return out


def programs_of(task: Any) -> list[str]:
    """The programs a task's related apps and launch steps stand for: the one installed here (else the first)."""
    from conway.tasks.runnable import APP_PROGRAMS, PROGRAM_ALIASES, _launched

    out = []
    wanted = [APP_PROGRAMS.get(a.strip().lower().replace(" ", "_"), (a,)) for a in task.related_apps]
    for step in (*task.config, *task.evaluator.postconfig):
        program = _launched(step) if step.get("type") == "launch" else None
        if program:
            wanted.append(PROGRAM_ALIASES.get(program, (program,)))
    for choices in wanted:
        if choices:
            out.append(next((p for p in choices if shutil.which(p)), choices[0]))
    return out


def environment_facts(executables: Iterable[str], display_size: tuple[int, int] | None) -> dict[str, Any]:
    return {"apps": [app_version(e) for e in sorted(set(executables))],
            "display_size": f"{display_size[0]}x{display_size[1]}" if display_size else None,
            "sandbox": shutil.which("bwrap")}
