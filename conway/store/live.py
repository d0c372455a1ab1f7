"""live.json: what a running session tells the live view about itself (its display, pid, video).

Written by the session when its run begins (`write_live`), beside state.json; the live view finds running
sessions by these files (`find_live`) and trusts one only while its home's lock is held by that pid.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

from conway.store.state import InstanceLock, atomic_write_json, read_json

LIVE_FILE = "live.json"
SEARCH_DEPTH = 4
"""How deep under a folder `find_live` looks for homes (a tasks report's `<report>.tasks/NN-id/home`)."""


def write_live(root: Path, session: str, pid: int, display: str | None, **extra: Any) -> None:
    atomic_write_json(root / LIVE_FILE, {"session": session, "pid": pid, "display": display,
                                         "started": time.time(), **extra}, durable=False)


def read_live(root: Path) -> dict[str, Any] | None:
    """The home's live record when an agent holding its lock wrote it (the record's session is the lock's)."""
    try:
        data = read_json(root / LIVE_FILE)
    except (FileNotFoundError, ValueError, OSError):
        return None
    if not isinstance(data, dict):
        return None
    held = InstanceLock(root / "instance.lock").held() if (root / "instance.lock").exists() else None
    if held is None or held[1] != data.get("session"):
        return None
    return {**data, "home": str(root)}


def find_live(roots: list[Path]) -> list[dict[str, Any]]:
    """Every running session under `roots` (each a Conway home or a folder holding homes), in path order."""
    seen: set[Path] = set()
    out = []
    for root in roots:
        for live in _live_files(root, SEARCH_DEPTH):
            home = live.parent.resolve()
            if home in seen:
                continue
            seen.add(home)
            rec = read_live(home)
            if rec is not None:
                out.append(rec)
    return sorted(out, key=lambda r: r["home"])


def _live_files(folder: Path, depth: int) -> Iterator[Path]:
    if (folder / LIVE_FILE).is_file():
        yield folder / LIVE_FILE
    if depth <= 0:
        return
    try:
        subs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return
    for sub in subs:
        if sub.name in ("journal", "screenshots", "scratch", "skills", "cache", "view", "mcp", "candidates"):
            continue
        yield from _live_files(sub, depth - 1)
