"""Every test gets its own CONWAY_HOME on disk: real files, isolated state."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# helper modules full of asserts get pytest's detailed failure messages too
pytest.register_assert_rewrite("helpers.parser_test_helpers", "helpers.loop_harness", "helpers.desktop_fixtures",
                               "helpers.prompt_frames")

# shared fixtures: a private X display per session, a recorded session for the viewer, a tiny base model, bubblewrap
# and a disposable desktop for the sandbox tests
pytest_plugins = ["helpers.desktop_fixtures", "helpers.view_fixtures", "helpers.tiny_models",
                  "helpers.sandbox_fixtures", "helpers.extras"]

REPO = Path(__file__).resolve().parent.parent
# the invoking user's home, read before any fixture replaces HOME: the tests must leave it as they found it
REAL_HOME = Path(os.path.expanduser("~")).resolve()


def real_home_fingerprint(home: Path = REAL_HOME) -> dict[str, tuple[int, int]]:
    """What a test could leave in the real home: its top-level names, and every file under ~/.conway with its size
    and modification time (a log appended to, a config rewritten)."""
    seen: dict[str, tuple[int, int]] = {p.name: (0, 0) for p in home.iterdir()} if home.is_dir() else {}
    conway = home / ".conway"
    for path in sorted(conway.rglob("*")) if conway.is_dir() else []:
        st = path.lstat()
        seen[str(path.relative_to(home))] = (st.st_size, st.st_mtime_ns)
    return seen


@pytest.fixture(scope="session", autouse=True)
def private_user_home(tmp_path_factory) -> Iterator[Path]:
    """HOME and CONWAY_HOME point into a temporary folder for the whole session, so that module- and session-scoped
    fixtures (which run before the per-test `conway_home`) and every child process write there, never into the
    invoking user's home; at the end, the real home must be as it was (fails the run otherwise)."""
    home = tmp_path_factory.mktemp("user-home")
    before = real_home_fingerprint()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("CONWAY_HOME", str(home / ".conway"))
        yield home
    after = real_home_fingerprint()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, (f"the real home {REAL_HOME} changed during the tests: {changed} (a test wrote there, or "
                         "another process on this machine did meanwhile)")


PROJECT_TASK_WAITS = "\n# the project's own test suites (tests/conftest.py): OSWorld's fixed 60 s + 20 s per task would add\n" \
    "# minutes to every run of them; the measured-readiness deviation ends each wait once the desktop is quiet\ntasks:\n" \
    "  waits: measured\n"
"""What the project's suites choose for OSWorld-format tasks (`conway/evals/task_protocol.py`); the protocol's own
tests set `tasks.*` themselves."""


@pytest.fixture(scope="session", autouse=True)
def project_task_waits(tmp_path_factory) -> Iterator[Path]:
    """The config tree every test (and every `conway` it starts) composes: the repository's, plus
    `tasks.waits: measured` (PROJECT_TASK_WAITS). `ConwayConfig()` built directly keeps OSWorld's fixed waits."""
    import shutil

    tree = tmp_path_factory.mktemp("configs") / "configs"
    shutil.copytree(REPO / "configs", tree, symlinks=True)
    with (tree / "config.yaml").open("a", encoding="utf-8") as f:
        f.write(PROJECT_TASK_WAITS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONWAY_CONFIGS", str(tree))
        yield tree


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
