"""The tests never touch the invoking user's home: module-scoped fixtures (which run before each test's own
CONWAY_HOME) and child processes see a temporary HOME and CONWAY_HOME (tests/conftest.py's private_user_home)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REAL_HOME, real_home_fingerprint

from conway.store.home import resolve_home


@pytest.fixture(scope="module")
def module_scoped_home() -> tuple[Path, Path]:
    """Where a module-scoped fixture's Conway home and user home are (what loaded the tiny VLM into ~/.conway)."""
    return resolve_home(None).root.resolve(), Path(os.path.expanduser("~")).resolve()


def test_a_module_scoped_fixture_gets_a_temporary_home(module_scoped_home):
    conway_home, user_home = module_scoped_home
    assert not conway_home.is_relative_to(REAL_HOME), conway_home
    assert user_home != REAL_HOME and not user_home.is_relative_to(REAL_HOME), user_home


def test_a_child_process_sees_the_temporary_home():
    out = subprocess.run([sys.executable, "-c", "import os; print(os.path.expanduser('~'))"], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert Path(out).resolve() != REAL_HOME


def test_the_fingerprint_sees_a_log_written_into_the_home(tmp_path):
    (tmp_path / ".conway").mkdir()
    before = real_home_fingerprint(tmp_path)
    (tmp_path / ".conway" / "llama-runtime.log").write_text("tiny vlm\n")
    assert real_home_fingerprint(tmp_path) != before
    (tmp_path / "new").mkdir()
    assert "new" in real_home_fingerprint(tmp_path)
