"""OSWorld's local cache layout, so a cache that OSWorld's `DesktopEnv(cache_dir=…)` wrote serves unchanged.

Per task a folder `<cache>/<task id>/`; a `download` step's file is kept as
`<uuid5(NAMESPACE_URL, url)>_<basename of its destination>`, a `cloud_file`
getter's as `<dest>`. Nothing here reaches the network: a file that is not in
the cache makes its task not runnable, naming the URL.
"""

from __future__ import annotations

import posixpath
import uuid
from pathlib import Path


def download_path(cache: Path, task_id: str, url: str, destination: str) -> Path:
    """Where the cache keeps the file a `download` step fetches from `url` to `destination` (a guest path)."""
    return Path(cache) / task_id / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{posixpath.basename(destination)}"


def cloud_path(cache: Path, task_id: str, dest: str) -> Path:
    """Where the cache keeps the file a `cloud_file` getter names by its `dest`."""
    return Path(cache) / task_id / dest


HISTORY_FILE = "history_new.sqlite"
"""OSWorld's empty Chrome history database, which its `update_browse_history` step fills: kept in the task's
cache folder under this name (`conway tasks fetch` fetches it from HISTORY_URL)."""
HISTORY_URL = ("https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
               "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true")


def step_files(step_type: str) -> list[tuple[str, str]]:
    """(URL, name in the task's cache folder) of the files a step of this type reads from the cache beyond its
    own parameters (`download` names its own)."""
    return [(HISTORY_URL, HISTORY_FILE)] if step_type == "update_browse_history" else []
