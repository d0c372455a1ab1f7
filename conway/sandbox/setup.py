"""OSWorld's setup steps (a task file's `config` list), run against a `TaskEnv` (a disposable desktop).

Each step is `{"type": …, "parameters": {…}}` with OSWorld's parameter names; every one is bounded in time,
and anything that goes wrong is one `SetupError` whose message is one line naming the step. Nothing here
reaches the network: `download` copies from the local cache (OSWorld's layout, `conway.tasks.cache`).
After `launch`, `open` and `chrome_open_tabs` the step waits (`window_wait_s`) for a new window on the
desktop's display, because a task whose application never showed up cannot be done by anyone; a task run
stretches that wait with the machine's load (`SetupLimits.scale_with_load`).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shlex
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable

from conway.sandbox import windows
from conway.sandbox.environment import SYSTEM_PATH
from conway.sandbox.guest import GUEST_PROGRAMS
from conway.tasks.cache import HISTORY_FILE, HISTORY_URL, cloud_path, download_path, kept_output
from conway.tasks.env import PathEscape, TaskEnv

__all__ = ["STEP_TYPES", "SetupError", "SetupLimits", "run_setup", "run_step"]


class SetupError(Exception):
    """A setup step that failed or cannot run here; the message is one line."""


@dataclass(frozen=True)
class SetupLimits:
    window_wait_s: float = 10.0
    """How long `launch`/`open`/`chrome_open_tabs` wait for the application's window."""
    command_timeout_s: float = 60.0
    """The bound on one `execute`/`command` (all of its `until` retries together)."""
    max_sleep_s: float = 120.0
    """A `sleep` step longer than this is refused (a typo must not hold a suite for hours)."""
    screen: tuple[int, int] = (1280, 800)
    """What `{SCREEN_WIDTH}` and friends in a command stand for."""
    scale_with_load: bool = False
    """Wait for windows longer on a loaded machine (`load_factor`): an application that starts in 5 s alone
    took over 30 s while training ran, which is the machine's doing, not the task's nor the model's."""
    notes: list[str] | None = None
    """Where a step OSWorld lets fail quietly says so (activate_window finding no window): one line each; None:
    such a step fails as any other (a SetupError)."""

    def wait_for(self, probe: Callable[[], Any], *, scale: float = 1.0) -> tuple[Any, str]:
        """Poll `probe` every 0.1 s until it answers (anything but None or empty): (its answer, "") as soon as it
        does, so an idle machine waits no longer than the application takes; else (None, how long it waited).
        The bound is `window_wait_s` × `scale`, stretched (with `scale_with_load`) by the highest load seen
        during the wait, sampled each second: a machine that grows busy while the application starts (the
        1-minute load lags) is waited for, up to MAX_LOAD_FACTOR."""
        base = self.window_wait_s * scale
        start = sampled = time.monotonic()
        factor = load_factor() if self.scale_with_load else 1.0
        while True:
            found = probe()
            if found:
                return found, ""
            now = time.monotonic()
            if self.scale_with_load and now - sampled >= 1.0:
                factor, sampled = max(factor, load_factor()), now
            if now - start >= base * factor:
                return None, (f"waited {base:g} s" if factor <= 1.0 else
                              f"waited {base * factor:.0f} s: {base:g} s × {factor:.1f} for the machine's load")
            time.sleep(0.1)


MAX_LOAD_FACTOR = 8.0
"""The most a window wait is stretched for load (a machine busier than this is reported, not waited out): VLC's
first window missed 150–190 s at a load of 10 on 2 cores under the 4 this was; the bound costs only a launch that
truly fails, never one whose window shows."""


