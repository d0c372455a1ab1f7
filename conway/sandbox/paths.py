"""What a sandbox shows: a list of binds (a path inside → a folder on this machine), and paths resolved
through it the way a process inside would see them.

Symlinks are followed inside the view, never on the host: a link in the home pointing to `/root/secret`
names `/root/secret` as the sandbox sees it (hidden), not the host's file. So a path is refused
(`PathEscape`) exactly when a process inside could not reach it either.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from conway.tasks.env import PathEscape

_MAX_LINKS = 40  # as the kernel's ELOOP limit


@dataclass(frozen=True)
class Bind:
    inside: str
    """An absolute path as processes in the sandbox see it."""
    host: Path
    """The folder (or file) on this machine shown there."""
    writable: bool = False


@dataclass(frozen=True)
class Resolved:
    inside: str
    """The path as the sandbox names it, links followed and `..` applied."""
    host: Path
    writable: bool
    top: Path | None = None
    """The bind's folder on this machine, where `rel` lies: open through `safe_files.open_beneath(top, rel)`
    so that a link swapped in after this resolution is refused, never followed."""
    rel: str = ""


def _host_of(binds: list[Bind], inside: str) -> tuple[Path, bool, Path, str] | None:
    best: Bind | None = None
    for b in binds:  # the deepest bind wins, as a later mount over an earlier one does
        if inside == b.inside or inside.startswith(b.inside.rstrip("/") + "/"):
            if best is None or len(b.inside) > len(best.inside):
                best = b
    if best is None:
        return None
    rest = inside[len(best.inside):].lstrip("/")
    return (best.host / rest if rest else best.host), best.writable, best.host, rest


def resolve(binds: list[Bind], path: str, *, cwd: str, home: str) -> Resolved:
    """`path` (absolute, `~/…` or relative to `cwd`) as seen through `binds`; PathEscape when it is not shown."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise PathEscape(f"not a usable path: {path!r}")
    given = path  # messages name the path as it was written
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    elif path.startswith("~"):
        raise PathEscape(f"{path}: another user's home is not visible here")
    start = path if path.startswith("/") else posixpath.join(cwd, path)
    pending = [p for p in start.split("/") if p][::-1]  # a stack: the next component last
    cur, links = "/", 0
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":
            cur = posixpath.dirname(cur)
            continue
        nxt = posixpath.join(cur, name)
        mapped = _host_of(binds, nxt)
        if mapped is not None and os.path.islink(mapped[0]):
            links += 1
            if links > _MAX_LINKS:
                raise PathEscape(f"{given}: too many levels of symbolic links")
            target = os.readlink(mapped[0])
            if target.startswith("/"):
                cur = "/"
            pending.extend([p for p in target.split("/") if p][::-1])
            continue
        cur = nxt
    mapped = _host_of(binds, cur)
    if mapped is None:
        shown = given if cur == given else f"{given} (that is {cur})"
        raise PathEscape(f"{shown} is outside what this sandbox shows")
    return Resolved(inside=cur, host=mapped[0], writable=mapped[1], top=mapped[2], rel=mapped[3])
