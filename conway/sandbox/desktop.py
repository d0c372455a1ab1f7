"""A disposable desktop for one task: a private display, session bus and user home in one box, gone after the task.

`DisposableDesktop` implements `conway.tasks.env.TaskEnv`. Under a temp root it makes `home/` (what the task sees
at /home/user and ~) and `guest/` (OSWorld's program names, Conway's helpers), and starts ONE box
(`conway.sandbox.box`): the X server, the session bus and the services it activates (the accessibility bus,
dconf), the applications, every command and Conway's own helpers that read the desktop (its accessibility tree,
a terminal's text) run in it, as its unprivileged user, within its limits. This side keeps the display
connection (capture, input, the window list) and reads the home only through `safe_files` (no link followed).
`kill()` ends the box and everything in it; `close()` does that, then deletes the root unless `keep=True`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from conway.sandbox import safe_files
from conway.sandbox.box import Box, BoxError, BoxLimits
from conway.sandbox.box_environment import BoxEnvironment
from conway.sandbox.environment import BWRAP, SYSTEM_PATH, Bind, SandboxError
from conway.sandbox.guest import GUEST_BIN, GUEST_LIB, seed_home, write_guest
from conway.sandbox.paths import resolve
from conway.tasks.env import GUEST_HOME, CommandResult

__all__ = ["DisposableDesktop", "TERMINAL"]

TERMINAL = "lxterminal"
"""The terminal a task gets: LXDE's, GTK 3 + VTE, the lightest Debian terminal whose text AT-SPI can read
(xterm exposes nothing over AT-SPI; xfce4-terminal pulls in 13 packages, lxterminal 3)."""
HOME_FOLDERS = ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Public", "Templates", "Videos")
"""The user folders an Ubuntu home has (xdg-user-dirs), as in OSWorld's VM: made empty in the disposable home."""
TREE_TIMEOUT_S = 120.0
"""How long reading the whole accessibility tree may take (a large LibreOffice or Thunderbird tree takes seconds)."""
RUN_DIR = "/run/user/1000"
"""XDG_RUNTIME_DIR inside the box: the session bus's socket and the accessibility bus's (a tmpfs of the box)."""
_PATH = SYSTEM_PATH
_BUS_SERVICES = ("org.a11y.Bus.service", "ca.desrt.dconf.service")
_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>/run/conway-box/services</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


LAST_WORDS_CHARS = 200


def last_words(text: str) -> str:
    """What a program the box ran wrote last, as a report may quote it: printable characters only, whitespace
    folded to one line, its last LAST_WORDS_CHARS (the box's text is hostile: it is shown, never acted on)."""
    text = text[-8 * LAST_WORDS_CHARS:]  # the box may answer with up to a whole answer line: cut before reading it
    shown = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return shown if len(shown) <= LAST_WORDS_CHARS else "…" + shown[-LAST_WORDS_CHARS:]


def _reachable(parent: Path | None) -> str | None:
    """Where the root can be made so that the box's own uid (when Conway is root) can reach its home: `parent`
    when every folder above it lets others through, else the system's temp folder, else /tmp."""
    if os.geteuid() != 0:
        return None if parent is None else str(parent)
    for candidate in ([Path(parent)] if parent is not None else []) + [Path(tempfile.gettempdir()), Path("/tmp")]:
        chain = [candidate.resolve(), *candidate.resolve().parents]
        if all(os.stat(p).st_mode & 0o001 for p in chain if p.exists()):
            return str(candidate)
    return "/tmp"