def load_factor() -> float:
    """The 1-minute load average per CPU this process may use, between 1 and MAX_LOAD_FACTOR."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average on this platform: no stretch
        return 1.0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(MAX_LOAD_FACTOR, max(1.0, load / max(1, cpus)))


def run_setup(steps: Any, env: TaskEnv, limits: SetupLimits | None = None) -> None:
    """Run `steps` in order; the first that fails raises SetupError (`setup step 2 (open): …`)."""
    if not isinstance(steps, list):
        raise SetupError(f"setup steps must be a list, not {type(steps).__name__}")
    for i, step in enumerate(steps, 1):
        _one(step, env, limits or SetupLimits(), f"setup step {i}")


def run_step(step: Any, env: TaskEnv, limits: SetupLimits | None = None) -> None:
    """One step (the evaluator's `StepRunner`, for `postconfig`); SetupError (`launch: …`) when it fails."""
    _one(step, env, limits or SetupLimits(), "")


def _one(step: Any, env: TaskEnv, limits: SetupLimits, where: str) -> None:
    kind = step.get("type") if isinstance(step, dict) else None
    label = kind if isinstance(kind, str) else ""
    where = (f"{where} ({label})" if label else where) if where else (label or "setup step")
    if not isinstance(step, dict) or not isinstance(kind, str):
        raise SetupError(f"{where}: each step is an object with a \"type\" (got {step!r:.80})")
    params = step.get("parameters", {})
    if not isinstance(params, dict):
        raise SetupError(f"{where}: \"parameters\" must be an object")
    run = _STEPS.get(kind)
    if run is None:
        raise SetupError(f"{where}: unknown setup step type {kind!r} (known: {', '.join(sorted(_STEPS))})")
    try:
        run(env, limits, params)
    except (SetupError, PathEscape) as exc:
        raise SetupError(f"{where}: {exc}") from None
    except TypeError as exc:  # a parameter of the wrong kind
        raise SetupError(f"{where}: bad parameters {sorted(params)}: {exc}") from None
    except OSError as exc:  # a file the step copies or writes
        raise SetupError(f"{where}: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "))


def _need(params: dict[str, Any], name: str, kinds: type | tuple[type, ...]) -> Any:
    value = params.get(name)
    if not isinstance(value, kinds) or value in ("", []):
        raise SetupError(f"parameter {name!r} is missing or not a {_kind_names(kinds)}")
    return value


def _kind_names(kinds: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))


def _argv(command: str | list[str], shell: bool) -> str | list[str]:
    # as OSWorld: a string without shell=True is split on spaces
    if isinstance(command, list) and not all(isinstance(c, str) for c in command):
        raise SetupError(f"command must be a string or a list of strings (got {command!r:.80})")
    return command if shell or isinstance(command, list) else command.split()


LAUNCH_TRIES = 3
"""How often a program that ends in error before showing a window is started (an X server starved of CPU on a
loaded machine refused an xmessage's connection, "Can't open display", about one start in three at a load of
5 on 2 cores: the program was gone at once and its window could never come, however long it was waited for)."""


def _new_window(env: TaskEnv, limits: SetupLimits, before: set[int], scale: float = 1.0,
                pid: int | None = None) -> tuple[int | None, str, int | None]:
    """(the first window mapped since `before` (the lowest id), how long it was waited for, the exit status of
    the program `pid` when it ended in error first), waited for as `SetupLimits.wait_for` says. A program that
    ends with status 0 may have handed its work to one already running: its window is still waited for."""
    ended = getattr(env, "spawned_exit", None) if isinstance(pid, int) else None
    failed: list[int] = []

    def probe() -> set[int] | None:
        new = set(windows.visible_windows(env.display)) - set(before)
        if new or ended is None:
            return new
        status = ended(pid)
        if status:
            failed.append(status)
            return {-1}
        return None
    found, waited = limits.wait_for(probe, scale=scale)
    if failed:
        return None, waited, failed[0]
    return (min(found) if found else None), waited, None


