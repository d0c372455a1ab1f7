"""Why a task cannot run here: every reason, so that no task is ever scored on a part that is missing.

A task is runnable when every setup step type has an implementation, every
getter and metric exists, the applications it names (and the programs its
`launch` steps start) are installed, every file it downloads or takes from the
cloud is in the local cache, it needs no live web site (no URL it opens,
no `proxy: true`), this install has the optional extras it needs (`gui` for
the desktop's tools, `tasks` for a metric that reads documents, `atspi` for a
getter that reads the terminal's text or the accessibility tree), and its commands
need nothing of the system the desktop cannot give (`conway.tasks.system_needs`).
"""

from __future__ import annotations

import importlib.util
import posixpath
import re
import shlex
import shutil
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Mapping
from urllib.parse import urlsplit

from conway.machine.atspi import desktop_atspi_missing
from conway.machine.extras import EXTRAS
from conway.tasks.cache import cloud_path, download_path, step_files, task_file_name
from conway.tasks.env import PathEscape
from conway.tasks.getters import GETTERS
from conway.tasks.metrics import LIBRARIES, METRICS, unsupported_options
from conway.tasks.metrics.ocr import ocr_missing
from conway.tasks.system_needs import system_reasons, web_install_reasons
from conway.tasks.task import Task
from conway.tasks.task_file import LOCAL_HOSTS

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
OFFICE = ("soffice", "libreoffice")
TERMINALS = ("lxterminal", "gnome-terminal", "xfce4-terminal", "xterm", "x-terminal-emulator")
"""lxterminal first: the disposable desktop's terminal (`conway.sandbox.desktop.TERMINAL`, what Ctrl+Alt+T opens)."""
FILE_KINDS = ("pdf", "image")
"""`related_apps` tags OSWorld gives a task about such files: kinds of file, not programs (the task's other apps,
and its launch steps, name the programs that open them)."""
# a related app (lower case, spaces as _) → the programs any one of which runs it; () is always there
APP_PROGRAMS: dict[str, tuple[str, ...]] = {
    "os": (), "chrome": CHROMIUM, "browser": CHROMIUM, "gimp": ("gimp",), "vlc": ("vlc",),
    "thunderbird": ("thunderbird",), "vs_code": ("code",), "vscode": ("code",), "terminal": TERMINALS,
    "libreoffice": OFFICE, "libreoffice_calc": OFFICE, "libreoffice_writer": OFFICE,
    "libreoffice_impress": OFFICE, "calc": OFFICE, "writer": OFFICE, "impress": OFFICE,
    "ubuntu_media_player": ("totem",),  # Ubuntu's "Videos" is GNOME's Totem
    **{kind: () for kind in FILE_KINDS},
}
# a program a launch step names → what may stand in for it here (Debian ships Chromium, not Chrome)
PROGRAM_ALIASES: dict[str, tuple[str, ...]] = {"google-chrome": CHROMIUM, "chromium": CHROMIUM, "libreoffice": OFFICE}
ACCOUNTS = {"googledrive": "a Google Drive account", "googledrive_file": "a Google Drive account",
            "login": "a login to a third party's web site"}
"""The steps and getters OSWorld runs with a third party's account: named as such, never implemented."""
URL = re.compile(r"https?://[^\s\"'<>\\]+")
RULE_GETTERS = ("rule", "rule_relativeTime")  # their values are what a metric expects, not what the task opens
ATSPI_GETTERS = {"vm_terminal_output": "the terminal's text", "accessibility_tree": "the accessibility tree"}
"""The getters that read the desktop over AT-SPI, with what they read: a helper run by this Python does it."""


def _which(program: str) -> bool:
    return shutil.which(program) is not None


def _importable(module: str) -> bool:
    """Installed, without importing it (pyautogui cannot even be imported without a display)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _extras(task: Task, importable: Callable[[str], bool]) -> list[str]:
    """The optional extras this task needs and this install lacks: every task acts on its desktop through the
    GUI tools (`gui`), a document metric reads its files with the `tasks` extra's libraries."""
    def lacking(extra: str, modules: Collection[str]) -> str | None:
        missing = [m for m in modules if not importable(m)]
        if not missing:
            return None
        return f"the {extra} extra is not installed ({', '.join(missing)} missing: pip install 'conway[{extra}]')"

    reasons = [lacking("gui", EXTRAS["gui"])]
    for func in task.evaluator.funcs if task.format != "conway" else ():
        if (problem := lacking("tasks", LIBRARIES.get(func, ()))) is not None:
            reasons.append(f"metric {func}: {problem}")
        if func == "compare_image_text" and (problem := ocr_missing(importable)) is not None:
            reasons.append(problem)
    return [r for r in reasons if r]


