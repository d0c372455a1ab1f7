"""A task's setup steps on a guest, as OSWorld's `SetupController` runs them: first a check that the server
answers (GET /terminal, up to 20 tries 5 s apart), then each step through its /setup endpoint.

What OSWorld lets pass, this lets pass (a `launch`, `activate_window`, `close_window` or `change_wallpaper`
the server refuses is logged there and the setup goes on: here it is kept in `notes`, which the case's record
shows); what raises there raises here, as one line (`open` answered with an error, an upload refused, an
`execute` the server never answered five times). One deviation: an `execute` step's `until` loop ends after the
setup's command limit (OSWorld's never ends while the server answers). Files a `download` step names come from
the local cache (`conway tasks fetch` fills it): nothing is downloaded at run time.

Steps that need more than the guest server (a browser driven over its DevTools port, accounts, a proxy) are not
in `STEP_TYPES`, so a task that has one is reported not runnable on this provider.
"""

from __future__ import annotations

import posixpath
import re
import time
from typing import Any, Callable

from conway.desktops.base import pause
from conway.desktops.guest_client import OPEN_FILE_TIMEOUT_S, UNBOUNDED_TIMEOUT_S, GuestClient, GuestError

SERVER_CHECK_TRIES = 20
SERVER_CHECK_INTERVAL_S = 5.0
"""SetupController.setup's MAX_RETRIES and its sleep between tries of GET /terminal."""
EXECUTE_FAILURES = 5
EXECUTE_RETRY_S = 0.3
"""`_execute_setup`: an `until` loop ends after 5 failed requests; 0.3 s between its tries."""
MAX_SLEEP_S = 600.0
"""A `sleep` step longer than this is refused (a typo must not hold a suite for hours)."""


class GuestSetupError(GuestError):
    """A setup step that failed on the guest; one line naming the step."""


