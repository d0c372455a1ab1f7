"""OSWorld's local cache layout, so a cache that OSWorld's `DesktopEnv(cache_dir=…)` wrote serves unchanged.

Per task a folder `<cache>/<task id>/`; a `download` step's file is kept as
`<uuid5(NAMESPACE_URL, url)>_<basename of its destination>`, a `cloud_file`
getter's as `<dest>`. Nothing here reaches the network: a file that is not in
the cache makes its task not runnable, naming the URL.

A name a task file gives (`dest`, a `cache_file`'s `path`) is a name inside its
task's folder and nothing else: an absolute one, or one whose `..` would climb
out, is refused (PathEscape) before any path is built, so a task can neither
read a host file into a comparison (a score oracle for a secret) nor have
`conway tasks fetch` write one.

A task id and a file name come from the task file: a path built from them
never leaves the task's folder (`CacheEscape`), so `../escape` can neither
read nor write beside the cache.
"""

from __future__ import annotations

import posixpath
import uuid
from pathlib import Path
from typing import Any, Iterable

from conway.tasks.env import GUEST_HOME, PathEscape


class CacheEscape(PathEscape):
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
    """Where the cache keeps the file a `cloud_file` getter names by its `dest` (or a `cache_file` getter by its
    `path`); PathEscape for a name that would leave the task's folder."""
    return task_folder(cache, task_id) / task_file_name(dest)


def task_file_name(name: str) -> str:
    """`name` as a path relative to a task's folder; PathEscape for an absolute one, one whose `..` climbs out
    (`a/../../x`), the folder itself, or a name that is empty or not text."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise PathEscape(f"not a usable file name in the task's cache folder: {name!r}")
    inside = posixpath.normpath(name)
    if name.startswith("/") or inside == "." or inside == ".." or inside.startswith("../"):
        raise PathEscape(f"{name} is outside the task's cache folder (a name there is relative to it)")
    return inside


KEPT_OUTPUTS = f"{GUEST_HOME}/.task-cache"
"""Where an `execute`/`command` step keeps its `stdout`/`stderr` for a `cache_file` getter: OSWorld's controller
writes them into the task's cache folder on its own machine; here that folder lies inside the task's home, so a
task file can name no host path for a step's output (and cannot overwrite the user's cache, which outlives it)."""


def kept_output(name: str) -> str:
    """The guest path of a step output named `name` (a `cache_file` getter's `path`); PathEscape for a name that
    would leave the folder."""
    return f"{KEPT_OUTPUTS}/{task_file_name(name)}"


def kept_names(steps: Iterable[Any]) -> frozenset[str]:
    """The names the `execute` / `command` steps among `steps` keep an output under (their `stdout`, `stderr`)."""
    names = set()
    for step in steps:
        if isinstance(step, dict) and step.get("type") in ("execute", "command"):
            params = step.get("parameters") if isinstance(step.get("parameters"), dict) else {}
            names.update(str(params[k]) for k in ("stdout", "stderr") if params.get(k))
    return frozenset(names)


HISTORY_FILE = "history_new.sqlite"
"""OSWorld's empty Chrome history database, which its `update_browse_history` step fills: kept in the task's
cache folder under this name (`conway tasks fetch` fetches it from HISTORY_URL)."""
HISTORY_URL = ("https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
               "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true")


def step_files(step_type: str) -> list[tuple[str, str]]:
    """(URL, name in the task's cache folder) of the files a step of this type reads from the cache beyond its
    own parameters (`download` names its own)."""
    return [(HISTORY_URL, HISTORY_FILE)] if step_type == "update_browse_history" else []
