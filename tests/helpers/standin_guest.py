"""A STAND-IN for OSWorld's guest server (`desktop_env/server/main.py`), written for Conway's tests from the protocol
(endpoints, payloads, answers), not from the server's code: a real HTTP server on 127.0.0.1 that runs real
commands on a real X display (the session's Xvfb) with a home folder of its own, and records every request and
its answer. It answers as the real server does where Conway's `osworld` provider reads the answer:

- GET  /screenshot           the display as PNG
- GET  /accessibility        {"AT": "<desktop-frame …/>"} (a fixed tree: this stand-in has no AT-SPI reader)
- GET  /terminal             {"output": "", "status": "success"}
- POST /screen_size          {"width", "height"}
- POST /execute, /setup/execute   JSON {"command", "shell"} → {"status", "output", "error", "returncode"}
                                  (`python` is this interpreter: pyautogui is installed here)
- POST /setup/launch         JSON {"command", "shell"} → "… launched successfully"
- POST /file                 form file_path → the bytes, or 404 {"error": "File not found"}
- POST /setup/upload         multipart file_path + file_data → "File Uploaded: N bytes"
- POST /setup/open_file      JSON {"path"} → 404 "… not found" unless the file exists, then xdg-open
- POST /setup/activate_window, /setup/close_window   JSON {"window_name", "strict", "by_class"} (xdotool)

`fail` makes chosen endpoints answer 500 a number of times first (the client's retries are under test).

What it runs gets a session bus of the stand-in's own (a `dbus-daemon --session`, its child): without one a GTK
program (lxterminal) autolaunches a bus with `dbus-launch`, and that bus and its accessibility bus outlive the
program, detached from it. `close` stops every program launched, the bus and all that runs under them.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs

import psutil

from scripts.build.guest_http import LoopbackServer, multipart_fields

TREE = ('<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" name="main">'
        '<application name="stand-in"/></desktop-frame>')


@dataclass
class StandinGuest:
    display: str
    home: Path
    size: tuple[int, int] = (1280, 800)
    screen: Callable[[], bytes] | None = None
    fail: dict[str, int] = field(default_factory=dict)
    recording: list[dict[str, Any]] = field(default_factory=list)
    launched: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / ".Xauthority").touch()  # python-xlib insists on the file; Xvfb here has no cookies
        self._lock = threading.Lock()
        self.bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                                    stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        self.bus_address = self.bus.stdout.readline().decode().strip()  # type: ignore[union-attr]
        self._server = LoopbackServer(self._answer)
        self.url = self._server.url

    def processes(self) -> list[psutil.Process]:
        """Everything the stand-in runs now: its bus, the programs it launched, and all their descendants."""
        out: list[psutil.Process] = []
        for pid in [self.bus.pid, *(p.pid for p in self.launched)]:
            try:
                top = psutil.Process(pid)
                out += [top, *top.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
        return out

    def close(self) -> None:
        self._server.close()
        left = self.processes()
        for proc in left:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(left, timeout=10)
        for proc in [self.bus, *self.launched]:
            proc.wait()  # reaped: no zombie of ours stays behind either
        if self.bus.stdout is not None:
            self.bus.stdout.close()

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home), "DISPLAY": self.display,
                "XAUTHORITY": str(self.home / ".Xauthority"), "LANG": "C.UTF-8",
                "DBUS_SESSION_BUS_ADDRESS": self.bus_address}

    # --- one request --------------------------------------------------------------------------------

    def _answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, str, bytes]:
        left = self.fail.get(path, 0)
        if left:
            self.fail[path] = left - 1
            status, ctype, out = 500, "application/json", json.dumps({"status": "error", "message": "planted"}).encode()
        else:
            try:
                status, ctype, out = self._route(method, path, body, headers.get("Content-Type", ""))
            except Exception as exc:  # as the real server: a 500 with the message
                status, ctype, out = 500, "application/json", json.dumps({"status": "error",
                                                                          "message": str(exc)}).encode()
        with self._lock:
            self.recording.append({"method": method, "path": path, "request": _shown(body, headers),
                                   "status": status, "response": out[:300].decode("utf-8", "replace")
                                   if not ctype.startswith("image/") else f"<{len(out)} bytes {ctype}>"})
        return status, ctype, out

    def _route(self, method: str, path: str, body: bytes, ctype: str) -> tuple[int, str, bytes]:
        js = "application/json"
        if (method, path) == ("GET", "/screenshot"):
            return 200, "image/png", self.screen() if self.screen else self._grab()
        if (method, path) == ("GET", "/accessibility"):
            return 200, js, json.dumps({"AT": TREE}).encode()
        if (method, path) == ("GET", "/terminal"):
            return 200, js, json.dumps({"output": "", "status": "success"}).encode()
        if (method, path) == ("POST", "/screen_size"):
            return 200, js, json.dumps({"width": self.size[0], "height": self.size[1]}).encode()
        if method == "POST" and path in ("/execute", "/setup/execute"):
            data = json.loads(body)
            return 200, js, json.dumps(self._execute(data.get("command"), bool(data.get("shell")))).encode()
        if (method, path) == ("POST", "/setup/launch"):
            data = json.loads(body)
            command, shell = self._argv(data.get("command"), bool(data.get("shell")))
            self.launched.append(subprocess.Popen(command, shell=shell, env=self.env(), cwd=self.home,
                                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL, start_new_session=True))
            return 200, "text/html", f"{command} launched successfully".encode()
        if (method, path) == ("POST", "/file"):
            target = self._path(parse_qs(body.decode())["file_path"][0])
            if not target.is_file():
                return 404, js, json.dumps({"error": "File not found"}).encode()
            return 200, "application/octet-stream", target.read_bytes()
        if (method, path) == ("POST", "/setup/upload"):
            fields = multipart_fields(body, ctype)
            target = self._path(fields["file_path"].decode())
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(fields["file_data"])
            return 200, "text/html", f"File Uploaded: {len(fields['file_data'])} bytes".encode()
        if (method, path) == ("POST", "/setup/open_file"):
            target = self._path(json.loads(body)["path"])
            if not target.exists():
                return 404, "text/html", f"File not found: {target}".encode()
            self.launched.append(subprocess.Popen(["xdg-open", str(target)], env=self.env(), start_new_session=True,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            return 200, "text/html", b"File opened successfully"
        if method == "POST" and path in ("/setup/activate_window", "/setup/close_window"):
            data = json.loads(body)
            how = "--class" if data.get("by_class") else "--name"
            found = subprocess.run(["xdotool", "search", how, data["window_name"]], env=self.env(),
                                   capture_output=True, text=True, timeout=10).stdout.split()
            if not found:
                return 404, "text/html", f"Window {data['window_name']} not found (empty results)".encode()
            verb = "windowactivate" if path.endswith("activate_window") else "windowclose"
            subprocess.run(["xdotool", verb, found[0]], env=self.env(), capture_output=True, timeout=10)
            return 200, "text/html", b"Window activated successfully"
        return 404, "text/html", b"Not Found"

    def _argv(self, command: Any, shell: bool) -> tuple[Any, bool]:
        if isinstance(command, str) and not shell:
            command = shlex.split(command)
        if isinstance(command, list):  # OSWorld's home is /home/user: here it is this stand-in's home
            command = [str(self._path(a)) if a.startswith(("~/", "/home/user/")) else a for a in command]
            if command and command[0] == "python":
                command = [sys.executable, *command[1:]]
        elif isinstance(command, str) and shell:
            command = command.replace("~/", str(self.home) + "/").replace("/home/user/", str(self.home) + "/")
        return command, shell

    def _execute(self, command: Any, shell: bool) -> dict[str, Any]:
        command, shell = self._argv(command, shell)
        done = subprocess.run(command, shell=shell, env=self.env(), cwd=self.home, capture_output=True, text=True,
                              timeout=120)
        return {"status": "success", "output": done.stdout, "error": done.stderr, "returncode": done.returncode}

    def _path(self, raw: str) -> Path:
        """The guest's paths: ~ and /home/user are this stand-in's home."""
        for prefix in ("~/", "/home/user/"):
            if raw.startswith(prefix):
                return self.home / raw[len(prefix):]
        return Path(raw)

    def _grab(self) -> bytes:
        """The display as PNG. One more try after a refused connection: CI once saw the session's Xvfb refuse one
        (XCB_CONN_ERROR) on a loaded machine, and this stand-in's capture is not what the tests examine (the
        client's retries are tested with planted 500s, which a flaky grab would add to)."""
        from conway.observe.screen import CaptureError

        try:
            return self._grab_once()
        except CaptureError:
            time.sleep(0.5)
            return self._grab_once()

    def _grab_once(self) -> bytes:
        from conway.observe.screen import ScreenObserver

        observer = ScreenObserver(display=self.display)
        try:
            return observer.observe().png or b""
        finally:
            observer.close()


def _shown(body: bytes, headers: Any) -> Any:
    ctype = headers.get("Content-Type", "")
    if ctype.startswith("application/json"):
        return json.loads(body or b"null")
    if ctype.startswith("multipart/"):
        return {k: (v.decode() if k == "file_path" else f"<{len(v)} bytes>") for k, v in multipart_fields(body, ctype).items()}
    return body.decode("utf-8", "replace") if body else None


