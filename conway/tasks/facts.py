"""The environment a task suite ran in, as a report records it: the applications (and their versions), the display;
and `APPLICATIONS`, what OSWorld's VM offers set against what this machine has (`conway tasks doctor`).

Versions come from the package manager that installed the program (Debian's
`dpkg-query`), else the program's own `--version` line: tried, never guessed.
OSWorld's VM versions are those its own documentation states
(`desktop_env/server/README.md` of OSWorld at b5007a93: Ubuntu 22.04, LibreOffice
7.3.7.2, GIMP 2.10.30, VLC 3.0.16, VS Code 1.91.1); where it states none, "not stated".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from conway.machine.atspi import desktop_atspi_missing

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


OSWORLD_VM = "Ubuntu 22.04 with GNOME (OSWorld's VM image)"


@dataclass(frozen=True)
class App:
    """One application OSWorld's tasks use: the programs that run it here, the Debian packages that install
    it, the version OSWorld's VM has, and how running it here differs."""

    name: str
    programs: tuple[str, ...]
    packages: tuple[str, ...]
    osworld: str
    here: str


APPLICATIONS: tuple[App, ...] = (
    App("chrome", ("chromium",), ("chromium",), "Google Chrome (version not stated)",
        "Debian's Chromium, started as google-chrome with Chrome's profile folder (~/.config/google-chrome); no "
        "Google account or sync, no Chrome-only features"),
    App("libreoffice", ("soffice",), ("libreoffice-calc", "libreoffice-writer", "libreoffice-impress"),
        "LibreOffice 7.3.7.2", "Debian's LibreOffice (Calc, Writer, Impress); the VM has extra fonts installed"),
    App("gimp", ("gimp",), ("gimp",), "GIMP 2.10.30", "Debian's GIMP"),
    App("vlc", ("vlc",), ("vlc",), "VLC 3.0.16",
        "Debian's VLC, started by the desktop's launcher (Debian's refuses uid 0) with the HTTP interface on "
        "localhost:8080 as OSWorld's getters expect; no sound device"),
    App("thunderbird", ("thunderbird",), ("thunderbird",), "Thunderbird (version not stated)",
        "Debian's Thunderbird ESR; no mail account in the empty home (OSWorld's VM image has its profile)"),
    App("vs_code", ("code",), (), "VS Code 1.91.1",
        "not installed: Debian does not ship VS Code (Microsoft's .deb is not in Debian's archive)"),
    App("file manager", ("nautilus",), ("nautilus",), "GNOME Files (Ubuntu 22.04's)", "Debian's Nautilus, "
        "without the GNOME shell around it"),
    App("terminal", ("lxterminal",), ("lxterminal",), "GNOME Terminal",
        "LXTerminal (its text is read over AT-SPI: see the AT-SPI line); no Ctrl+Alt+T shortcut without GNOME"),
    App("socat", ("socat",), ("socat",), "socat", "Debian's socat (forwards Chrome's DevTools port 9222 → 1337 "
        "inside the desktop's private network)"),
    App("python with PyAutoGUI", ("python3",), ("python3",), "Python 3 with PyAutoGUI",
        "the system's Python 3 (also as `python`); PyAutoGUI is the desktop's stand-in doing its key, click and "
        "type calls with xdotool"),
)


def doctor(atspi: Callable[[], str | None] = desktop_atspi_missing) -> dict[str, Any]:
    """Per application: installed or not, the program and version found here, and OSWorld's VM's; and whether
    the terminal's text and the accessibility tree can be read here (`atspi`: why not, or None)."""
    rows = []
    for app in APPLICATIONS:
        found = next((app_version(p) for p in app.programs if shutil.which(p)), None)
        rows.append({"app": app.name, "installed": found is not None, "program": (found or {}).get("path"),
                     "package": (found or {}).get("package"), "version": (found or {}).get("version"),
                     "debian_packages": list(app.packages), "osworld_vm": app.osworld, "here": app.here})
    problem = atspi()
    return {"schema": "conway-tasks-doctor/1", "osworld_vm": OSWORLD_VM, "apps": rows,
            "installed": sum(r["installed"] for r in rows), "total": len(rows),
            "atspi": {"readable": problem is None, "problem": problem}}


def doctor_passed(record: dict[str, Any]) -> bool:
    """Every application installed and AT-SPI readable: nothing a task of OSWorld's could miss here."""
    return record["installed"] == record["total"] and record["atspi"]["readable"]


def render_doctor(record: dict[str, Any]) -> str:
    lines = [f"applications on the task desktop, against OSWorld's VM ({record['osworld_vm']}):", ""]
    for r in record["apps"]:
        state = f"{r['version'] or 'version unknown'}" if r["installed"] else "NOT INSTALLED"
        lines.append(f"{r['app']:<22} {state:<34} OSWorld VM: {r['osworld_vm']}")
        lines.append(f"{'':<22} {r['here']}")
    atspi = record["atspi"]
    lines += ["", "AT-SPI (the terminal's text, the accessibility tree): "
              + ("readable" if atspi["readable"] else f"NOT READABLE: {atspi['problem']}; the tasks scored on them "
                 "are not runnable")]
    lines += ["", f"{record['installed']}/{record['total']} installed. A score measured here is a local measurement, "
              "not comparable with OSWorld leaderboard numbers."]
    missing = [p for r in record["apps"] if not r["installed"] for p in r["debian_packages"]]
    if missing:
        lines.append(f"install the missing ones Debian ships: apt-get install {' '.join(missing)}")
    return "\n".join(lines)


def osworld_version_of(program: str) -> str | None:
    """What OSWorld's VM runs where this machine runs `program` (None when no application uses it)."""
    return next((app.osworld for app in APPLICATIONS if program in app.programs), None)


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
    apps = [{**app_version(e), "osworld_vm": osworld_version_of(e)} for e in sorted(set(executables))]
    return {"apps": apps, "osworld_vm": OSWORLD_VM,
            "display_size": f"{display_size[0]}x{display_size[1]}" if display_size else None,
            "sandbox": shutil.which("bwrap")}
