"""OSWorld's `vlc_playing_info` getter: VLC's HTTP interface's `status.xml` (port 8080, password "password", as
OSWorld's VM configures VLC), which `is_vlc_playing` (metrics/media.py) reads.

VLC runs in the task's sandbox, on its private loopback, so the status is fetched from there (`env.run` of
`python3 -c`); the desktop's VLC must have its HTTP interface on (`--extraintf http --http-port 8080
--http-password password`, or OSWorld's vlcrc). The file is handed over in a fresh folder of its own.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from conway.tasks.env import TaskEnv

PORT, PASSWORD = 8080, "password"
FETCH = """
import base64, sys, urllib.request
request = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/requests/status.xml",
                                 headers={"Authorization": "Basic " + base64.b64encode(b":" + sys.argv[2].encode()).decode()})
try:
    with urllib.request.urlopen(request, timeout=10) as r:
        sys.stdout.buffer.write(r.read())
except Exception as exc:
    sys.exit(f"VLC's HTTP interface did not answer: {exc}")
"""


def vlc_playing_info(env: TaskEnv, config: dict[str, Any]) -> str | None:
    """VLC's status.xml as a file named `dest`; None when VLC's HTTP interface does not answer (as OSWorld)."""
    done = env.run(["python3", "-c", FETCH, str(PORT), PASSWORD], timeout_s=30)
    if done.returncode != 0 or not done.stdout:
        return None
    out = Path(tempfile.mkdtemp(prefix="conway-vlc-")) / Path(str(config.get("dest", "status.xml"))).name
    out.write_text(done.stdout, encoding="utf-8")
    return str(out)


GETTERS = {"vlc_playing_info": vlc_playing_info}
