"""The Debian packages installed on this machine, read from dpkg's status file (no dpkg run): what the desktop's
`apt-get` stand-in may say is installed (`conway.sandbox.guest`), and what `tasks list` says a task's setup would
have to install (`conway.tasks.system_needs`). Below both: a fact of the machine."""

from __future__ import annotations

from pathlib import Path

DPKG_STATUS = Path("/var/lib/dpkg/status")


def installed_packages(status: Path = DPKG_STATUS) -> list[str]:
    """The Debian packages installed on this machine (dpkg's status file; none where there is none): what the
    desktop's apt-get stand-in may say is installed, the sandbox seeing no dpkg database of its own."""
    try:
        text = status.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    names = []
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        if fields.get("Status", "").endswith(" installed") and fields.get("Package"):
            names.append(fields["Package"])
    return sorted(set(names))