class GuestSetup:
    """The steps of one task on one guest; `screen` fills `{SCREEN_WIDTH}` and friends as OSWorld does."""

    def __init__(self, client: GuestClient, *, task_id: str, cache_dir: Any, screen: tuple[int, int],
                 sleep: Callable[[float], Any] = pause, check_tries: int = SERVER_CHECK_TRIES,
                 check_interval_s: float = SERVER_CHECK_INTERVAL_S):
        self.client = client
        self.task_id = task_id
        self.cache_dir = cache_dir
        self.screen = screen
        self._sleep = sleep
        self.check_tries = check_tries
        self.check_interval_s = check_interval_s
        self.notes: list[str] = []
        """What the guest refused that OSWorld lets pass (one line each)."""
        self.command_timeout_s = 60.0

    def run(self, steps: list[Any], where: str = "setup step", *, command_timeout_s: float = 60.0) -> None:
        """`command_timeout_s` bounds an `execute` step's `until` loop, which OSWorld's runs without end."""
        self.command_timeout_s = command_timeout_s
        if not isinstance(steps, list):
            raise GuestSetupError(f"setup steps must be a list, not {type(steps).__name__}")
        if not self.client.reachable(self.check_tries, self.check_interval_s):
            raise GuestSetupError(f"the guest server at {self.client.url} did not answer GET /terminal "
                                  f"({self.check_tries} tries)")
        for i, step in enumerate(steps, 1):
            if not isinstance(step, dict) or not isinstance(step.get("type"), str):
                raise GuestSetupError(f"{where} {i}: not a step ({{type, parameters}})")
            kind, params = step["type"], step.get("parameters") or {}
            run = STEPS.get(kind)
            if run is None:
                raise GuestSetupError(f"{where} {i} ({kind}): not a step this provider runs")
            if not isinstance(params, dict):
                raise GuestSetupError(f"{where} {i} ({kind}): parameters must be an object")
            try:
                run(self, params)
            except GuestSetupError as exc:
                raise GuestSetupError(f"{where} {i} ({kind}): {exc}") from None
            except (GuestError, OSError, KeyError, TypeError, ValueError) as exc:
                raise GuestSetupError(f"{where} {i} ({kind}): {type(exc).__name__}: {exc}") from None

    # --- the steps -------------------------------------------------------------------------------------

    def _note(self, what: str, answer: Any) -> None:
        if answer.status != 200:
            self.notes.append(f"{what}: the guest answered HTTP {answer.status} (OSWorld goes on)")

    def download(self, p: dict[str, Any]) -> None:
        from conway.tasks.cache import download_path

        for f in _list(p, "files"):
            url, path = f.get("url"), f.get("path")
            if not isinstance(url, str) or not isinstance(path, str) or not url or not path:
                raise GuestSetupError(f"invalid url ({url!r}) or path ({path!r})")
            if self.cache_dir is None:
                raise GuestSetupError(f"{url} is not cached: give --cache (conway tasks fetch fills it)")
            source = download_path(self.cache_dir, self.task_id, url, path)
            if not source.is_file():
                raise GuestSetupError(f"{url} is not in the cache ({source}); run conway tasks fetch")
            answer = self.client.upload(path, source.read_bytes(), posixpath.basename(path))
            if answer.status != 200:
                raise GuestSetupError(f"uploading {path} was refused: HTTP {answer.status}")

    def open(self, p: dict[str, Any]) -> None:
        path = _text(p, "path")
        answer = self.client.post_json("/setup/open_file", {"path": path}, timeout=OPEN_FILE_TIMEOUT_S)
        if answer.status != 200:
            raise GuestSetupError(f"opening {path!r} failed: HTTP {answer.status}")

    def launch(self, p: dict[str, Any]) -> None:
        command, shell = p.get("command"), bool(p.get("shell", False))
        if not command:
            raise GuestSetupError("empty command to launch")
        if not shell and isinstance(command, str) and len(command.split()) > 1:
            command = command.split()  # as OSWorld does, with a warning
        self._note(f"launch {command!r:.80}", self.client.post_json("/setup/launch",
                                                                      {"command": command, "shell": shell}))

    def execute(self, p: dict[str, Any]) -> None:
        command, shell = p.get("command"), bool(p.get("shell", False))
        if not command:
            raise GuestSetupError("empty command to execute")
        command = self._screen_values(command)
        until = p.get("until") or {}
        failures = 0
        deadline = time.monotonic() + self.command_timeout_s
        while True:
            try:
                result = self.client.execute(command, shell=shell, path="/setup/execute",
                                             timeout=UNBOUNDED_TIMEOUT_S)
            except GuestError:
                result, failures = None, failures + 1
            if result is not None:
                self._keep(p.get("stdout"), result.output)
                self._keep(p.get("stderr"), result.error)
            done = not until or (result is not None and (
                ("returncode" in until and result.returncode == until["returncode"])
                or ("stdout" in until and str(until["stdout"]) in result.output)
                or ("stderr" in until and str(until["stderr"]) in result.error)))
            if done:
                return
            if failures >= EXECUTE_FAILURES:
                raise GuestSetupError(f"the guest did not run {command!r:.80} ({failures} failed requests)")
            if time.monotonic() > deadline:
                raise GuestSetupError(f"{command!r:.80} did not reach its `until` {until!r:.80} within "
                                      f"{self.command_timeout_s:g} s")
            self._sleep(EXECUTE_RETRY_S)

    def sleep(self, p: dict[str, Any]) -> None:
        seconds = p.get("seconds")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 <= seconds <= MAX_SLEEP_S:
            raise GuestSetupError(f"seconds must be a number from 0 to {MAX_SLEEP_S:g} (got {seconds!r})")
        self._sleep(float(seconds))

    def activate_window(self, p: dict[str, Any]) -> None:
        self._window("/setup/activate_window", p)

    def close_window(self, p: dict[str, Any]) -> None:
        self._window("/setup/close_window", p)

    def change_wallpaper(self, p: dict[str, Any]) -> None:
        path = _text(p, "path")
        self._note(f"change_wallpaper {path!r}", self.client.post_json("/setup/change_wallpaper", {"path": path}))

    # --- helpers ------------------------------------------------------------------------------------------

    def _window(self, endpoint: str, p: dict[str, Any]) -> None:
        name = _text(p, "window_name")
        payload = {"window_name": name, "strict": bool(p.get("strict", False)), "by_class": bool(p.get("by_class", False))}
        self._note(f"{endpoint.rsplit('/', 1)[1]} {name!r}", self.client.post_json(endpoint, payload))

    def _screen_values(self, command: Any) -> Any:
        w, h = self.screen
        values = {"{CLIENT_PASSWORD}": "", "{SCREEN_WIDTH_HALF}": str(w // 2), "{SCREEN_HEIGHT_HALF}": str(h // 2),
                  "{SCREEN_WIDTH}": str(w), "{SCREEN_HEIGHT}": str(h)}

        def fill(text: str) -> str:
            for key, value in values.items():
                text = text.replace(key, value)
            return text

        if isinstance(command, str):
            return fill(command)
        if isinstance(command, list) and all(isinstance(w, str) for w in command):
            return [fill(w) for w in command]
        raise GuestSetupError("command must be a string or a list of strings")

    def _keep(self, name: Any, text: str) -> None:
        """An `execute` step's saved stdout/stderr, into the task's cache folder as OSWorld keeps it."""
        if not name:
            return
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", name) or name in (".", ".."):
            raise GuestSetupError(f"stdout/stderr must be a plain file name (got {name!r:.80})")
        if self.cache_dir is None:
            raise GuestSetupError("saving a command's output needs --cache")
        folder = self.cache_dir / self.task_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def _list(p: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = p.get(key)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise GuestSetupError(f"{key} must be a list of objects")
    return value


def _text(p: dict[str, Any], key: str) -> str:
    value = p.get(key)
    if not isinstance(value, str) or not value:
        raise GuestSetupError(f"{key} must be a non-empty string (got {value!r:.80})")
    return value


STEPS: dict[str, Callable[[GuestSetup, dict[str, Any]], None]] = {
    "download": GuestSetup.download, "open": GuestSetup.open, "launch": GuestSetup.launch,
    "execute": GuestSetup.execute, "command": GuestSetup.execute, "sleep": GuestSetup.sleep,
    "activate_window": GuestSetup.activate_window, "close_window": GuestSetup.close_window,
    "change_wallpaper": GuestSetup.change_wallpaper,
}
STEP_TYPES = frozenset(STEPS)
"""The setup steps a guest runs here (for `why_not_runnable`)."""
