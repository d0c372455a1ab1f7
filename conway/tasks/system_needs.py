"""What a task's own commands need of the system that a disposable desktop cannot give: each a reason it is
not runnable here (and runnable on OSWorld's own VM).

The commands are the task's setup and postconfig steps (`execute`, `command`, `launch`) and its command
getters (`vm_command_line`, `vm_command_error`), read as text:

- `timedatectl` asks systemd's timedated over the system bus: the desktop runs no systemd;
- `pactl` / `pulseaudio` need PulseAudio: the desktop's box runs its own server (a null sink, its socket in
  the box) where Debian's pulseaudio and pulseaudio-utils are installed, and only then;
- `apt-get install` / `apt install` of a package this machine lacks: the sandbox installs nothing (no
  network, no privilege; the desktop's apt-get is a stand-in that succeeds for packages already here), so the
  package must already be here (Debian's name, as the task gives it);
- a checker that asks `which PROGRAM` of a program not here: the task is to install it from the network;
- `gsettings` on a schema this machine lacks (`org.gnome.shell`: Debian's gnome-shell-common);
- a checker that reads what only a download can put there (`web_install_reasons`, lifted by `--network`): the
  user's LibreOffice extensions (`uno_packages`), which an agent installs from an .oxt file off the web (Debian's
  extension packages install system-wide, never there);
- (`gsettings set` after `export DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus`, OSWorld's VM user's
  bus, is no reason: the desktop's box serves its session bus at that very path, `OSWORLD_BUS_SERVED`.)
"""

from __future__ import annotations

import functools
import re
import shlex
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

SCHEMA_DIRS = (Path("/usr/share/glib-2.0/schemas"), Path("/usr/local/share/glib-2.0/schemas"))
OSWORLD_BUS = "/run/user/1000/bus"
OSWORLD_BUS_SERVED = True
"""Whether the disposable desktop answers at OSWorld's bus path: its box's session bus listens at
/run/user/1000/bus (conway/sandbox/desktop.py's RUN_DIR)."""
SCHEMA_PACKAGES = {"org.gnome.shell": "gnome-shell-common"}
"""A schema OSWorld's tasks use → the Debian package that ships it."""
_APT_INSTALL = re.compile(r"\bapt(?:-get)?\s+(?:-\S+\s+)*install\s+([^;&|\n]*)")
_GSETTINGS = re.compile(r"\bgsettings\s+(?:get|set|reset|list-keys|range|writable)\s+([A-Za-z0-9_.-]+)")


def _commands(task: Any) -> Iterator[tuple[str, str]]:
    """(where, the command as one text) for every command the task runs."""
    for where, steps in (("setup", task.config), ("postconfig", task.evaluator.postconfig)):
        for step in steps:
            if step.get("type") in ("execute", "command", "launch"):
                command = (step.get("parameters") or {}).get("command")
                if isinstance(command, list):
                    yield where, " ".join(str(w) for w in command)
                elif isinstance(command, str):
                    yield where, command
    ev = task.evaluator
    for g in (*ev.results, *(ev.expected or ())):
        if g and g.get("type") in ("vm_command_line", "vm_command_error"):
            command = g.get("command")
            text = " ".join(str(w) for w in command) if isinstance(command, list) else command
            if isinstance(text, str):
                yield f"getter {g['type']}", text


@functools.lru_cache(maxsize=1)
def installed_schemas() -> frozenset[str]:
    """The GSettings schema ids this machine's schema folders declare."""
    ids: set[str] = set()
    for folder in SCHEMA_DIRS:
        for path in folder.glob("*.gschema.xml") if folder.is_dir() else ():
            try:
                ids.update(re.findall(r"<schema\b[^>]*\bid=\"([^\"]+)\"", path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError):
                continue
    return frozenset(ids)


@functools.lru_cache(maxsize=1)
def _packages_here() -> frozenset[str]:
    from conway.machine.packages import installed_packages

    return frozenset(installed_packages())


def package_installed(name: str) -> bool:
    """dpkg's status file says the package is installed: the list the desktop's apt-get stand-in is given."""
    return name.split(":")[0] in _packages_here()


def _packages(text: str) -> list[str]:
    out = []
    for m in _APT_INSTALL.finditer(text):
        try:
            words = shlex.split(m.group(1))
        except ValueError:
            words = m.group(1).split()
        out += [w for w in words if not w.startswith("-")]
    return out


def system_reasons(task: Any, *, schemas: Callable[[], frozenset[str]] = installed_schemas,
                   packaged: Callable[[str], bool] = package_installed,
                   on_path: Callable[[str], bool] = lambda p: shutil.which(p) is not None) -> list[str]:
    """Every reason the task's commands cannot work on a disposable desktop here (the module's list)."""
    reasons = []
    for where, text in _commands(task):
        if re.search(r"\btimedatectl\b", text):
            reasons.append(f"the {where} command runs timedatectl, which needs systemd (its timedated), and the "
                           "disposable desktop runs no systemd")
        if re.search(r"\b(pactl|pulseaudio)\b", text) and not (on_path("pulseaudio") and on_path("pactl")):
            reasons.append(f"the {where} command uses PulseAudio (pactl), which is not installed here (apt-get "
                           "install pulseaudio pulseaudio-utils: the desktop's box then runs its own sound server)")
        for package in _packages(text):
            if not packaged(package):
                reasons.append(f"the {where} command installs {package} from the network (apt-get install), which "
                               f"the sandbox cannot; it is not installed here (apt-get install {package})")
        for schema in dict.fromkeys(_GSETTINGS.findall(text)):
            if schema not in schemas():
                package = SCHEMA_PACKAGES.get(schema)
                reasons.append(f"the {where} command uses the GSettings schema {schema}, which is not installed "
                               f"here" + (f" (apt-get install {package})" if package else ""))
        for program in re.findall(r"(?:^|[;&|]\s*)which\s+([A-Za-z0-9_.+-]+)", text) if where.startswith("getter") else ():
            if not on_path(program):
                reasons.append(f"the checker asks `which {program}`: the task is solved by installing {program}, "
                               "which needs the network and a package manager, and the sandbox has neither")
        if (not OSWORLD_BUS_SERVED and where in ("setup", "postconfig") and OSWORLD_BUS in text
                and re.search(r"\bgsettings\s+(set|reset)\b", text)):
            reasons.append(f"the {where} command writes settings over OSWorld's bus {OSWORLD_BUS}, which the "
                           "disposable desktop does not serve: the write would be lost")
    return list(dict.fromkeys(reasons))


WEB_INSTALLS = ((re.compile(r"\buno_packages\b"), "a LibreOffice extension installed in the user's profile (uno_packages), "
                 "whose .oxt file comes from the web (extensions.libreoffice.org)"),)
"""What a postconfig command or command getter reads → what the agent must have downloaded to put it there."""


def web_install_reasons(task: Any) -> list[str]:
    """Why the task needs the web although no URL appears in it: its checker reads what only a download gives."""
    reasons = []
    for where, text in _commands(task):
        for pattern, what in WEB_INSTALLS:
            if where != "setup" and pattern.search(text):
                reasons.append(f"the {where} command checks for {what}, and tasks here run offline (tasks run "
                               "--network lets the sandbox share this machine's network)")
    return list(dict.fromkeys(reasons))
