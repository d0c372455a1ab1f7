"""Files under a folder a sandbox writes in, opened from this side without following any link.

A process in the sandbox may swap any file or folder of its own for a symlink at any moment, also between
Conway's check of a path and its open. So a path here is never checked-then-opened: every open goes through
`open_beneath`, which resolves the path relative to the folder with `openat2(RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` (Linux 5.6+), or, where the kernel lacks it, one component at a
time with `O_NOFOLLOW` from a descriptor of the folder. A link anywhere on the way is refused (ELOOP), never
followed; nothing outside the folder is reachable.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from pathlib import Path

from conway.tasks.env import PathEscape

__all__ = ["copy_out", "open_beneath", "write_in"]

_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
MAX_COPY_BYTES = 1 << 30
"""The most a copy out of a sandbox's folder takes (files and trees alike)."""
MAX_COPY_ENTRIES = 20000


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_have_openat2: bool | None = None


def _openat2(dirfd: int, rel: str, flags: int, mode: int) -> int:
    global _have_openat2
    import platform

    number = _SYS_OPENAT2.get(platform.machine())
    if number is None or _have_openat2 is False:
        raise NotImplementedError
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0,
                   _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(number, dirfd, rel.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM) and _have_openat2 is None:
            _have_openat2 = False
            raise NotImplementedError
        raise OSError(err, os.strerror(err), rel)
    _have_openat2 = True
    return fd


def _walk_open(dirfd: int, rel: str, flags: int, mode: int) -> int:
    """The same without openat2: each folder opened with O_NOFOLLOW | O_DIRECTORY from the previous one."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise OSError(errno.EXDEV, "leaves the folder", rel)
    cur = os.dup(dirfd)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=cur)
            os.close(cur)
            cur = nxt
        if not parts:
            return os.open(".", flags | os.O_CLOEXEC, dir_fd=cur)
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=cur)
    finally:
        os.close(cur)


def open_beneath(top: Path, rel: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor for `rel` under `top` (which this side made and trusts); OSError ELOOP when a link is on
    the way, EXDEV when `rel` would leave `top`."""
    rel = rel.lstrip("/") or "."
    topfd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            return _openat2(topfd, rel, flags, mode)
        except NotImplementedError:
            return _walk_open(topfd, rel, flags, mode)
    finally:
        os.close(topfd)


def _refused(rel: str, exc: OSError) -> PathEscape:
    if exc.errno in (errno.ELOOP, errno.EXDEV):
        return PathEscape(f"{rel}: a link on the way (links in the task's home are not followed from outside)")
    return PathEscape(f"{rel}: {exc.strerror or exc}")


def copy_out(top: Path, rel: str, dest: Path) -> Path:
    """A private copy of `top/rel` (a file, or a folder's tree with its files) under `dest`; a path that does not
    exist for a name that does not exist there. PathEscape for a link on the way."""
    target = dest / f"{len(list(dest.iterdir()))}" / (Path(rel).name or "home")
    target.parent.mkdir(parents=True)
    try:
        fd = open_beneath(top, rel, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise _refused(rel, exc) from None
    budget = [MAX_COPY_BYTES, MAX_COPY_ENTRIES]
    try:
        _copy_fd(fd, target, budget)
    finally:
        os.close(fd)
    return target


def _copy_fd(fd: int, target: Path, budget: list[int]) -> None:
    st = os.fstat(fd)
    budget[1] -= 1
    if budget[1] < 0:
        raise PathEscape("the folder holds too many entries to read")
    if stat.S_ISREG(st.st_mode):
        with open(target, "wb") as out:
            while chunk := os.read(fd, 1 << 20):
                budget[0] -= len(chunk)
                if budget[0] < 0:
                    raise PathEscape(f"more than {MAX_COPY_BYTES >> 20} MiB to read")
                out.write(chunk)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        return
    if not stat.S_ISDIR(st.st_mode):
        return  # a FIFO, socket or device: nothing a getter reads
    target.mkdir()
    for name in sorted(os.listdir(fd)):
        try:
            child = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            continue  # a link (ELOOP) or gone meanwhile: not copied
        try:
            _copy_fd(child, target / name, budget)
        finally:
            os.close(child)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def write_in(top: Path, rel: str, data: bytes, *, owner: int | None = None) -> None:
    """Write `data` to `top/rel`, making its folders; each folder and the file opened beneath `top` with no
    link followed; the new folders and file given to `owner` (the box's uid) when this side is root."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise PathEscape(f"{rel}: not a file in the task's home")
    chown = owner is not None and os.geteuid() == 0
    try:
        for i in range(1, len(parts)):
            sub = "/".join(parts[:i])
            try:
                fd = open_beneath(top, sub, os.O_RDONLY | os.O_DIRECTORY)
                os.close(fd)
            except FileNotFoundError:
                parent = open_beneath(top, "/".join(parts[:i - 1]) or ".", os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.mkdir(parts[i - 1], 0o755, dir_fd=parent)
                    if chown:
                        os.chown(parts[i - 1], owner, owner, dir_fd=parent, follow_symlinks=False)
                finally:
                    os.close(parent)
        fd = open_beneath(top, rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as exc:
        raise _refused(rel, exc) from None
    try:
        if chown:
            os.fchown(fd, owner, owner)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
