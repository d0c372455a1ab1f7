"""A built wheel is a working Conway: it carries its config tree, and a fresh install runs the quick start.

Nothing is downloaded: the wheel is built without build isolation from the
setuptools already here, installed with --no-deps --no-index into a fresh
venv, and the dependencies come from the shared environment's site-packages
through a .pth line (a path entry only, so the checkout's editable install
there is never imported). The checkout is not on the path and
CONWAY_CONFIGS is unset, so the config tree must come from the wheel.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def test_the_wheel_ships_configs_and_a_fresh_install_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CONWAY_CONFIGS", "CONWAY_HOME")}
    dist = tmp_path / "dist"
    r = _run([sys.executable, "-m", "pip", "wheel", str(REPO), "-w", str(dist), "--no-deps",
              "--no-build-isolation", "--no-index", "-q"], env, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = next(dist.glob("conway-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if n.startswith("conway/configs/")}
    expected = {f"conway/configs/{p.relative_to(REPO / 'configs').as_posix()}"
                for p in (REPO / "configs").rglob("*") if p.is_file()}
    assert expected and expected <= shipped, sorted(expected - shipped)
    assert {"conway/view/static/viewer.js", "conway/view/static/viewer.css"} <= set(names)  # `conway view`'s assets
    assert "conway/prompt/instructions/memory_summary.md" in names  # memory's summary instruction
    prompts = {p.relative_to(REPO).as_posix() for p in (REPO / "conway/policies/families").glob("*/prompts/*")}
    assert prompts and prompts <= set(names), sorted(prompts - set(names))  # every family's stored prompt files

    venv = tmp_path / "venv"
    r = _run([sys.executable, "-m", "venv", str(venv)], env, tmp_path)
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    r = _run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], env, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    venv_site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env,
                          tmp_path).stdout.strip())
    shared = [p for p in {sysconfig.get_paths()["purelib"], *site.getsitepackages()} if Path(p).is_dir()]
    (venv_site / "zz_shared_dependencies.pth").write_text("\n".join(shared) + "\n")

    r = _run([str(py), "-c", "import conway, conway.config as c; print(conway.__file__); print(c.configs_dir())"],
             env, tmp_path)
    assert r.returncode == 0, r.stderr
    module, configs = r.stdout.split()
    assert Path(module).is_relative_to(venv) and Path(configs).is_relative_to(venv), r.stdout

    home = tmp_path / "home"
    conway = str(venv / "bin" / "conway")
    r = _run([conway, "--home", str(home), "init"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    r = _run([conway, "--home", str(home), "run", "--mock", "--max-steps", "2"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "stopped after 2 step(s)" in r.stdout and "Traceback" not in r.stderr
    assert list((home / "journal").glob("*.jsonl"))
    r = _run([conway, "--home", str(home), "view", "--last", "--output", str(tmp_path / "site")], env, tmp_path)
    assert r.returncode == 0, r.stderr
    page = next((tmp_path / "site" / "s").rglob("page-0001.html")).read_text()
    assert "window.CONWAY_DATA" in page and "--error:" in page  # script and stylesheet read from the wheel
