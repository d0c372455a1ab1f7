"""OSWorld's getters by type: `GETTERS[type](env, config)` → the value a metric compares.

Each sees the task's machine only through `TaskEnv`: a path through
`env.host_path` (one that leaves the home raises PathEscape, and the evaluator
records it as that metric's error), a command through `env.run`, bounded. A
`cloud_file` comes from the local cache, never the network; a `cloud_file` or
`cache_file` name that would leave the task's cache folder raises PathEscape
too (`conway.tasks.cache.cloud_path`). Unlike OSWorld's,
`vm_file` hands the metric the file where it lies (no copy into the cache):
the cache is the user's, and a task's files are gone with its home anyway.
"""

from __future__ import annotations

import os
import shlex
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Collection
from urllib.parse import unquote

from conway.tasks import (
    chrome_profile,
    devtools,
    display_info,
    html_parse,
    recreation,
    relative_time,
    slide_files,
    vlc_status,
)
from conway.tasks.cache import cloud_path, kept_output
from conway.tasks.env import GUEST_HOME, TaskEnv

COMMAND_TIMEOUT_S = 120.0
"""OSWorld's server gives a command 120 s; so does a command getter here."""


def _many(config: dict[str, Any], *keys: str) -> tuple[list[list[Any]], set[int]]:
    """The `multi` form (lists of paths and dests) or the single one, and the indexes `gives` hands over."""
    if config.get("multi", False):
        columns = [list(config[k]) if k in config else [] for k in keys]
    else:
        columns = [[config[k]] if k in config else [] for k in keys]
    return columns, set(config.get("gives", [0]))


def _given(values: list[Any], gives: set[int]) -> Any:
    picked = [v for i, v in enumerate(values) if i in gives]
    return picked[0] if len(picked) == 1 else picked


def vm_file(env: TaskEnv, config: dict[str, Any]) -> Any:
    """The file(s) at the task's `path`: the host path as text, or None for a file that is not there."""
    (paths,), gives = _many(config, "path")
    found = []
    for guest in paths:
        host = env.host_path(str(guest))
        found.append(str(host) if host.is_file() else None)
    return _given(found, gives)


def _cached(env: TaskEnv, name: str, what: str) -> Path:
    if env.cache_dir is None:
        raise FileNotFoundError(f"{what} {name!r} needs a local cache (--cache DIR); none was given")
    path = cloud_path(env.cache_dir, env.task_id, name)
    if not path.is_file():
        raise FileNotFoundError(f"{what} {name!r} is not in the cache ({path})")
    return path


def cloud_file(env: TaskEnv, config: dict[str, Any]) -> Any:
    """The cached copy of each file the task names by URL (`path`) and file name (`dest`)."""
    (urls, dests), gives = _many(config, "path", "dest")
    files = []
    for url, dest in zip(urls, dests):
        files.append(str(_cached(env, str(dest), f"cloud file {url} as")))
    return _given(files, gives)


def cache_file(env: TaskEnv, config: dict[str, Any], kept: Collection[str] = ()) -> str:
    """A file in the task's cache folder: for a name in `kept` (one a step of the task keeps its output under:
    `evaluate` passes them), the output the step wrote in the task's home (`kept_output`), never the cache's (a
    cache OSWorld also ran from holds its old outputs); for any other name, the local cache's, never the home's
    (the desktop writes there: a gold file of the cache must not be one it can plant)."""
    name = str(config["path"])
    if name not in kept:
        return str(_cached(env, name, "cache file"))
    where = kept_output(name)
    path = env.host_path(where)
    if not path.is_file():
        raise FileNotFoundError(f"cache file {name!r}: the step that keeps it wrote no {where}")
    return str(path)


def rule(env: TaskEnv, config: dict[str, Any]) -> Any:
    return config["rules"]


def rule_relativeTime(env: TaskEnv, config: dict[str, Any]) -> dict[str, Any]:
    """The task's rules with its relative dates ("tomorrow", "next Monday") written in for today
    (`conway.tasks.relative_time`)."""
    rules = config["rules"]
    return relative_time.resolve(rules, relative_time.now_for(rules))


