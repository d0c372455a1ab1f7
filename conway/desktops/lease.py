"""Many guests for one suite: each task takes a guest no other task is using, and gives it back after.

`tasks.desktop_url` may name several guest servers, separated by commas (`http://a:5000,http://b:5000`): OSWorld
VMs the user already runs (on AWS, a Docker host). A pool's workers (processes here, Ray actors elsewhere) each
lease one for the length of a task: an exclusive `flock` on a file per address in a folder every worker sees
(the report's tasks folder, which a Ray cluster already shares; else this machine's temp folder). A lock dies
with its process, so a worker killed mid-task frees its guest. With more workers than guests, a task waits for
one to come free.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

from conway.desktops.base import DesktopError, pause

WAIT_SLICE_S = 0.5


def guest_urls(value: str | None) -> list[str]:
    """The addresses in `tasks.desktop_url` (comma-separated), in order, without repeats or blanks."""
    return list(dict.fromkeys(u.strip() for u in (value or "").split(",") if u.strip()))


class GuestLease:
    """An exclusive hold on one of `urls` (`acquire` → the address; `release`)."""

    def __init__(self, urls: list[str], folder: Path | None = None, *, wait_s: float = 3600.0,
                 sleep: Callable[[float], float] = pause):
        if not urls:
            raise DesktopError("no guest server address to lease")
        self.urls = urls
        self.folder = Path(folder) if folder is not None else Path(tempfile.gettempdir()) / "conway-guest-leases"
        self.wait_s = wait_s
        self._sleep = sleep
        self._fd: int | None = None
        self.url: str | None = None

    def _path(self, url: str) -> Path:
        return self.folder / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".lock")

    def acquire(self) -> str:
        """The first address no other task holds; waits (a stop cuts the wait) up to `wait_s` for one."""
        from conway.cancel import current_cancel

        self.folder.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait_s
        while True:
            for url in self.urls:
                fd = os.open(self._path(url), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                self._fd, self.url = fd, url
                return url
            token = current_cancel()
            if time.monotonic() > deadline or (token is not None and token.is_set()):
                raise DesktopError(f"none of the {len(self.urls)} guest server(s) came free within {self.wait_s:g} s")
            self._sleep(WAIT_SLICE_S)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd, self.url = None, None
