"""A real Ray cluster on this machine for the pool's tests: a head and a second node on 127.0.0.1, each
offering one desktop, no dashboard; its own processes stopped afterwards (not `ray stop`, which would stop
every Ray cluster on the machine, another test run's too).

    with ray_cluster(tmp) as address: ...     # "127.0.0.1:PORT"
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

RAY = str(Path(sys.executable).with_name("ray"))
REPO = Path(__file__).resolve().parents[2]


def conway_process(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`conway ARGS` in a process of its own: a Ray driver is joined to one cluster for the life of its process,
    so every Ray test's driver is a fresh process and the test run itself never joins (or leaves) one."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "conway.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def ray_cluster(tmp: Path, desktops_per_node: int = 1) -> Iterator[str]:
    port = _free_port()
    # without token authentication, for the nodes and for this process as the driver: a private ray.init()
    # elsewhere in the run (`--ray local`) leaves Ray's default token in ~/.ray, which would otherwise apply
    old_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--num-cpus=1", f'--resources={{"desktop": {desktops_per_node}}}', "--disable-usage-stats"]
    try:
        subprocess.run([RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                        "--include-dashboard=false", f"--temp-dir={tmp}", *common],
                       check=True, capture_output=True, env=env, timeout=120)
        subprocess.run([RAY, "start", f"--address=127.0.0.1:{port}", *common], check=True, capture_output=True,
                       env=env, timeout=120)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(f"127.0.0.1:{port}", str(tmp))
        shutil.rmtree(tmp, ignore_errors=True)
        if old_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = old_mode


def _stop(address: str, temp_dir: str, grace_s: float = 10.0) -> None:
    """End the processes of this cluster only: those whose command line names its address or its folder."""
    import psutil

    mine = []
    for p in psutil.process_iter(["cmdline"]):
        line = " ".join(p.info["cmdline"] or [])
        if p.pid != os.getpid() and (address in line or temp_dir in line):
            mine.append(p)
    for p in mine:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(mine, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
