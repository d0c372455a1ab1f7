"""A test that needs one of the optional extras: skipped, naming the extra and how to install it, where only
`dev` is installed (a contributor's first run), and run where every extra is (CI: `scripts/test.sh`)."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest


def need_extra(extra: str, module: str) -> ModuleType:
    """`module` of the extra `extra`, imported; without it the test (or, at module level, the module) is skipped
    with one line naming the extra, never a collection error or a failure deep inside the code under test."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.skip(f"the {extra} extra is not installed ({module}: {exc}; pip install -e '.[{extra}]')",
                    allow_module_level=True)
        raise  # unreachable: skip raises


@pytest.fixture
def every_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """`conway.tasks.runnable` sees every extra installed and AT-SPI readable: for tests of what a listing says
    besides the extras (those reasons are tested by saying what is missing), which then pass with only `dev`."""
    import conway.tasks.runnable as runnable

    monkeypatch.setattr(runnable, "_importable", lambda module: True)
    monkeypatch.setattr(runnable, "desktop_atspi_missing", lambda: None)