def _started_window(env: TaskEnv, limits: SetupLimits, what: str, start: Callable[[], int | None],
                    scale: float = 1.0) -> None:
    for _ in range(LAUNCH_TRIES):
        before = windows.visible_windows(env.display)
        pid = start()
        window, waited, status = _new_window(env, limits, before, scale, pid)
        if window is not None:
            return
        said = getattr(env, "last_words", {}).get(pid) if isinstance(pid, int) else None
        words = f"; it said: {said}" if said else ""
        if status is None:
            raise SetupError(f"the application never opened its window ({what}; {waited})")
        if limits.notes is not None:  # said in the case's report: how often the machine refused a start
            limits.notes.append(f"launch: the program ended with status {status} before showing a window; "
                                f"started again ({what}{words})")
        time.sleep(1.0)
    raise SetupError(f"the application ended with status {status} before showing a window, {LAUNCH_TRIES} times "
                     f"({what}{words})")


NO_WINDOW = frozenset({"socat"})
"""Programs a `launch` step starts that open no window (OSWorld's `socat` forwarding Chrome's DevTools port):
started, not waited for."""
KILLERS = frozenset({"pkill", "killall"})
SLOW_STARTS = {"thunderbird": 3.0, "gimp": 2.0, "libreoffice": 2.0, "soffice": 2.0, "vlc": 2.0, "google-chrome": 2.0,
               "google-chrome-stable": 2.0, "chromium": 2.0}
"""Applications whose first start (a new profile in the empty home) takes longer: their window wait × this
(Thunderbird's first window came after 10–15 s on a busy 2-core machine; VLC's, which builds its settings and
scans its plugins in the fresh home, missed 30 s once in three runs while the full suite loaded both cores;
Chromium's, building its profile, came late under the same load)."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


def installed(program: str) -> bool:
    """On the desktop's PATH: the system's programs, and the desktop's own (`conway.sandbox.guest`)."""
    return program in GUEST_PROGRAMS or shutil.which(program, path=SYSTEM_PATH) is not None


