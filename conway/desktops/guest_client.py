"""A client of OSWorld's guest server (`desktop_env/server/main.py`), speaking to it as OSWorld's `PythonController`
and `SetupController` do: the same endpoints and payloads, three tries five seconds apart, the same timeouts.

The guest is hostile by default (whatever runs inside a desktop may be): its answers are data, read strictly.
Every body is read up to a cap, JSON must have the shape the protocol gives it (a wrong type is an error, never
coerced), a redirect is never followed (it would take an address from inside), nothing it names (a file name
in a header, a path) is used on this machine. Network failures and protocol errors end as `GuestError`, one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

import httpx

from conway.desktops.base import DesktopError, pause

RETRY_TIMES = 3
RETRY_INTERVAL_S = 5.0
"""PythonController's `retry_times` and `retry_interval`."""
SCREENSHOT_TIMEOUT_S = 10.0
EXECUTE_TIMEOUT_S = 120.0
"""PythonController's timeouts for /screenshot and /execute (the server bounds a command at 120 s too)."""
OPEN_FILE_TIMEOUT_S = 1810.0
UPLOAD_TIMEOUT_S = 600.0
UNBOUNDED_TIMEOUT_S = 300.0
"""OSWorld sends /accessibility, /terminal, /file and most /setup calls without a timeout; here they get this one,
so that a guest that never answers cannot hold a run for ever."""
PYTHON_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"
"""PythonController's `pkgs_prefix`: how an action's pyautogui code is run on the guest."""

MAX_IMAGE_BYTES = 64 << 20
MAX_TEXT_BYTES = 64 << 20
MAX_FILE_BYTES = 1 << 30
MAX_SMALL_BYTES = 1 << 20


class GuestError(DesktopError):
    """The guest server did not answer as the protocol says (unreachable, an error status, a malformed body);
    `status`: the last HTTP status it answered with, when it answered at all."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str


@dataclass(frozen=True)
class Executed:
    """/execute's answer: what the command printed and how it ended (returncode None: the server's error)."""

    output: str
    error: str
    returncode: int | None


def check_url(url: str) -> str:
    """A guest server's base address as the user gave it: http(s), a host, no credentials, no query; its
    trailing slash dropped. UserError-worthy problems raise GuestError with one line."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GuestError(f"the guest server's address must be http(s)://HOST:PORT (got {url!r})")
    if parts.username or parts.password or parts.query or parts.fragment or parts.path not in ("", "/"):
        raise GuestError(f"the guest server's address takes no credentials, path or query (got {url!r})")
    return f"{parts.scheme}://{parts.netloc}"