def _none_of(programs: tuple[str, ...]) -> str:
    return f"{programs[0]} is not on PATH" if len(programs) == 1 else f"none of {', '.join(programs)} is on PATH"


def _steps(task: Task) -> Iterator[tuple[str, dict[str, Any]]]:
    for step in task.config:
        yield "setup step", step
    for step in task.evaluator.postconfig:
        yield "postconfig step", step


def _getters(task: Task) -> Iterator[dict[str, Any]]:
    ev = task.evaluator
    yield from (g for g in (*ev.results, *(ev.expected or ())) if g)


def _launched(step: dict[str, Any]) -> str | None:
    command = step.get("parameters", {}).get("command")
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return None
    elif isinstance(command, list):
        words = [str(w) for w in command]
    else:
        return None
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):  # VLC_VERBOSE=-1 vlc …
        words.pop(0)
    return posixpath.basename(words[0]) if words else None


def _apps(task: Task, installed: Callable[[str], bool]) -> list[str]:
    reasons = []
    missing: set[str] = set()  # programs already named as missing: a launch of one of them adds nothing
    # one spelling per app ("libreoffice calc" and "libreoffice_calc" are one app, said alike in every reason)
    for key in dict.fromkeys(app.strip().lower().replace(" ", "_") for app in task.related_apps):
        programs = APP_PROGRAMS.get(key, (key,))
        if programs and not any(installed(p) for p in programs):
            reasons.append(f"application {key} is not installed ({_none_of(programs)})")
            missing.update(programs)
    for _, step in _steps(task):
        if step["type"] != "launch":
            continue
        program = _launched(step)
        alts = PROGRAM_ALIASES.get(program or "", (program,)) if program else ()
        if alts and not any(installed(p) for p in alts) and program not in missing:
            reasons.append(f"the launch step's program {program} is not installed ({_none_of(alts)})")
            missing.add(program)
    return reasons


OFFICE_A11Y_PLUGINS = ("gtk3", "kf5", "qt5", "gtk3_kde5")
"""LibreOffice's toolkit plugins that expose its windows over AT-SPI (its own X11 one, `gen`, exposes nothing)."""


def _office_accessible() -> bool:
    """Whether LibreOffice here has a toolkit plugin that shows its windows to AT-SPI (Debian's libreoffice-gtk3)."""
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        return False
    program = Path(soffice).resolve().parent
    return any((program / f"libvclplug_{name}lo.so").is_file() for name in OFFICE_A11Y_PLUGINS)


def _office_tree(task: Task, office_accessible: Callable[[], bool]) -> list[str]:
    """A task scored on LibreOffice's part of the accessibility tree needs LibreOffice in that tree: without a
    plugin that exposes it, the tree holds no LibreOffice window and the task would score 0 whatever the agent
    did. Such a task: `check_left_panel` (Impress's panel), or the tree read for a task whose applications are
    all LibreOffice (a task of Thunderbird and Calc reads Thunderbird's part)."""
    if not any(g["type"] == "accessibility_tree" for g in _getters(task)):
        return []
    apps = {app.strip().lower().replace(" ", "_") for app in task.related_apps}
    launched = {_launched(step) for _, step in _steps(task) if step["type"] == "launch"}
    others = any(APP_PROGRAMS.get(a, (a,)) not in (OFFICE, ()) for a in apps) or bool(launched - set(OFFICE))
    office = any(APP_PROGRAMS.get(a) == OFFICE for a in apps) or bool(launched & set(OFFICE))
    needed = "check_left_panel" in task.evaluator.funcs or (office and not others)
    if not needed or office_accessible():
        return []
    return ["getter accessibility_tree reads LibreOffice's windows only through a toolkit plugin that exposes them "
            "to AT-SPI, and this LibreOffice has none (apt-get install libreoffice-gtk3)"]


