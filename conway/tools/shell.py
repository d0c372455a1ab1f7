"""Shell commands with a timeout, bounded output and process-group cleanup, run through an environment.

With `LocalEnvironment` (the default) the command runs as the user running Conway, with the user's
permissions: routing, not a sandbox. With `BubblewrapEnvironment` (`tools.environment: sandbox`) it runs
inside bubblewrap (`conway.sandbox.environment`). Either way it gets its own session/process group so that a
timeout or a stop can kill everything it started (the group plus any descendant that left it), and
/dev/null as stdin so it can never wait for a keyboard (`run` never reads stdin).
"""

from __future__ import annotations

import os
import queue
import selectors
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

from conway.actions import Shell, _Action, types_of
from conway.cancel import current_cancel
from conway.geometry import ScreenGeometry
from conway.protocols import Tool, ToolResult
from conway.redact import tool_environment
from conway.sandbox.environment import Environment, LocalEnvironment
from conway.sandbox.process import kill_tree
from conway.tasks.env import PathEscape
from conway.text.bounded import HeadTail
from conway.tools.row import Setup, ToolRow

_POSIX = os.name == "posix"
_SLICE_S = 0.1  # how often the read loop looks at the clock and the process
_LINGER_S = 1.0  # after the shell exits, how long to wait for background holders of the pipe
_SHELL = "/bin/sh" if _POSIX else os.environ.get("COMSPEC", "cmd.exe")


class ShellTool(Tool):
    name = "shell"
    action_types = types_of("shell")
    cancellable = True  # a stop kills the command's process group (see `run`)

    def __init__(self, workdir: Path, timeout_s: float = 60, max_output_bytes: int = 32768,
                 kill_grace_s: float = 2.0, env: Callable[[], dict[str, str]] | None = None,
                 environment: Environment | None = None):
        self.workdir = Path(os.path.expanduser(str(workdir)))
        self.timeout_s = timeout_s
        """Default and maximum per command; a longer `Shell.timeout_s` is capped to it."""
        self.max_output_bytes = max_output_bytes
        self.kill_grace_s = kill_grace_s
        """Between SIGTERM and SIGKILL of the process group on timeout."""
        self.env = env
        """Builds each command's environment at its start (None: Conway's own); `registry` drops credentials."""
        self.environment: Environment = environment or LocalEnvironment()
        """Where the command runs: as it is, or inside a sandbox (`tools.environment`)."""

    def availability(self) -> tuple[bool, str]:
        try:  # the workdir as the environment shows it (a task's /home/user lives elsewhere on this machine)
            here = self.environment.resolve(str(self.workdir), cwd=os.getcwd()).host
        except PathEscape as exc:
            return False, f"working directory unusable: {exc}"
        if not here.is_dir():
            return False, f"working directory does not exist: {self.workdir}"
        ok, how = self.environment.availability()
        if not ok:
            return False, how
        try:  # tried, not guessed
            prep = self.environment.prepare(_argv("exit 0"), cwd=str(self.workdir), env=None)
            done = subprocess.run(prep.argv, cwd=prep.cwd, env=prep.env, stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"cannot start {_SHELL}: {exc}"
        if done.returncode != 0:
            return False, f"{_SHELL} exited {done.returncode} on a no-op command"
        where = "" if self.environment.name == "local" else f", {how}"
        return True, f"{_SHELL} in {self.workdir}, timeout {self.timeout_s:g} s{where}"

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        if not isinstance(action, Shell):
            return ToolResult(ok=False, error=f"the shell tool cannot run {getattr(action, 'type', action)!r}")
        timeout = min(action.timeout_s or self.timeout_s, self.timeout_s)
        capped = action.timeout_s is not None and action.timeout_s > self.timeout_s
        try:
            prep = self.environment.prepare(_argv(action.command), cwd=str(self.workdir),
                                            env=self.env() if self.env is not None else None)
            proc = subprocess.Popen(prep.argv, cwd=prep.cwd, stdin=subprocess.DEVNULL, env=prep.env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=_POSIX, shell=not _POSIX,
                                    creationflags=0 if _POSIX else subprocess.CREATE_NEW_PROCESS_GROUP)
        except OSError as exc:  # nothing started: certain no effect
            return ToolResult(ok=False, error=f"could not start the shell: {exc}")
        buf = HeadTail(self.max_output_bytes)
        start = time.monotonic()
        timed_out, stopped, eof, linger_until = False, False, False, None
        cancel = current_cancel()  # the agent is being stopped: the command does not get to finish
        try:
            with _Reader(proc.stdout) as reader:
                while not eof:
                    now = time.monotonic()
                    if proc.poll() is not None:
                        linger_until = linger_until or now + _LINGER_S
                        if now >= linger_until:
                            break  # a background process still holds the output pipe
                    elif now - start >= timeout:
                        timed_out = True
                        self._kill_group(proc)
                        continue
                    elif cancel is not None and cancel.is_set():
                        stopped = True
                        self._kill_group(proc)
                        continue
                    eof = reader.read_into(buf, _SLICE_S)
        except BaseException:  # interrupted (Ctrl+C in the loop): leave nothing running behind us
            if proc.poll() is None:
                self._kill_group(proc)
            raise
        elapsed = time.monotonic() - start
        code = proc.wait()
        text, truncated = buf.text()
        if timed_out:
            status = f"timed out after {timeout:g} s; its process group and descendants were killed (output so far is above)"
        elif stopped:
            status = (f"stopped after {elapsed:.1f} s because the agent was stopped ({cancel.reason}); its process "
                      "group and descendants were killed (output so far is above)")
        else:
            status = f"exit code {code}" + (f" (killed by signal {-code})" if code < 0 else "")
        if not eof:
            status += "; background processes still held the output and were left running (their later output is lost)"
        if capped:
            status += f"; the requested timeout {action.timeout_s:g} s was capped to {self.timeout_s:g} s"
        shown = f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}[{status}]"
        ok = code == 0 and not timed_out and not stopped
        # On failure the error carries the output too, since a result shows only its error then.
        return ToolResult(ok=ok, output=shown, error=None if ok else shown, truncated=truncated,
                          data={"exit_code": code, "timed_out": timed_out, "stopped": stopped,
                                "elapsed_s": round(elapsed, 3),
                                "output_bytes": buf.total})

    def _kill_group(self, proc: subprocess.Popen) -> None:
        """SIGTERM the group and every descendant, wait the grace, then SIGKILL."""
        kill_tree(proc, self.kill_grace_s)

    def close(self) -> None:
        self.environment.close()