class GuestClient:
    """One guest server. `retry_interval_s` and `sleep` are OSWorld's by default (tests shorten them)."""

    def __init__(self, url: str, *, retry_times: int = RETRY_TIMES, retry_interval_s: float = RETRY_INTERVAL_S,
                 sleep: Callable[[float], Any] = pause, transport: httpx.BaseTransport | None = None):
        self.url = check_url(url)
        self.retry_times = retry_times
        self.retry_interval_s = retry_interval_s
        self._sleep = sleep
        # trust_env off: the address is the user's, not a proxy's from the environment; no redirects: an answer
        # never picks where the next request goes
        self._http = httpx.Client(base_url=self.url, follow_redirects=False, trust_env=False, transport=transport)

    def close(self) -> None:
        self._http.close()

    # --- one request ---------------------------------------------------------------------------------

    def request(self, method: str, path: str, *, timeout: float, cap: int, **kwargs: Any) -> Answer:
        """One request, its body read up to `cap` bytes; GuestError when it cannot be made or the body is larger."""
        try:
            with self._http.stream(method, path, timeout=timeout, **kwargs) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > cap:
                        raise GuestError(f"{method} {path}: the guest's answer is over {cap} bytes")
                return Answer(response.status_code, bytes(body), response.headers.get("content-type", ""))
        except httpx.TimeoutException as exc:
            raise GuestTimeout(f"{method} {path}: no answer within {timeout:g} s ({type(exc).__name__})") from None
        except httpx.ConnectError as exc:
            raise GuestUnreachable(f"{method} {path}: cannot connect to {self.url}: {exc}".rstrip(": ")) from None
        except httpx.HTTPError as exc:
            raise GuestError(f"{method} {path}: {type(exc).__name__}: {exc}".rstrip(": ")) from None

    def _tries(self, method: str, path: str, *, timeout: float, cap: int, stop_on_timeout: bool = False,
               ok: Callable[[Answer], bool] = lambda a: a.status == 200, **kwargs: Any) -> Answer:
        """PythonController's loop: up to `retry_times` tries, `retry_interval_s` apart, until an answer is `ok`;
        a read timeout ends the tries at once where OSWorld's does (/execute, /run_python)."""
        last, status, unreachable = "no try made", None, True
        for attempt in range(self.retry_times):
            try:
                answer = self.request(method, path, timeout=timeout, cap=cap, **kwargs)
                if ok(answer):
                    return answer
                status, unreachable = answer.status, False
                last = f"HTTP {answer.status}" + (f": {_said(answer)}" if _said(answer) else "")
            except GuestTimeout as exc:
                if stop_on_timeout:
                    raise
                last, unreachable = str(exc), False
            except GuestUnreachable as exc:
                last = str(exc)
            except GuestError as exc:
                last, unreachable = str(exc), False
            if attempt + 1 < self.retry_times:
                self._sleep(self.retry_interval_s)
        said = f"{method} {path} failed {self.retry_times} time(s): {last}"
        raise GuestUnreachable(said) if unreachable else GuestError(said, status)

    # --- the controller's calls ------------------------------------------------------------------------

    def screenshot(self) -> bytes:
        """GET /screenshot: PNG (or JPEG) bytes, checked by their magic as OSWorld checks them."""
        answer = self._tries("GET", "/screenshot", timeout=SCREENSHOT_TIMEOUT_S, cap=MAX_IMAGE_BYTES,
                             ok=lambda a: a.status == 200 and _is_image(a.body))
        return answer.body

    def accessibility_tree(self) -> str:
        """GET /accessibility → its `AT` (the XML as the server wrote it)."""
        answer = self._tries("GET", "/accessibility", timeout=UNBOUNDED_TIMEOUT_S, cap=MAX_TEXT_BYTES)
        return _field(answer, "AT", str, "/accessibility")

    def terminal_output(self) -> str | None:
        """GET /terminal → its `output` (null when no terminal is open: the server answers `{"output": null}`)."""
        answer = self._tries("GET", "/terminal", timeout=UNBOUNDED_TIMEOUT_S, cap=MAX_TEXT_BYTES)
        output = _object(answer, "/terminal").get("output")
        if output is not None and not isinstance(output, str):
            raise GuestError("/terminal: `output` is not a string or null")
        return output

    def file(self, guest_path: str) -> bytes | None:
        """POST /file (form `file_path`): the file's bytes; None when the server says it is not there."""
        try:
            return self._tries("POST", "/file", timeout=UNBOUNDED_TIMEOUT_S, cap=MAX_FILE_BYTES,
                               data={"file_path": guest_path}).body
        except GuestError as exc:
            if exc.status == 404:  # tried as often as OSWorld tries it, then taken as "not there"
                return None
            raise

    def execute(self, command: str | list[str], *, shell: bool = False, path: str = "/execute",
                timeout: float = EXECUTE_TIMEOUT_S) -> Executed:
        """POST /execute (or /setup/execute) with `{"command", "shell"}` as JSON → what it printed and returned."""
        if not isinstance(command, (str, list)) or (isinstance(command, list)
                                                      and not all(isinstance(w, str) for w in command)):
            raise GuestError("a command is a string or a list of strings")
        answer = self._tries("POST", path, timeout=timeout, cap=MAX_TEXT_BYTES, stop_on_timeout=True,
                             content=json.dumps({"command": command, "shell": shell}),
                             headers={"Content-Type": "application/json"})
        return _executed(answer, path)

    def execute_python(self, code: str) -> Executed:
        """An action's pyautogui code through /execute, as `PythonController.execute_python_command` runs it."""
        return self.execute(["python", "-c", PYTHON_PREFIX.format(command=code)], shell=False)

    def screen_size(self) -> tuple[int, int]:
        """POST /screen_size → (width, height)."""
        answer = self._tries("POST", "/screen_size", timeout=UNBOUNDED_TIMEOUT_S, cap=MAX_SMALL_BYTES)
        data = _object(answer, "/screen_size")
        w, h = data.get("width"), data.get("height")
        if not (_int(w) and _int(h) and 0 < w <= 16384 and 0 < h <= 16384):
            raise GuestError(f"/screen_size: width and height must be positive integers (got {w!r}, {h!r})")
        return int(w), int(h)

    def platform(self) -> str:
        """What `platform.system()` says on the guest (OSWorld's `get_vm_platform`, through /execute)."""
        done = self.execute_python("import platform; print(platform.system())")
        name = (done.output.strip().splitlines() or [""])[-1].strip()  # importing pyautogui may print warnings first
        if done.returncode != 0 or not name.isprintable() or len(name) > 64:
            raise GuestError(f"the guest's platform could not be read (exit {done.returncode})")
        return name

    def reachable(self, tries: int, interval_s: float) -> bool:
        """SetupController's check before setup: GET /terminal answers at all (any status), up to `tries`."""
        for attempt in range(tries):
            try:
                self.request("GET", "/terminal", timeout=UNBOUNDED_TIMEOUT_S, cap=MAX_TEXT_BYTES)
                return True
            except GuestError:
                if attempt + 1 < tries:
                    self._sleep(interval_s)
        return False

    def post_json(self, path: str, payload: dict[str, Any], *, timeout: float = UNBOUNDED_TIMEOUT_S) -> Answer:
        """One POST of a JSON payload (SetupController's /setup/* calls are tried once)."""
        return self.request("POST", path, timeout=timeout, cap=MAX_TEXT_BYTES, content=json.dumps(payload),
                            headers={"Content-Type": "application/json"})

    def upload(self, guest_path: str, data: bytes, name: str, *, timeout: float = UPLOAD_TIMEOUT_S) -> Answer:
        """POST /setup/upload, multipart `file_path` + `file_data`, once."""
        return self.request("POST", "/setup/upload", timeout=timeout, cap=MAX_SMALL_BYTES,
                            data={"file_path": guest_path}, files={"file_data": (name, data)})


