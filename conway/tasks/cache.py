"""OSWorld's local cache layout, so a cache that OSWorld's `DesktopEnv(cache_dir=…)` wrote serves unchanged.

Per task a folder `<cache>/<task id>/`; a `download` step's file is kept as
`<uuid5(NAMESPACE_URL, url)>_<basename of its destination>`, a `cloud_file`
getter's as `<dest>`. Nothing here reaches the network: a file that is not in
the cache makes its task not runnable, naming the URL.

A task id and a file name come from the task file: a path built from them
never leaves the task's folder (`CacheEscape`), so `../escape` can neither
read nor write beside the cache.
"""

from __future__ import annotations

import posixpath
import uuid
from pathlib import Path


class CacheEscape(ValueError):
    """A task id or file name that would lead out of the task's folder of the cache: refused, never followed."""


def id_problem(task_id: str) -> str | None:
    """Why `task_id` cannot name a task's folder (in the cache, in an index's `examples/`), or None. OSWorld's
    ids are UUIDs; one with a `/` or a leading `.` would name another folder, or a hidden one."""
    if not task_id or "/" in task_id or "\0" in task_id or task_id.startswith("."):
        return f"task id {task_id!r} cannot name a folder (no /, no leading .)"
    return None


def task_folder(cache: Path, task_id: str) -> Path:
    """The task's folder of the cache; CacheEscape for an id that would name another."""
    if (problem := id_problem(task_id)) is not None:
        raise CacheEscape(problem)
    return Path(cache) / task_id


def name_problem(name: str) -> str | None:
    """Why a file name a task gives (a cloud file's `dest`, a command's kept output) cannot be kept in its task's
    folder of the cache, or None."""
    if not name or name.startswith("/") or ".." in Path(name).parts:
        return f"file name {name!r} leads out of the task's folder of the cache"
    return None


def download_path(cache: Path, task_id: str, url: str, destination: str) -> Path:
    """Where the cache keeps the file a `download` step fetches from `url` to `destination` (a guest path)."""
    return task_folder(cache, task_id) / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{posixpath.basename(destination)}"


def cloud_path(cache: Path, task_id: str, dest: str) -> Path:
    """Where the cache keeps the file a `cloud_file` getter names by its `dest` (also a command's kept output);
    CacheEscape for a name that leads out of the task's folder."""
    if (problem := name_problem(dest)) is not None:
        raise CacheEscape(problem)
    return task_folder(cache, task_id) / dest


HISTORY_FILE = "history_new.sqlite"
"""OSWorld's empty Chrome history database, which its `update_browse_history` step fills: kept in the task's
cache folder under this name (`conway tasks fetch` fetches it from HISTORY_URL)."""
HISTORY_URL = ("https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
               "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true")


def step_files(step_type: str) -> list[tuple[str, str]]:
    """(URL, name in the task's cache folder) of the files a step of this type reads from the cache beyond its
    own parameters (`download` names its own)."""
    return [(HISTORY_URL, HISTORY_FILE)] if step_type == "update_browse_history" else []