VIDEO_TYPES = ("3gp", "3gpp", "3gpp2", "avi", "divx", "dv", "fli", "flv", "mp2t", "mp4", "mp4v-es", "mpeg",
               "mpeg-system", "msvideo", "ogg", "quicktime", "vnd.divx", "vnd.mpegurl", "vnd.rn-realvideo", "webm",
               "x-anim", "x-avi", "x-flc", "x-fli", "x-flv", "x-m4v", "x-matroska", "x-mpeg", "x-mpeg-system",
               "x-mpeg2", "x-ms-asf", "x-ms-asf-plugin", "x-ms-asx", "x-ms-wm", "x-ms-wmv", "x-ms-wmx", "x-ms-wvx",
               "x-msvideo", "x-nsv", "x-ogm", "x-ogm+ogg", "x-theora", "x-theora+ogg")
"""The `video/*` types OSWorld's getter asks `xdg-mime` about (it lists most twice, which only doubles the counts)."""


def default_video_player(env: TaskEnv, config: dict[str, Any]) -> str:
    """The application `xdg-mime` names most often as the default for the video types (its `.desktop` id and a
    newline, as a command prints it); 'unknown' when it names none (or is not installed), as OSWorld's getter."""
    script = ("for t in " + " ".join(shlex.quote(t) for t in VIDEO_TYPES) + "; do "
              'out=$(xdg-mime query default "video/$t" 2>/dev/null | head -n 1); printf "%s\\n" "$out"; done')
    done = env.run(script, shell=True, timeout_s=COMMAND_TIMEOUT_S)
    apps = [line + "\n" for line in done.stdout.split("\n")[:len(VIDEO_TYPES)] if line]
    return Counter(apps).most_common(1)[0][0] if apps else "unknown"


def _command(env: TaskEnv, config: dict[str, Any]):
    command = config["command"]
    if not isinstance(command, (str, list)):
        raise ValueError("the getter's `command` must be a string or a list of arguments")
    try:
        return env.run(command, shell=bool(config.get("shell", False)), timeout_s=COMMAND_TIMEOUT_S)
    except OSError as exc:  # a program that is not there is no missing result file (FileNotFoundError's meaning here)
        raise RuntimeError(f"the command could not start: {exc.strerror or exc}: {exc.filename or command}") from None


def vm_command_line(env: TaskEnv, config: dict[str, Any]) -> str:
    """What the command printed on standard output (as OSWorld's `output`)."""
    done = _command(env, config)
    if done.timed_out:
        raise TimeoutError(f"the command did not finish within {COMMAND_TIMEOUT_S:g} s")
    return done.stdout


def vm_command_error(env: TaskEnv, config: dict[str, Any]) -> str:
    """What the command printed on standard error (as OSWorld's `error`)."""
    done = _command(env, config)
    if done.timed_out:
        raise TimeoutError(f"the command did not finish within {COMMAND_TIMEOUT_S:g} s")
    return done.stderr


def _tree(path: Path) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "directory", "name": path.name, "children": []}
    try:
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):  # a link is listed, never followed (it may lead out)
                node["children"].append(_tree(Path(entry.path)))
            else:
                node["children"].append({"type": "file", "name": entry.name})
    except OSError as exc:
        return {"error": str(exc)}
    return node


def list_directory(env: TaskEnv, config: dict[str, Any]) -> dict[str, Any] | None:
    """The folder as OSWorld's nested tree ({type, name, children}); None when it is not a folder."""
    host = env.host_path(str(config["path"]))
    return _tree(host) if host.is_dir() else None


def vm_terminal_output(env: TaskEnv, config: dict[str, Any]) -> str | None:
    return env.terminal_output()


def accessibility_tree(env: TaskEnv, config: dict[str, Any]) -> str:
    """Every application's accessibility tree on the task's desktop, as the XML OSWorld's VM server gives (read
    through AT-SPI on the desktop's own bus). A bus that does not answer raises: OSWorld's getter hands None
    then, on which both its metrics raise (scored 0 there as here, with the reason said here)."""
    xml = env.accessibility_tree()
    if xml is None:
        raise RuntimeError("the accessibility tree could not be read (the desktop's accessibility bus did not "
                           "answer, or AT-SPI is not installed: gir1.2-atspi-2.0 and PyGObject)")
    return xml


