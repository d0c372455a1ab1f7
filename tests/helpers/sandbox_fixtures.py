"""Fixtures the sandbox tests share (registered as a plugin in tests/conftest.py): a bubblewrap that works here,
and a real disposable desktop to open."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Iterator

import pytest

from conway.sandbox.desktop import DisposableDesktop
from conway.sandbox.environment import BubblewrapEnvironment
from helpers.desktop_fixtures import need, require

DESKTOP_TOOLS = (("Xvfb", "xvfb"), ("dbus-daemon", "dbus"), ("xdotool", "xdotool"))
"""(program, apt package) of what every disposable desktop runs."""


def _need_bubblewrap() -> None:
    problem = BubblewrapEnvironment.for_workdir(Path("/")).problem()
    require(problem is None, problem or "")


@pytest.fixture
def bwrap_ok() -> None:
    """Skip (fail where CONWAY_REQUIRE_DESKTOP=1) unless bubblewrap runs here, saying what is wrong with it."""
    _need_bubblewrap()


@pytest.fixture
def open_desk(tmp_path: Path) -> Iterator[Callable[..., DisposableDesktop]]:
    """`open_desk(task_id, *also)`: a disposable desktop for `task_id`, its cache in `tmp_path / "cache"`, closed
    after the test. Skipped (failed where CONWAY_REQUIRE_DESKTOP=1) unless the desktop's programs, those of the
    (program, apt package) pairs `also`, and bubblewrap are here."""
    with ExitStack() as opened:
        def open_(task_id: str, *also: tuple[str, str], **options: object) -> DisposableDesktop:
            for tool, apt in DESKTOP_TOOLS + also:
                need(tool, apt)
            _need_bubblewrap()
            return opened.enter_context(DisposableDesktop(task_id, cache_dir=tmp_path / "cache", **options))
        yield open_
