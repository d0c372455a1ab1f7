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