def _words(command: str | list[str]) -> list[str]:
    if isinstance(command, list):
        return [str(w) for w in command]
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _launch(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    command, shell = _need(p, "command", (str, list)), bool(p.get("shell", False))
    argv = _argv(command, shell)
    words = _words(command)
    assignments = 0
    while assignments < len(words) and _ASSIGNMENT.fullmatch(words[assignments]):  # VLC_VERBOSE=-1 vlc …
        assignments += 1
    program = posixpath.basename(words[assignments]) if assignments < len(words) else None
    if assignments and not shell and isinstance(argv, list):
        argv = ["/usr/bin/env", *argv]  # as a shell would: the variables for the program
    if program in KILLERS:
        _kill(env, program, words[assignments + 1:], argv, shell)
        return
    if program and "/" not in words[assignments] and not installed(program):
        raise SetupError(f"{program} is not installed (not on the desktop's PATH)")  # not a wait for nothing
    if program in NO_WINDOW:
        env.spawn(argv, shell=shell)
        return
    _started_window(env, limits, f"launched {command!r:.80}", lambda: env.spawn(argv, shell=shell),
                    SLOW_STARTS.get(program or "", 1.0))


def _kill(env: TaskEnv, program: str, args: list[str], argv: str | list[str], shell: bool) -> None:
    """`pkill NAME` / `killall NAME` on the desktop: each command has a pid namespace of its own, so the desktop
    ends its matching processes from outside (`DisposableDesktop.kill_matching`); an environment without that
    runs the command as it is."""
    names = [a for a in args if not a.startswith("-")]
    kill_matching = getattr(env, "kill_matching", None)
    if not names or kill_matching is None:
        env.run(argv, shell=shell, timeout_s=10)
        return
    shown = windows.visible_windows(env.display)
    try:
        killed = sum(kill_matching(f"^{re.escape(name)}$" if program == "killall" else name) for name in names)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    # until the X server has dropped their windows: a relaunch's first window may get the very id the killed
    # client's had (X reuses a client's id range), and would then not look new to the launch that follows
    deadline = time.monotonic() + 5.0
    while killed and shown and windows.visible_windows(env.display) >= shown and time.monotonic() < deadline:
        time.sleep(0.1)


def _open(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    path = _need(p, "path", str)
    if not env.host_path(path).exists():
        raise SetupError(f"cannot open {path}: no such file in the task's home")
    _started_window(env, limits, f"opened {path}", lambda: env.spawn(["xdg-open", path]))


def _screen_values(command: str | list[str], limits: SetupLimits) -> str | list[str]:
    w, h = limits.screen
    values = {"{SCREEN_WIDTH}": str(w), "{SCREEN_HEIGHT}": str(h), "{SCREEN_WIDTH_HALF}": str(w // 2),
              "{SCREEN_HEIGHT_HALF}": str(h // 2), "{CLIENT_PASSWORD}": ""}  # no sudo in here: no password

    def fill(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text
    return fill(command) if isinstance(command, str) else [fill(c) for c in command]


def _execute(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    command, shell = _need(p, "command", (str, list)), bool(p.get("shell", False))
    argv = _argv(_screen_values(command, limits), shell)
    until = p.get("until") or {}
    if not isinstance(until, dict):
        raise SetupError("parameter 'until' must be an object (returncode, stdout or stderr)")
    deadline = time.monotonic() + limits.command_timeout_s
    presses_terminal = bool(_TERMINAL_SHORTCUT.search(command if isinstance(command, str) else " ".join(command)))
    shown = windows.visible_windows(env.display) if presses_terminal else set()
    while True:
        left = deadline - time.monotonic()
        result = env.run(argv, shell=shell, timeout_s=max(left, 0.1))
        if result.timed_out:
            raise SetupError(f"{command!r:.80} did not finish within {limits.command_timeout_s:g} s "
                             "(killed with its process group)")
        done = not until or ("returncode" in until and result.returncode == until["returncode"]) \
            or ("stdout" in until and str(until["stdout"]) in result.stdout) \
            or ("stderr" in until and str(until["stderr"]) in result.stderr)
        if done:
            break
        if time.monotonic() + 0.3 >= deadline:
            raise SetupError(f"{command!r:.80} never met its 'until' {until} within {limits.command_timeout_s:g} s")
        time.sleep(0.3)
    # the desktop's PyAutoGUI opens the terminal on Ctrl+Alt+T as GNOME would (inside the box); keys pressed some
    # other way opened nothing: the terminal is opened after the step
    if presses_terminal and not (windows.visible_windows(env.display) - shown):
        _open_terminal(env, limits)
    for key, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if p.get(key):  # OSWorld keeps it in the task's cache folder for a cache_file getter: here, in its home
            _write_in_home(env, kept_output(str(p[key])), text)  # a name leaving that folder: PathEscape


def _write_in_home(env: TaskEnv, guest: str, text: str) -> None:
    """Write `text` to `guest`, a path in the task's home, following no link on the way (`TaskEnv.write_file`: a
    process on the desktop may swap any folder of the path for a symlink at any moment)."""
    try:
        env.write_file(guest, text.encode("utf-8"))  # PathEscape for a path that leaves the home, or a link on it
    except OSError as exc:
        raise SetupError(f"cannot write {guest}: {exc.strerror or exc} (links in the home are not followed)") from None


_TERMINAL_SHORTCUT = re.compile(r"""hotkey\(\s*\[?\s*['"]ctrl['"]\s*,\s*['"]alt['"]\s*,\s*['"]t['"]""")
"""A step pressing Ctrl+Alt+T (`pyautogui.hotkey('ctrl', 'alt', 't')`): GNOME's shortcut for a terminal."""


def _open_terminal(env: TaskEnv, limits: SetupLimits) -> None:
    """What GNOME does on Ctrl+Alt+T, which OSWorld's steps press to open a terminal: the desktop has no GNOME to
    catch the keys, so the step's terminal (`TERMINAL`, whose title says Terminal) is started for it."""
    from conway.sandbox.desktop import TERMINAL

    if shutil.which(TERMINAL, path=SYSTEM_PATH) is None:
        raise SetupError(f"the step presses Ctrl+Alt+T for a terminal, and {TERMINAL} is not installed")
    before = windows.visible_windows(env.display)
    window, waited, _ = _new_window(env, limits, before, pid=env.spawn([TERMINAL]))
    if window is None:
        raise SetupError(f"the application never opened its window ({TERMINAL} for Ctrl+Alt+T; {waited})")
    windows.activate(env.display, window)  # GNOME focuses the terminal it opens: the keys that follow go there


def _sleep(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    seconds = p.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise SetupError(f"parameter 'seconds' must be a number of seconds (got {seconds!r})")
    if seconds > limits.max_sleep_s:
        raise SetupError(f"a sleep of {seconds:g} s is longer than the {limits.max_sleep_s:g} s allowed")
    time.sleep(seconds)


VM_WINDOW_NAMES = {"google chrome": "Chromium", "google-chrome": "chromium"}
"""What OSWorld's VM calls a window (lower case) → what the same application's window is called here: the VM's
Google Chrome is Chromium on this desktop (its `google-chrome`), whose titles end in "- Chromium" and whose
WM_CLASS is `chromium`, where the VM's end in "- Google Chrome" (class `google-chrome`)."""


def window_names(name: str) -> list[str]:
    """`name` as a step gives it, then as the same window is called on this desktop (`VM_WINDOW_NAMES`)."""
    names = [name]
    for theirs, ours in VM_WINDOW_NAMES.items():
        if theirs in name.lower():
            names.append(re.sub(re.escape(theirs), ours, name, flags=re.IGNORECASE))
    return list(dict.fromkeys(names))


def _find(display: str, name: str, *, strict: bool, by_class: bool) -> list[int]:
    """OSWorld's `wmctrl -a NAME` (`-x`: by class, `-F`: the whole name): the title (or class) containing the
    name in any case, tried under each name the window has here."""
    for candidate in window_names(name):
        found = windows.find_windows(display, candidate, strict=strict, by_class=by_class)
        if found:
            return found
    return []


def _activate_window(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    name = _need(p, "window_name", str)
    strict, by_class = bool(p.get("strict", False)), bool(p.get("by_class", False))
    found, waited = limits.wait_for(lambda: _find(env.display, name, strict=strict, by_class=by_class))
    if not found:
        what = "class" if by_class else "title"
        missing = f"no window whose {what} {'is' if strict else 'contains'} {name!r} ({waited})"
        if limits.notes is None:
            raise SetupError(missing)
        # OSWorld's VM server runs `wmctrl -a` and answers 200 whatever it found, and its setup only logs a
        # failure: the task goes on (os 4783cc41 activates a Terminal no step opened)
        limits.notes.append(f"activate_window: {missing}; the setup went on, as OSWorld's does")
        return
    if not windows.activate(env.display, found[0]):
        raise SetupError(f"the window {name!r} could not be raised and focused")


def _download(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    files = _need(p, "files", list)
    for f in files:
        if not isinstance(f, dict) or not isinstance(f.get("url"), str) or not isinstance(f.get("path"), str):
            raise SetupError(f"each file is an object with \"url\" and \"path\" (got {f!r:.80})")
        url, path = f["url"], f["path"]
        if env.cache_dir is None:
            raise SetupError(f"{url} needs a local cache (--cache DIR); files are never fetched from the network")
        source = download_path(env.cache_dir, env.task_id, url, path)
        if not source.is_file():
            raise SetupError(f"{url} is not in the local cache (expected {source})")
        env.write_file(path, source.read_bytes())  # inside the home, no link followed (PathEscape otherwise)


def _chrome_open_tabs(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    urls = _need(p, "urls_to_open", list)
    if not all(isinstance(u, str) for u in urls):
        raise SetupError("parameter 'urls_to_open' must be a list of strings")
    if shutil.which("chromium") is None:
        raise SetupError("chrome_open_tabs needs Chromium, which is not installed (Debian: apt-get install chromium)")
    # its own sandbox cannot nest inside bubblewrap's namespaces, and it refuses root without --no-sandbox
    argv = ["chromium", "--no-sandbox", "--no-first-run", "--no-default-browser-check", "--disable-gpu",
            "--password-store=basic", *urls]
    _started_window(env, limits, "chromium", lambda: env.spawn(argv))


def _close_window(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    """OSWorld's `close_window`: the first window by title (or class) closed as its close button would."""
    name = _need(p, "window_name", str)
    found = _find(env.display, name, strict=bool(p.get("strict", False)), by_class=bool(p.get("by_class", False)))
    if not found:
        raise SetupError(f"no window {name!r} to close")
    if not windows.close(env.display, found[0]):
        raise SetupError(f"the window {name!r} could not be closed")


def _chrome_close_tabs(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    """OSWorld's `chrome_close_tabs`: for each URL, the first open tab at an equal URL is closed (DevTools)."""
    from conway.tasks import devtools
    from conway.tasks.metrics.browser import same_url
    urls = _need(p, "urls_to_close", list)
    time.sleep(min(5.0, limits.max_sleep_s))  # as OSWorld: the browser finishes starting first
    try:
        pages = devtools.page_targets(env)
        closing = []
        for url in urls:
            match = next((t for t in pages if t not in closing and same_url(str(t.get("url", "")), str(url))), None)
            if match is not None:
                closing.append(match)
        devtools.close_tabs(env, [t["id"] for t in closing])
    except devtools.DevToolsError as exc:
        raise SetupError(str(exc)) from None


CHROME_EPOCH = datetime(1601, 1, 1)


def _update_browse_history(env: TaskEnv, limits: SetupLimits, p: dict[str, Any]) -> None:
    """OSWorld's `update_browse_history`: its empty history database with each {url, title,
    visit_time_from_now_in_seconds} added as one visit, put where the browser's profile keeps `History`."""
    items = _need(p, "history", list)
    if env.cache_dir is None or not cloud_path(env.cache_dir, env.task_id, HISTORY_FILE).is_file():
        raise SetupError(f"the empty history database ({HISTORY_URL}) is not in the local cache: conway tasks fetch")
    # built on this side in a private folder, then written into the home (never opened there: the box owns it)
    with tempfile.TemporaryDirectory(prefix="conway-history-") as scratch:
        target = Path(scratch) / "History"
        shutil.copyfile(cloud_path(env.cache_dir, env.task_id, HISTORY_FILE), target)
        _add_visits(target, items)
        env.write_file("/home/user/.config/google-chrome/Default/History", target.read_bytes())  # OSWorld's profile


def _add_visits(target: Path, items: list[Any]) -> None:
    with contextlib.closing(sqlite3.connect(target)) as db, db:
        for item in items:
            when = datetime.now() - timedelta(seconds=item["visit_time_from_now_in_seconds"])
            stamp = int((when - CHROME_EPOCH).total_seconds() * 1_000_000)
            row = db.execute("INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                             "VALUES (?, ?, 1, 0, ?, 0)", (item["url"], item["title"], stamp))
            db.execute("INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                       "VALUES (?, ?, 0, 805306368, 0, 0)", (row.lastrowid, stamp))


_STEPS: dict[str, Callable[[TaskEnv, SetupLimits, dict[str, Any]], None]] = {
    "launch": _launch, "open": _open, "execute": _execute, "command": _execute, "sleep": _sleep,
    "activate_window": _activate_window, "download": _download, "chrome_open_tabs": _chrome_open_tabs,
    "close_window": _close_window, "chrome_close_tabs": _chrome_close_tabs,
    "update_browse_history": _update_browse_history,
}

STEP_TYPES = frozenset(_STEPS)
"""The step types this sandbox runs; a task with any other is not runnable here."""
