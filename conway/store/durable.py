"""Durability of names: after a file is created or renamed, its folder is synced so the name survives a power loss."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(folder: Path, *, best_effort: bool = False) -> None:
    """Sync `folder` itself, so a file created or renamed in it keeps its name after a power loss.

    Where folders cannot be opened for fsync (not POSIX: Windows) this does nothing. Otherwise an
    OSError from opening or syncing the folder is raised, unless `best_effort`: then it is ignored,
    for writers whose data is already synced and for which a lost rename is harmless.
    """
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        if best_effort:
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not best_effort:
            raise
    finally:
        os.close(fd)
