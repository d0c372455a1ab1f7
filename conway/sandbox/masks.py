"""What a root-started sandbox hides in the system folders it shows: what only root may read there.

Started by root, a sandboxed command holds no capability but keeps uid 0 (see environment.py), so the
permission bits still let it read what root *owns* and may read: `/etc/shadow` (0640 root:shadow),
`/etc/ssl/private` (0700), an SSH host key. A normal user's commands cannot; masking those entries makes a
root-started sandbox read what a normal user's would. Only the small configuration folders are scanned
(`/etc` took 0.1 s and held 11 such entries here), once per process; `/usr`, `/lib*` and `/opt` are not.
A file is shown as a device node that cannot be opened (`/dev/null` on a nodev mount: "Permission
denied"), a folder as an empty read-only one. The files tool refuses the same paths (`is_masked`).
"""

from __future__ import annotations

import functools
import os
import stat

__all__ = ["SCANNED", "is_masked", "mask_args", "root_only"]

SCANNED = ("/etc", "/var/lib/dbus", "/var/cache/fontconfig")


@functools.lru_cache(maxsize=1)
def root_only() -> tuple[tuple[str, bool], ...]:
    """(path, is a folder) of each entry under SCANNED that others may not read (a folder: not list or
    enter); what is under a hidden folder is not listed."""
    found: list[tuple[str, bool]] = []
    for top in SCANNED:
        for root, dirs, files in os.walk(top):
            for name in list(dirs):
                mode = _mode(os.path.join(root, name))
                if stat.S_ISDIR(mode) and (mode & (stat.S_IROTH | stat.S_IXOTH)) != stat.S_IROTH | stat.S_IXOTH:
                    found.append((os.path.join(root, name), True))
                    dirs.remove(name)
            for name in files:
                mode = _mode(os.path.join(root, name))
                if stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                    found.append((os.path.join(root, name), False))
    return tuple(found)


def _mode(path: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def mask_args() -> list[str]:
    """bwrap's arguments hiding `root_only()` (after the system folders are bound); none unless root."""
    if os.geteuid() != 0:
        return []
    out: list[str] = []
    for path, is_dir in root_only():
        out += ["--tmpfs", path, "--remount-ro", path] if is_dir else ["--ro-bind", "/dev/null", path]
    return out


def is_masked(inside: str) -> bool:
    """Whether a path as the sandbox names it is hidden by `mask_args` (or lies under a hidden folder)."""
    if os.geteuid() != 0:
        return False
    return any(inside == path or (is_dir and inside.startswith(path + "/")) for path, is_dir in root_only())