class GuestTimeout(GuestError):
    """No answer within the request's timeout."""


class GuestUnreachable(GuestError):
    """No connection could be made: nothing reached the guest."""


def _is_image(body: bytes) -> bool:
    return body[:8] == b"\x89PNG\r\n\x1a\n" or body[:3] == b"\xff\xd8\xff"


def _said(answer: Answer) -> str:
    """A short, printable excerpt of an error answer (data from the guest: never more than one line)."""
    text = answer.body[:200].decode("utf-8", "replace")
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())[:160]


def _object(answer: Answer, what: str) -> dict[str, Any]:
    try:
        data = json.loads(answer.body)
    except ValueError:
        raise GuestError(f"{what}: the answer is not JSON") from None
    if not isinstance(data, dict):
        raise GuestError(f"{what}: the answer is not a JSON object")
    return data


def _field(answer: Answer, key: str, kind: type, what: str) -> Any:
    value = _object(answer, what).get(key)
    if not isinstance(value, kind):
        raise GuestError(f"{what}: `{key}` is missing or not a {kind.__name__}")
    return value


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _executed(answer: Answer, what: str) -> Executed:
    data = _object(answer, what)
    output, error, code = data.get("output"), data.get("error"), data.get("returncode")
    if not isinstance(output, str) or not isinstance(error, str) or not _int(code):
        raise GuestError(f"{what}: output and error must be strings and returncode an integer")
    return Executed(output, error, int(code))
