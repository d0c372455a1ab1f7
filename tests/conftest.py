"""Every test gets its own CONWAY_HOME on disk: real files, isolated state."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# helper modules full of asserts get pytest's detailed failure messages too
pytest.register_assert_rewrite("helpers.parser_test_helpers", "helpers.loop_harness", "helpers.desktop_fixtures",
                               "helpers.prompt_frames")

# shared fixtures: a private X display per session, a recorded session for the viewer, a tiny base model, bubblewrap
# and a disposable desktop for the sandbox tests
pytest_plugins = ["helpers.desktop_fixtures", "helpers.view_fixtures", "helpers.tiny_models",
                  "helpers.sandbox_fixtures"]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def conway_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("CONWAY_HOME", str(home))
    return home


@pytest.fixture
def initialized_home(conway_home) -> Path:
    from conway.cli.main import main
    assert main(["init"]) == 0
    return conway_home


def run_cli(*args: str, env: dict | None = None, timeout: float = 120, cwd: Path | None = None,
            **kw) -> subprocess.CompletedProcess:
    """The `conway` command as a real process (what a user runs)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "conway.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd or REPO, **kw)