class DisposableDesktop:
    """A context manager; see the module docstring. `root_parent`: where the temp root is made (default: the
    system's temp folder). `limits`: the box's (`BoxLimits`)."""

    def __init__(self, task_id: str = "task", *, cache_dir: Path | None = None, size: tuple[int, int] = (1280, 800),
                 network: bool = False, keep: bool = False, root_parent: Path | None = None, bwrap: str = BWRAP,
                 limits: BoxLimits | None = None):
        self.task_id = task_id
        self.last_words: dict[int, str] = {}
        """pid → the end of a spawned program's stderr, for one that ended in error (`spawned_exit`)."""
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.size = size
        self.network = network
        self.keep = keep
        self.limits = limits or BoxLimits()
        self._root_parent = root_parent
        self._bwrap = bwrap
        self.root: Path | None = None
        self.display = ""
        self.box: Box | None = None
        self.environment: BoxEnvironment | None = None
        """Where the agent's own shell and files tools act on this desktop (`build_toolbox`): inside the box."""
        self._copies: Path | None = None

    # --- life ------------------------------------------------------------------

    def __enter__(self) -> "DisposableDesktop":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def home(self) -> Path:
        """The disposable home on this machine (what the task sees at /home/user). Read it through `host_path`
        (or `safe_files`), never by path: the box may have put links in it."""
        return self._root() / "home"

    def _root(self) -> Path:
        if self.root is None:
            raise RuntimeError("the desktop is not started (use it as a context manager)")
        return self.root

    def start(self) -> None:
        """Make the root, start the box; SandboxError (one line) when any of it cannot start here."""
        try:
            if self._root_parent is not None:
                Path(self._root_parent).mkdir(parents=True, exist_ok=True)
            self.root = Path(tempfile.mkdtemp(prefix="conway-desktop-", dir=_reachable(self._root_parent)))
            self.root.chmod(0o711)  # the box's user (root: a uid of its own) passes through to its home
        except OSError as exc:
            raise SandboxError(f"cannot make the desktop's folder in {self._root_parent or tempfile.gettempdir()}: "
                               f"{exc.strerror or exc}") from None
        try:
            home = self.root / "home"
            home.mkdir(mode=0o700)
            for sub in HOME_FOLDERS:  # the folders OSWorld's tasks take for granted (mkdir ~/Desktop/x)
                (home / sub).mkdir()
            seed_home(home)
            write_guest(self.root / "guest")
            box = self.root / "box"
            box.mkdir()
            self._write_services(box / "services")
            self.box = Box(self.root, size=self.size, env={}, guest=self.root / "guest",
                           bus_config=_BUS_CONFIG.format(socket=f"{RUN_DIR}/bus"), network=self.network,
                           limits=self.limits, bwrap=self._bwrap)
            self.box.env = self._guest_env_for(self.box)
            self.box.start()
            self.display = self.box.display
            self.environment = BoxEnvironment(self.box, self.home)
            self._copies = Path(tempfile.mkdtemp(prefix="conway-desktop-read-"))
        except BaseException:
            self.close(keep=False)
            raise

    def _write_services(self, folder: Path) -> None:
        """The bus starts only the accessibility bus and dconf, the system's own service files as they are: they
        run inside the box with the bus (nothing the bus starts can reach this side)."""
        folder.mkdir()
        for name in _BUS_SERVICES:
            source = Path("/usr/share/dbus-1/services") / name
            if source.is_file():
                lines = source.read_text(encoding="utf-8").splitlines()
                (folder / name).write_text("\n".join(ln for ln in lines if not ln.startswith("SystemdService="))
                                           + "\n", encoding="utf-8")

    def _guest_env_for(self, box: Box) -> dict[str, str]:
        """The whole environment of every program in the box: this list, nothing of Conway's own."""
        lang = os.environ.get("LANG") or "C.UTF-8"
        if not all(c.isalnum() or c in "._-@" for c in lang):
            lang = "C.UTF-8"
        return {
            "PATH": f"{GUEST_BIN}:{_PATH}", "PYTHONPATH": GUEST_LIB, "HOME": GUEST_HOME, "USER": "user",
            "LOGNAME": "user", "SHELL": "/bin/sh", "LANG": lang, "TERM": "xterm-256color",
            "DISPLAY": box.display or ":0", "XDG_RUNTIME_DIR": RUN_DIR, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={RUN_DIR}/bus",
            # accessibility on for every toolkit: GTK 3 loads its bridge by itself unless NO_AT_BRIDGE is set
            # (it is not); GTK 2 needs the modules named; Qt reads these two; Gecko (Thunderbird) shows nothing
            # to AT-SPI without GNOME_ACCESSIBILITY=1 where no GNOME setting turns accessibility on (OSWorld's
            # VM has GNOME's on; its Thunderbird tasks are scored on that tree)
            "GTK_MODULES": "gail:atk-bridge", "QT_ACCESSIBILITY": "1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
            "GNOME_ACCESSIBILITY": "1",
        }

    def env(self) -> dict[str, str]:
        """What Conway's own screen capture and GUI input need on this side: the display, nothing else (the
        desktop's buses are inside the box)."""
        self._box()
        return {"DISPLAY": self.display}

    def close(self, keep: bool | None = None) -> None:
        """End the box and everything in it, delete the root unless kept."""
        keep = self.keep if keep is None else keep
        self.kill()
        if self.root is not None and os.path.ismount(self.home):
            if keep:  # what the home holds is kept beside its size-bounded mount, which goes
                shutil.copytree(self.home, self.root / "home.kept", symlinks=True)
            if self.box is not None:
                self.box.stop()
        if self._copies is not None:
            shutil.rmtree(self._copies, ignore_errors=True)
            self._copies = None
        if self.root is not None:
            if keep:
                if (self.root / "home.kept").is_dir():
                    shutil.rmtree(self.root / "home", ignore_errors=True)
                    (self.root / "home.kept").rename(self.root / "home")
                print(f"kept the task's desktop root: {self.root} (its home: {self.root / 'home'})", file=sys.stderr)
            else:
                shutil.rmtree(self.root, ignore_errors=True)
                self.root = None

    def kill(self) -> None:
        """End everything running on this desktop (the box's pid namespace goes with it), its folders left as
        they are. What a task's watchdog does to a task whose loop does not stop; `close` does it too."""
        if self.box is not None:
            self.box.stop(unmount_home=False)

    # --- TaskEnv -----------------------------------------------------------------

    def lost(self) -> str | None:
        """What of the desktop died while it was in use (its box, X server, bus), or None while all is well."""
        if self.box is None or self.box.proc is None:
            return None
        if self.box.proc.poll() is not None:
            return f"the desktop's box ended (exit {self.box.proc.returncode})"
        try:
            state = self.box.request({"op": "ping"}, timeout_s=10)
        except BoxError as exc:
            return f"the desktop's box does not answer ({exc})"
        if state.get("x") is not True:
            return f"the desktop's X server {self.display} died (exit {state.get('x_exit')})"
        if state.get("bus") is not True:
            return f"the desktop's session bus died (exit {state.get('bus_exit')})"
        return None

    def breaches(self) -> list[str]:
        """The limits this desktop hit, named (for the task's report)."""
        return [] if self.box is None else self.box.breaches()

    def host_path(self, guest_path: str) -> Path:
        """`/home/user/…`, `~/…` or a path relative to the home → a copy on this machine of what the task sees
        there (a file, or a folder's tree), made without following any link the box may have swapped in
        (`safe_files`); PathEscape for anything that leaves the home. A path that does not exist gives a path
        that does not exist. Writes go through `write_file`."""
        where = resolve([Bind(GUEST_HOME, self.home, True)], guest_path, cwd=GUEST_HOME, home=GUEST_HOME)
        rel = where.inside[len(GUEST_HOME):].lstrip("/")
        assert self._copies is not None
        return safe_files.copy_out(self.home, rel, self._copies)

    def write_file(self, guest_path: str, data: bytes) -> None:
        """Write a file in the task's home (folders made as needed), as the box's user, following no link;
        PathEscape for a path that leaves the home."""
        where = resolve([Bind(GUEST_HOME, self.home, True)], guest_path, cwd=GUEST_HOME, home=GUEST_HOME)
        rel = where.inside[len(GUEST_HOME):].lstrip("/")
        safe_files.write_in(self.home, rel, data, owner=self._box().uid)

    def _box(self) -> Box:
        if self.box is None or self.environment is None:
            raise RuntimeError("the desktop is not started (use it as a context manager)")
        return self.box

    def run(self, command: str | list[str], *, shell: bool = False, timeout_s: float = 30.0,
            cwd: str | None = None) -> CommandResult:
        argv = ["/bin/sh", "-c", command if isinstance(command, str) else " ".join(command)] if shell else (
            command.split() if isinstance(command, str) else list(command))
        if not argv:
            return CommandResult(127, "", "empty command")
        inside = GUEST_HOME if cwd is None else self._box_env().resolve(cwd, cwd=GUEST_HOME).inside  # PathEscape
        try:
            done = self._box().run(argv, cwd=inside, timeout_s=timeout_s)
        except BoxError as exc:
            return CommandResult(None, "", str(exc))
        err = done.stderr.decode("utf-8", "replace")
        if done.start_error:
            err = (err + ("\n" if err else "") + done.start_error)
        if done.timed_out:
            return CommandResult(None, done.stdout.decode("utf-8", "replace"), err, timed_out=True)
        code = done.returncode if done.signal is None else -done.signal
        return CommandResult(code, done.stdout.decode("utf-8", "replace"), err)

    def _box_env(self) -> BoxEnvironment:
        self._box()
        assert self.environment is not None
        return self.environment

    def spawn(self, command: str | list[str], *, shell: bool = False) -> int | None:
        """Start a long-lived program in the box; its pid there (for `spawned_exit`)."""
        argv = ["/bin/sh", "-c", command if isinstance(command, str) else " ".join(command)] if shell else (
            command.split() if isinstance(command, str) else list(command))
        if not argv:
            raise ValueError("empty command")
        answer = self._box().request({"op": "spawn", "argv": argv})
        if "error" in answer:
            raise SandboxError(str(answer["error"])[:300])
        pid = answer.get("pid")
        return pid if isinstance(pid, int) else None

    def spawned_exit(self, pid: int) -> int | None:
        """The exit status of a program `spawn` started, or None while it runs (or when the box cannot say); for
        one that ended in error, the end of what it wrote to stderr is kept in `last_words[pid]`."""
        answer = self._box().request({"op": "exited", "pid": pid})
        status = answer.get("returncode")
        if isinstance(status, int) and status and isinstance(answer.get("stderr"), str):
            self.last_words[pid] = last_words(answer["stderr"])
        return status if isinstance(status, int) else None

    def kill_matching(self, pattern: str, *, wait_s: float = 5.0) -> int:
        """`pkill PATTERN` on this desktop (OSWorld's `launch pkill chrome` before it restarts the browser): SIGTERM
        every process in the box whose name matches the regular expression (never its X server or bus), then
        wait up to `wait_s` for them to end; returns how many matched. A process answers to its name and, for an
        interpreter running a program (the desktop's `vlc` launcher), to that program's name; Chromium also to
        `chrome`, the name OSWorld's VM gives Google Chrome's processes."""
        import re

        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"pkill pattern {pattern!r}: {exc}") from None
        answer = self._box().request({"op": "pkill", "pattern": pattern, "wait": wait_s}, timeout_s=wait_s + 30)
        count = answer.get("count")
        if not isinstance(count, int):
            raise ValueError(str(answer.get("error") or "the desktop's box did not say how many it ended")[:300])
        return count

    def helper_argv(self, helper: str, *args: str) -> list[str]:
        """A command line for this side that runs one of Conway's desktop-reading helpers (`_atspi_snapshot.py`
        …) INSIDE the box and relays its output; killing it ends the helper there."""
        return self._box_env().relay(["/usr/bin/python3", f"{GUEST_LIB}/{helper}", *args], cwd=GUEST_HOME)

    def _helper_answer(self, helper: str, key: str, timeout_s: float) -> object:
        try:
            done = self._box().run(["/usr/bin/python3", f"{GUEST_LIB}/{helper}"], cwd=GUEST_HOME,
                                   timeout_s=timeout_s)
            answer = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        except (BoxError, ValueError, IndexError):
            return None
        if not isinstance(answer, dict):
            return None
        reason = answer.get("reason")
        if answer.get(key) is None and isinstance(reason, str) and reason.startswith("AT-SPI unavailable"):
            # a missing part is an error, never a wrong score (an empty terminal would read as a 0)
            raise SandboxError(f"the desktop cannot read AT-SPI: {reason[:200]}")
        return answer.get(key)

    def terminal_output(self) -> str | None:
        """The text of the first terminal window on this desktop, read through AT-SPI inside the box; None when
        none is open or the accessibility bus does not answer (within 10 s)."""
        text = self._helper_answer("_terminal_text.py", "text", 10)
        return text.rstrip() if isinstance(text, str) else None

    def accessibility_tree(self) -> str | None:
        """Every application's accessibility tree on this desktop as OSWorld's XML (`_atspi_xml.py`, run inside
        the box on its bus); None when the accessibility bus does not answer (within `TREE_TIMEOUT_S`) or AT-SPI
        is not available."""
        xml = self._helper_answer("_atspi_xml.py", "xml", TREE_TIMEOUT_S)
        return xml if isinstance(xml, str) else None
