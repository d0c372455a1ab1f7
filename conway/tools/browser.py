"""Open a URL in the user's browser (http, https and file URLs only).

By default Python's `webbrowser` picks the browser (without autolaunching a
session bus: `conway.machine.session_bus`); an explicit opener command
(`["xdg-open"]`, or a test's own script) can be injected and gets the URL as
its last argument. On a machine without a usable browser the tool says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import webbrowser
from typing import Sequence
from urllib.parse import urlsplit

from conway.actions import ActionProblem, OpenBrowser, _Action, types_of
from conway.geometry import ScreenGeometry
from conway.machine.session_bus import no_bus_autolaunch
from conway.protocols import Tool, ToolResult
from conway.tools.row import Setup, ToolRow

SCHEMES = ("http", "https", "file")


def check_url(url: str) -> str | None:
    """None when the URL may be opened, else the reason it may not."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        # Whitespace/control characters: a browser or opener could split or misread them.
        return "the URL contains whitespace or control characters (percent-encode them)"
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL": a refusal like any other, never a crash of the check
        return f"the URL is malformed ({exc})"
    if parts.scheme.lower() not in SCHEMES:
        got = f"{parts.scheme!r}" if parts.scheme else "no scheme"
        return f"only http, https and file URLs can be opened, got {got}"
    if parts.scheme.lower() != "file" and not parts.hostname:
        return "an http(s) URL needs a host"
    if parts.scheme.lower() == "file" and not parts.path:
        return "a file URL needs a path"
    return None


class BrowserTool(Tool):
    name = "browser"
    action_types = types_of("browser")

    def __init__(self, command: Sequence[str] | None = None, wait_s: float = 5.0):
        self.command = list(command) if command else None
        """Opener argv; the URL is appended. None: use `webbrowser`'s registered browser."""
        self.wait_s = wait_s
        """How long to wait for an opener to exit; one still running then counts as launched."""

    def availability(self) -> tuple[bool, str]:
        if self.command:
            exe = shutil.which(self.command[0])
            return (True, f"opener {exe}") if exe else (False, f"opener not found: {self.command[0]}")
        try:
            with no_bus_autolaunch():  # the lookup runs xdg-settings, which would start a bus that outlives Conway
                browser = webbrowser.get()
        except webbrowser.Error as exc:
            return False, f"no browser registered with Python's webbrowser module ({exc})"
        if type(browser) is webbrowser.GenericBrowser:
            # A console browser (lynx, w3m, ...) would run in the foreground and block the loop.
            return False, f"only a console browser is registered ({browser.name}); it would block the agent"
        return True, f"browser {getattr(browser, 'name', type(browser).__name__)}"

    def check(self, action: _Action) -> _Action | ActionProblem:
        """A URL that may not be opened is refused here, before its intent is written, not at dispatch."""
        problem = check_url(action.url) if isinstance(action, OpenBrowser) else None
        if problem:
            return ActionProblem(message=f"open_browser refused {action.url!r}: {problem}", raw=action.model_dump())
        return action

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        if not isinstance(action, OpenBrowser):
            return ToolResult(ok=False, error=f"the browser tool cannot run {getattr(action, 'type', action)!r}")
        problem = check_url(action.url)
        if problem:
            return ToolResult(ok=False, error=f"refused {action.url!r}: {problem}")
        available, reason = self.availability()
        if not available:
            return ToolResult(ok=False, error=f"cannot open a browser here: {reason}")
        if self.command:
            return self._run_command(action.url)
        with no_bus_autolaunch():
            opened = webbrowser.get().open(action.url, new=2)
        if not opened:
            return ToolResult(ok=False, error=f"the browser did not accept {action.url}")
        return ToolResult(ok=True, output=f"opened {action.url} ({reason})", data={"url": action.url})

    def _run_command(self, url: str) -> ToolResult:
        # stderr goes to an unlinked temp file, so a long-lived opener never blocks on a full pipe.
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen([*self.command, url], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=err,
                                        start_new_session=os.name == "posix")
            except OSError as exc:
                return ToolResult(ok=False, error=f"could not start {self.command[0]}: {exc}")
            try:
                code = proc.wait(self.wait_s)
            except subprocess.TimeoutExpired:  # browsers may stay in the foreground: that is success
                return ToolResult(ok=True, output=f"opened {url} (opener still running after {self.wait_s:g} s)",
                                  data={"url": url, "pid": proc.pid})
            err.seek(0)
            detail = err.read()[-2000:].decode("utf-8", "replace").strip()
        if code != 0:
            return ToolResult(ok=False, error=f"{self.command[0]} exited {code} for {url}"
                              + (f": {detail}" if detail else ""))
        return ToolResult(ok=True, output=f"opened {url} with {self.command[0]}", data={"url": url})


def _make(s: Setup) -> Tool:
    return BrowserTool()


ROW = ToolRow("browser", _make)