def _atspi(task: Task, missing: Callable[[], str | None]) -> list[str]:
    """A getter that reads over AT-SPI without PyGObject reads nothing: the terminal getter hands the metric None,
    which scores 0 whatever the agent did. Such a task is not runnable, with what to install."""
    wanted = [g["type"] for g in _getters(task) if g["type"] in ATSPI_GETTERS]
    if not wanted or (problem := missing()) is None:
        return []
    return [f"getter {name} reads {ATSPI_GETTERS[name]} over AT-SPI, which this install cannot: {problem}"
            for name in dict.fromkeys(wanted)]


def _cache(task: Task, cache_dir: Path | None) -> list[str]:
    wanted: list[tuple[str, Path | None]] = []
    reasons = []
    for where, step in _steps(task):
        if step["type"] != "download":
            continue
        files = step.get("parameters", {}).get("files")
        if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("url"), str)
                                                  and isinstance(f.get("path"), str) for f in files):
            reasons.append(f"a download {where} is malformed: `files` must be a list of {{url, path}}")
            continue
        for f in files:
            wanted.append((f"download {f['url']}",
                           download_path(cache_dir, task.id, f["url"], f["path"]) if cache_dir else None))
    for where, step in _steps(task):
        for url, name in step_files(step["type"]):
            wanted.append((f"the {where}'s file {url}", cloud_path(cache_dir, task.id, name) if cache_dir else None))
    for g in _getters(task):
        if g["type"] != "cloud_file":
            continue
        urls, dests = (g.get("path"), g.get("dest")) if g.get("multi") else ([g.get("path")], [g.get("dest")])
        if not isinstance(urls, list) or not isinstance(dests, list) or len(urls) != len(dests) \
                or not all(isinstance(x, str) for x in (*urls, *dests)):
            reasons.append("a cloud_file getter is malformed: `path` and `dest` must be texts (lists of as many "
                           "with `multi`)")
            continue
        for url, dest in zip(urls, dests):
            try:  # a name that leaves the task's cache folder is refused, never looked for
                wanted.append((f"cloud file {url}", cloud_path(cache_dir, task.id, dest) if cache_dir else None))
            except PathEscape as exc:
                reasons.append(f"cloud file {url}: PathEscape: {exc}")
    for what, path in wanted:
        if path is None:
            reasons.append(f"{what} needs the local cache: give --cache DIR (OSWorld's cache layout)")
        elif not path.is_file():
            reasons.append(f"{what} is missing from the cache (looked for {path})")
    return reasons


def _kept_outputs(task: Task) -> Iterator[tuple[str, str, str]]:
    """(where, stdout/stderr, file name) for each command step that keeps its output in the task's cache folder
    (in its home: `conway.tasks.cache.kept_output`), where a `cache_file` getter reads it."""
    for where, step in _steps(task):
        if step["type"] in ("execute", "command"):
            params = step.get("parameters") or {}
            for key in ("stdout", "stderr"):
                if params.get(key):
                    yield where, key, str(params[key])


def _cache_files(task: Task, cache_dir: Path | None) -> list[str]:
    """What a `cache_file` getter needs: its file kept by a step of the task, or else in the local cache; and a
    name for each that stays in the task's cache folder."""
    reasons = []
    written = set()
    for where, key, name in _kept_outputs(task):
        written.add(name)
        if (escape := _escape(name)) is not None:
            reasons.append(f"the {where} keeps its command's {key} in {name!r}: PathEscape: {escape}")
    for g in _getters(task):
        if g["type"] != "cache_file":
            continue
        name = g.get("path")
        if not isinstance(name, str):
            reasons.append("a cache_file getter is malformed: `path` must be a text")
        elif (escape := _escape(name)) is not None:
            reasons.append(f"cache file {name!r}: PathEscape: {escape}")
        elif name in written:
            continue
        elif cache_dir is None:
            reasons.append(f"cache file {name!r} needs the local cache: give --cache DIR (OSWorld's cache layout)")
        elif not cloud_path(cache_dir, task.id, name).is_file():
            reasons.append(f"cache file {name!r} is missing from the cache (looked for "
                           f"{cloud_path(cache_dir, task.id, name)})")
    return reasons