def _settings_file(env: TaskEnv, guest: str, what: str) -> str:
    host = env.host_path(guest)
    if not host.is_file():
        raise FileNotFoundError(f"{what} {guest} is not there")
    return str(host)


def vlc_config(env: TaskEnv, config: dict[str, Any]) -> str:
    """VLC's settings file where OSWorld's Linux VM keeps it (`~/.config/vlc/vlcrc`), handed over where it lies."""
    return _settings_file(env, f"{GUEST_HOME}/.config/vlc/vlcrc", "VLC's settings file")


def gimp_config_file(env: TaskEnv, config: dict[str, Any]) -> str:
    """GIMP 2.10's settings file `file_name` (`gimprc`, `sessionrc`) under `~/.config/GIMP/2.10/`, as OSWorld's
    getter reads it; a missing one is a missing result (OSWorld's getter gives None there, scored 0 too)."""
    name = str(config["file_name"])
    return _settings_file(env, f"{GUEST_HOME}/.config/GIMP/2.10/{name}", "GIMP's settings file")


def content_from_vm_file(env: TaskEnv, config: dict[str, Any]) -> Any:
    """OSWorld's reading of a file's content: for an `xlsx` file and `last_row`, the first sheet's last row
    (pandas, the first row as the header) as texts; any other kind raises, as OSWorld's getter does."""
    path = vm_file(env, {"path": config["path"]})
    if config.get("file_type") != "xlsx" or config.get("file_content") != "last_row":
        raise NotImplementedError(f"file type {config.get('file_type')!r} / {config.get('file_content')!r} is "
                                  "not one OSWorld's getter reads")
    if path is None:
        raise FileNotFoundError(f"{config['path']} is not there")
    import pandas
    return pandas.read_excel(path).iloc[-1].astype(str).tolist()


def vm_wallpaper(env: TaskEnv, config: dict[str, Any]) -> str | None:
    """The desktop's wallpaper file (GNOME's `picture-uri`, as OSWorld's server reads it), where it lies; None
    when no wallpaper is set or its file is not there (OSWorld hands an empty file then, which scores 0 too)."""
    done = env.run(["gsettings", "get", "org.gnome.desktop.background", "picture-uri"], timeout_s=30)
    uri = done.stdout.strip().strip("'\"")
    if done.returncode != 0 or not uri:
        return None
    host = env.host_path(unquote(uri.removeprefix("file://")))
    return str(host) if host.is_file() else None


def vscode_config(env: TaskEnv, config: dict[str, Any]) -> Any:
    """OSWorld's VS Code getter: the command palette (ctrl+shift+p) runs the task's `vscode_extension_command`
    in the VS Code window, which writes the file the getter then hands over as `vm_file` does."""
    keys = [["search", "--onlyvisible", "--name", "Visual Studio Code", "windowactivate", "--sync"],
            ["key", "--clearmodifiers", "ctrl+shift+p"], ["type", "--delay", "20", str(config["vscode_extension_command"])],
            ["key", "Return"]]
    for args in keys:
        env.run(["xdotool", *args], timeout_s=30)
        time.sleep(0.5)
    time.sleep(1.0)
    return vm_file(env, {"path": config["path"]})


GETTERS: dict[str, Callable[[TaskEnv, dict[str, Any]], Any]] = {
    "vm_file": vm_file, "cloud_file": cloud_file, "cache_file": cache_file, "rule": rule,
    "vm_command_line": vm_command_line, "vm_command_error": vm_command_error,
    "list_directory": list_directory, "vm_terminal_output": vm_terminal_output,
    "accessibility_tree": accessibility_tree,
    "vlc_config": vlc_config, "gimp_config_file": gimp_config_file, "rule_relativeTime": rule_relativeTime,
    "default_video_player": default_video_player, "vm_wallpaper": vm_wallpaper, "content_from_vm_file": content_from_vm_file, "vscode_config": vscode_config, **chrome_profile.GETTERS, **display_info.GETTERS,
    **devtools.GETTERS, **html_parse.GETTERS, **recreation.GETTERS, **vlc_status.GETTERS, **slide_files.GETTERS,
}
