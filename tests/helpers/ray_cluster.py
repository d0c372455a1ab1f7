"""A real Ray cluster on this machine for the pool's tests: a head and a second node on 127.0.0.1, each
offering one desktop, no dashboard; stopped (`ray stop --force`) afterwards.

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def ray_cluster(tmp: Path, desktops_per_node: int = 1) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--num-cpus=1", f'--resources={{"desktop": {desktops_per_node}}}', "--disable-usage-stats"]
    subprocess.run([RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                    "--include-dashboard=false", f"--temp-dir={tmp}", *common],
                   check=True, capture_output=True, env=env, timeout=120)
    try:
        subprocess.run([RAY, "start", f"--address=127.0.0.1:{port}", *common], check=True, capture_output=True,
                       env=env, timeout=120)
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, env=env, timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)