def _escape(name: str) -> str | None:
    """Why `name` cannot name a file of the task's cache folder (it would leave it), or None."""
    try:
        task_file_name(name)
    except PathEscape as exc:
        return str(exc)
    return None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _live_urls(task: Task) -> list[str]:
    """Non-local http(s) URLs the task opens at run time (downloads and cloud files come from the cache)."""
    places: list[Any] = [task.instruction]
    for _, step in _steps(task):
        params = dict(step.get("parameters", {}))
        if step["type"] == "download":
            params.pop("files", None)
        places.append(params)
    for g in _getters(task):
        if g["type"] in RULE_GETTERS:
            continue
        places.append({k: v for k, v in g.items() if not (g["type"] == "cloud_file" and k == "path")})
    found = []
    for text in _strings(places):
        for m in URL.finditer(text):
            url = m.group(0).rstrip(".,;:!?)]}")
            try:
                host = urlsplit(url).hostname or ""
            except ValueError:
                host = ""
            if host not in LOCAL_HOSTS:
                found.append(url)
    return [f"live URL {u}: the task needs the web at run time, and tasks here run offline (tasks run --network "
            "lets the sandbox share this machine's network)"
            for u in dict.fromkeys(found)]


def why_not_runnable(task: Task, *, cache_dir: Path | None, step_types: Collection[str],
                     installed: Callable[[str], bool] = _which, getters: Mapping[str, Any] = GETTERS,
                     metrics: Mapping[str, Any] = METRICS,
                     unsupported: Callable[[str, dict[str, Any]], list[str]] = unsupported_options,
                     importable: Callable[[str], bool] | None = None, network: bool = False,
                     office_accessible: Callable[[], bool] = _office_accessible,
                     atspi: Callable[[], str | None] | None = None,
                     system: Callable[[Task], list[str]] = system_reasons) -> list[str]:
    """Every reason the task cannot run here; an empty list means it can. `importable`: is a module installed
    (default `_importable`, looked up at call time). With `network` (`tasks run --network`: the desktop reaches
    the internet from a network of its own) a task that needs the live web is not held back for it.
    `office_accessible`: does LibreOffice here show its windows to AT-SPI. `atspi`: why this Python cannot read
    AT-SPI, or None (default `desktop_atspi_missing`, looked up at call time: the desktop's readers run in its box). `system`: what the task's commands need of
    the system that the desktop cannot give (`conway.tasks.system_needs`)."""
    extras = _extras(task, importable or _importable)
    if task.format == "conway":
        return extras + ([] if task.evaluator.criteria
                         else ["the task declares no acceptance criteria: nothing would score it"])
    reasons = extras
    for where, step in _steps(task):
        if step["type"] in ACCOUNTS:
            reasons.append(f"{where} type {step['type']} needs {ACCOUNTS[step['type']]} (a third party's, which "
                           "Conway never holds)")
        elif step["type"] not in step_types:
            reasons.append(f"{where} type {step['type']} is not implemented")
    for g in _getters(task):
        if g["type"] in ACCOUNTS:
            reasons.append(f"getter {g['type']} needs {ACCOUNTS[g['type']]} (a third party's, which Conway "
                           "never holds)")
        elif g["type"] not in getters:
            reasons.append(f"getter {g['type']} is not implemented")
    for func, options in zip(task.evaluator.funcs, task.evaluator.options):
        if func not in metrics:
            reasons.append(f"metric {func} is not implemented")
        elif problems := unsupported(func, options):
            reasons.append(f"metric {func}: not supported here: {', '.join(problems)}")
    reasons += _apps(task, installed)
    reasons += _atspi(task, atspi or desktop_atspi_missing)
    reasons += _office_tree(task, office_accessible)
    reasons += system(task)
    reasons += _cache(task, cache_dir)
    reasons += _cache_files(task, cache_dir)
    if network:
        return list(dict.fromkeys(reasons))
    reasons += _live_urls(task) + web_install_reasons(task)
    if task.raw.get("proxy") is True:  # OSWorld's mark for a task that reaches the web (through its proxy)
        reasons.append("the task declares `proxy: true`: it needs the web at run time, and tasks here run offline")
    return list(dict.fromkeys(reasons))