def _argv(command: str) -> list[str] | str:
    # POSIX: /bin/sh -c, the portable user shell. Windows: Popen(shell=True) uses %COMSPEC% /c.
    return [_SHELL, "-c", command] if _POSIX else command


class _Reader:
    """Reads a pipe in bounded slices without ever blocking past the slice.

    POSIX uses a selector on the main thread (nothing is left blocked on the fd
    when we stop); Windows pipes cannot be selected, so a daemon thread feeds a queue.
    """

    def __init__(self, pipe):
        self.pipe = pipe
        if _POSIX:
            os.set_blocking(pipe.fileno(), False)
            self.sel = selectors.DefaultSelector()
            self.sel.register(pipe.fileno(), selectors.EVENT_READ)
        else:
            self.q: queue.Queue[bytes] = queue.Queue(maxsize=64)
            threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        while chunk := self.pipe.read1(65536):
            self.q.put(chunk)
        self.q.put(b"")

    def read_into(self, buf: HeadTail, timeout: float) -> bool:
        """Feed what arrives within `timeout`; True at end of file."""
        if not _POSIX:
            try:
                chunk = self.q.get(timeout=timeout)
            except queue.Empty:
                return False
            buf.feed(chunk)
            return not chunk
        if not self.sel.select(timeout):
            return False
        end = time.monotonic() + timeout
        while time.monotonic() < end:  # drain in bulk, but let a firehose still hit the timeout
            try:
                chunk = os.read(self.pipe.fileno(), 65536)
            except BlockingIOError:
                return False
            if not chunk:
                return True
            buf.feed(chunk)
        return False

    def __enter__(self) -> "_Reader":
        return self

    def __exit__(self, *exc) -> None:
        if _POSIX:
            self.sel.close()
            self.pipe.close()


def _make(s: Setup) -> Tool:
    cfg = s.cfg

    def env() -> dict[str, str]:  # read at each command: the environment may change during a run
        return {**tool_environment(os.environ, drop=[s.api_key_env], drop_patterns=cfg.shell_env_drop,
                                   keep=cfg.shell_env_keep)[0], **s.shell_env}
    return ShellTool(s.workdir, timeout_s=cfg.shell_timeout_s, max_output_bytes=cfg.shell_max_output_bytes, env=env,
                     environment=s.environment)


ROW = ToolRow("shell", _make)
