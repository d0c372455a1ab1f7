"""A disposable desktop for one task: a private display, session bus and user home, gone after the task.

`DisposableDesktop` implements `conway.tasks.env.TaskEnv`. Under a temp root it makes `home/` (what commands
see at /home/user and ~) and `tmp/` (their /tmp), and beside it a short `conway-run-*` folder
(XDG_RUNTIME_DIR: the session bus socket, and the accessibility bus's that D-Bus activates there); it starts
a private Xvfb (`conway.machine.xvfb`) and a `dbus-daemon --session`, and runs every command and application,
and the services the bus starts, inside a `BubblewrapEnvironment` with DISPLAY and DBUS_SESSION_BUS_ADDRESS set. `env()` is what Conway's own observer and GUI actuator need to
look at and act on this display (they run outside the sandbox). `kill()` kills everything it started and every
command still running in its sandbox, stops the bus and Xvfb; `close()` does that, then deletes the root unless
`keep=True`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from conway.machine.xvfb import XServer, XvfbError, start_xvfb
from conway.sandbox.environment import BWRAP, SYSTEM_PATH, Bind, BubblewrapEnvironment, SandboxError
from conway.sandbox.guest import GUEST_BIN, GUEST_DIR, GUEST_LIB, seed_home, write_guest
from conway.sandbox.paths import resolve
from conway.sandbox.process import kill_tree, run_bounded
from conway.tasks.env import GUEST_HOME, CommandResult

__all__ = ["DisposableDesktop", "TERMINAL"]

TERMINAL = "lxterminal"
"""The terminal a task gets: LXDE's, GTK 3 + VTE, the lightest Debian terminal whose text AT-SPI can read
(xterm exposes nothing over AT-SPI; xfce4-terminal pulls in 13 packages, lxterminal 3)."""
HOME_FOLDERS = ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Public", "Templates", "Videos")
"""The user folders an Ubuntu home has (xdg-user-dirs), as in OSWorld's VM: made empty in the disposable home."""
_TERMINAL_HELPER = Path(__file__).with_name("_terminal_text.py")
_TREE_HELPER = Path(__file__).with_name("_atspi_xml.py")
TREE_TIMEOUT_S = 120.0
"""How long reading the whole accessibility tree may take (a large LibreOffice or Thunderbird tree takes seconds)."""
_PATH = SYSTEM_PATH
_BUS_SERVICES = ("org.a11y.Bus.service", "ca.desrt.dconf.service")
_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class DisposableDesktop:
    """A context manager; see the module docstring. `root_parent`: where the temp root is made (default: the
    system's temp folder)."""

    def __init__(self, task_id: str = "task", *, cache_dir: Path | None = None, size: tuple[int, int] = (1280, 800),
                 network: bool = False, keep: bool = False, root_parent: Path | None = None, bwrap: str = BWRAP):
        self.task_id = task_id
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.size = size
        self.network = network
        self.keep = keep
        self._root_parent = root_parent
        self._bwrap = bwrap
        self.root: Path | None = None
        self.run_dir: Path | None = None
        """XDG_RUNTIME_DIR of everything on this desktop: the session bus socket, the accessibility bus's."""
        self.display = ""
        self._x: XServer | None = None
        self._bus: subprocess.Popen[bytes] | None = None
        self._spawned: list[subprocess.Popen[bytes]] = []
        self.environment: BubblewrapEnvironment | None = None
        """The sandbox the agent's own shell and files tools should use on this desktop (`build_toolbox`)."""

    # --- life ------------------------------------------------------------------

    def __enter__(self) -> "DisposableDesktop":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def home(self) -> Path:
        """The disposable home on this machine (what the task sees at /home/user)."""
        return self._root() / "home"

    def _root(self) -> Path:
        if self.root is None:
            raise RuntimeError("the desktop is not started (use it as a context manager)")
        return self.root

    def start(self) -> None:
        """Make the root, start Xvfb and the bus; SandboxError (one line) when any of it cannot start here."""
        try:
            if self._root_parent is not None:
                Path(self._root_parent).mkdir(parents=True, exist_ok=True)
            self.root = Path(tempfile.mkdtemp(prefix="conway-desktop-", dir=self._root_parent))
        except OSError as exc:
            raise SandboxError(f"cannot make the desktop's folder in {self._root_parent or tempfile.gettempdir()}: "
                               f"{exc.strerror or exc}") from None
        try:
            for sub in ("home", "tmp"):
                (self.root / sub).mkdir(mode=0o700)
            for sub in HOME_FOLDERS:  # the folders OSWorld's tasks take for granted (mkdir ~/Desktop/x)
                (self.root / "home" / sub).mkdir()
            seed_home(self.root / "home")
            write_guest(self.root / "guest")
            BubblewrapEnvironment([], home=GUEST_HOME, tmp=self.root / "tmp", bwrap=self._bwrap).require()
            # the sockets' folder is short and of its own: a socket's path must fit in 108 bytes, and the
            # accessibility bus puts its socket one level further down
            self.run_dir = Path(tempfile.mkdtemp(prefix="conway-run-"))
            if len(str(self.run_dir)) > 80:
                raise SandboxError(f"the temp folder's path is too long for the desktop's sockets: {self.run_dir} "
                                   "(set TMPDIR to a shorter one)")
            try:
                self._x = start_xvfb(*self.size)
            except XvfbError as exc:
                raise SandboxError(f"the desktop's display did not start: {exc}") from None
            self.display = self._x.display
            run = self.run_dir
            self.environment = BubblewrapEnvironment(
                [Bind(GUEST_HOME, self.root / "home", True), Bind(str(run), run, True),
                 Bind(GUEST_DIR, self.root / "guest")], home=GUEST_HOME,
                network=self.network, tmp=self.root / "tmp", setenv=self._guest_env(), bwrap=self._bwrap)
            self.environment.require()
            if not self.network and os.geteuid() == 0 and shutil.which("nsenter"):
                self.environment.netns = self._hold_network()  # one loopback for every program on this desktop
            self._bus = self._start_bus(run)  # after the sandbox: the services it starts run inside it
        except BaseException:
            self.close(keep=False)
            raise

    def _start_bus(self, run: Path) -> subprocess.Popen[bytes]:
        socket, log = run / "bus", self._root() / "bus.log"  # the log: the bus reports each activation there
        config = self._bus_config(socket)
        try:
            with open(log, "wb") as out:
                bus = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile"],
                                       env={"PATH": _PATH, "XDG_RUNTIME_DIR": str(run), "DISPLAY": self.display,
                                            "HOME": str(self._root() / "home")},
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=out,
                                       start_new_session=True)
        except FileNotFoundError:
            raise SandboxError("dbus-daemon is not installed (Debian: apt-get install dbus)") from None
        deadline = time.monotonic() + 10
        while not socket.exists():
            if bus.poll() is not None or time.monotonic() > deadline:
                kill_tree(bus, 1.0)
                said = (log.read_text(errors="replace").strip().splitlines() or ["no message"])[-1]
                raise SandboxError(f"the desktop's session bus (dbus-daemon --session) did not start: {said}")
            time.sleep(0.02)
        return bus

    def _hold_network(self) -> str:
        """Start a process that holds the desktop's private network namespace and return its namespace's path:
        every later command joins it (`nsenter`), so programs on this desktop reach each other over loopback
        as on OSWorld's VM (Chrome's DevTools port 1337, forwarded to 9222 by `socat`; VLC's HTTP interface),
        while nothing reaches this machine's network. Root only: joining a namespace needs CAP_SYS_ADMIN here;
        elsewhere each command keeps a loopback of its own."""
        prep = self._env().prepare(["/bin/sleep", "infinity"], cwd=GUEST_HOME, env={})
        holder = subprocess.Popen(prep.argv, env=prep.env, cwd=prep.cwd, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self._spawned.append(holder)
        ours = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and holder.poll() is None:
            try:
                children = psutil.Process(holder.pid).children(recursive=True)
            except psutil.Error:
                children = []
            for child in children:
                try:
                    if os.readlink(f"/proc/{child.pid}/ns/net") != ours and child.name() == "sleep":
                        return f"/proc/{child.pid}/ns/net"
                except (OSError, psutil.Error):
                    continue
            time.sleep(0.02)
        raise SandboxError("the desktop's private network (a sandboxed process holding it) did not start")

    def _bus_config(self, socket: Path) -> Path:
        """The session bus's configuration: the standard one would start any service named in a file under
        ~/.local/share/dbus-1/services, and it starts them outside the sandbox; this one starts only the
        accessibility bus and dconf (settings, written into the disposable home), the system's, each inside
        the desktop's sandbox."""
        services = self._root() / "bus-services"
        services.mkdir()
        for name in _BUS_SERVICES:
            source = Path("/usr/share/dbus-1/services") / name
            if source.is_file():
                (services / name).write_text(self._sandboxed_service(source), encoding="utf-8")
        config = self._root() / "bus.conf"
        config.write_text(_BUS_CONFIG.format(socket=socket, services=services), encoding="utf-8")
        return config

    def _sandboxed_service(self, source: Path) -> str:
        """The system's service file with its program started inside the desktop's sandbox. Started outside,
        dconf's service wrote where a command's symlink in the home pointed (`~/.config/dconf` → any folder
        on this machine: a file `user` appeared there, as root when Conway runs as root)."""
        lines = source.read_text(encoding="utf-8").splitlines()
        program = next((ln.partition("=")[2].strip() for ln in lines if ln.startswith("Exec=")), "")
        guest = [f"{k}={v}" for k, v in self._guest_env().items()]
        prep = self._env().prepare(["/usr/bin/env", *guest, *shlex.split(program)], cwd=GUEST_HOME, env={})
        # without --die-with-parent: the accessibility launcher died with it as soon as it started its bus
        # (tried); the desktop's kill() ends the services anyway (the bus's tree, then every bwrap on its home)
        argv = [a for a in prep.argv if a != "--die-with-parent"]
        exec_line = "Exec=" + " ".join(shlex.quote(a) for a in argv)
        return "\n".join(exec_line if ln.startswith("Exec=") else ln for ln in lines
                         if not ln.startswith("SystemdService=")) + "\n"

    def _guest_env(self) -> dict[str, str]:
        run = str(self.run_dir)
        return {
            "PATH": f"{GUEST_BIN}:{_PATH}", "PYTHONPATH": GUEST_LIB, "HOME": GUEST_HOME, "USER": "user", "LOGNAME": "user", "SHELL": "/bin/sh",
            "LANG": os.environ.get("LANG") or "C.UTF-8", "TERM": "xterm-256color",
            "DISPLAY": self.display, "XDG_RUNTIME_DIR": run, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={run}/bus",
            # accessibility on for every toolkit: GTK 3 loads its bridge by itself unless NO_AT_BRIDGE is set
            # (it is not); GTK 2 needs the modules named; Qt reads these two; Gecko (Thunderbird) shows nothing
            # to AT-SPI without GNOME_ACCESSIBILITY=1 where no GNOME setting turns accessibility on (OSWorld's
            # VM has GNOME's on; its Thunderbird tasks are scored on that tree)
            "GTK_MODULES": "gail:atk-bridge", "QT_ACCESSIBILITY": "1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
            "GNOME_ACCESSIBILITY": "1",
        }

    def env(self) -> dict[str, str]:
        """What Conway's observer and GUI actuator need (outside the sandbox) to use this display and bus."""
        self._env()  # started, or say so
        run = str(self.run_dir)
        return {"DISPLAY": self.display, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={run}/bus", "XDG_RUNTIME_DIR": run}

    def close(self, keep: bool | None = None) -> None:
        """Kill every process it started (process groups), stop the bus and Xvfb, delete the root unless kept."""
        self.kill()
        keep = self.keep if keep is None else keep
        if self.root is not None:
            if keep:
                print(f"kept the task's desktop root: {self.root} (its home: {self.root / 'home'})", file=sys.stderr)
            else:
                shutil.rmtree(self.root, ignore_errors=True)
                self.root = None

    def kill(self) -> None:
        """Kill everything running on this desktop, its folders left as they are: the applications it launched,
        the bus, Xvfb, then every command still in its sandbox (setup's and the agent's shell commands alike,
        found by the desktop's home in their bwrap command line). What a task's watchdog does to a task whose
        loop does not stop; `close` does it too."""
        for proc in self._spawned:
            kill_tree(proc, 1.0)
        self._spawned.clear()
        if self._bus is not None:  # the bus's children too: the accessibility bus and registry it activated
            kill_tree(self._bus, 1.0)
            self._bus = None
        if self._x is not None:
            self._x.stop()
            self._x = None
        if self.root is not None:  # what is still running in the sandbox: the agent's commands, setup's
            _kill_sandboxed(str(self.root / "home"), self._bwrap)
        if self.run_dir is not None:  # sockets only: nothing to keep
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self.run_dir = None

    # --- TaskEnv -----------------------------------------------------------------

    def lost(self) -> str | None:
        """What of the desktop died while it was in use (its X server, its bus), or None while all is well."""
        if self._x is not None and self._x.proc.poll() is not None:
            return f"the desktop's X server {self.display} died (exit {self._x.proc.returncode})"
        if self._bus is not None and self._bus.poll() is not None:
            return f"the desktop's session bus died (exit {self._bus.returncode})"
        return None

    def host_path(self, guest_path: str) -> Path:
        """`/home/user/…`, `~/…` or a path relative to the home → the file in the disposable home; PathEscape
        for anything else (`..` out of it, another absolute path, a link pointing out)."""
        return resolve([Bind(GUEST_HOME, self.home, True)], guest_path, cwd=GUEST_HOME, home=GUEST_HOME).host

    def _env(self) -> BubblewrapEnvironment:
        if self.environment is None:
            raise RuntimeError("the desktop is not started (use it as a context manager)")
        return self.environment

    def run(self, command: str | list[str], *, shell: bool = False, timeout_s: float = 30.0,
            cwd: str | None = None) -> CommandResult:
        argv = ["/bin/sh", "-c", command if isinstance(command, str) else " ".join(command)] if shell else (
            command.split() if isinstance(command, str) else list(command))
        if not argv:
            return CommandResult(127, "", "empty command")
        inside = GUEST_HOME if cwd is None else self._env().resolve(cwd, cwd=GUEST_HOME).inside  # PathEscape
        prep = self._env().prepare(argv, cwd=inside, env={})
        return run_bounded(list(prep.argv), env=prep.env, cwd=prep.cwd, timeout_s=timeout_s)

    def spawn(self, command: str | list[str], *, shell: bool = False) -> None:
        argv = ["/bin/sh", "-c", command if isinstance(command, str) else " ".join(command)] if shell else (
            command.split() if isinstance(command, str) else list(command))
        if not argv:
            raise ValueError("empty command")
        # The sandbox ends when its first process does (its pid namespace goes with it); a launcher that forks
        # the application and exits (xdg-open) must not take the application along, so a shell stays until
        # the namespace holds nothing but itself and bwrap's init.
        linger = ('"$@"; while :; do n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; '
                  '[ "$n" -le 2 ] && exit 0; sleep 0.5; done')
        prep = self._env().prepare(["/bin/sh", "-c", linger, "sh", *argv], cwd=GUEST_HOME, env={})
        self._spawned.append(subprocess.Popen(prep.argv, env=prep.env, cwd=prep.cwd, stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              start_new_session=True))

    def kill_matching(self, pattern: str, *, wait_s: float = 5.0) -> int:
        """`pkill PATTERN` on this desktop (OSWorld's `launch pkill chrome` before it restarts the browser): SIGTERM
        every process in its sandboxes whose name matches the regular expression, then wait up to `wait_s` for
        them to end; returns how many matched. Done from outside, because each command has a pid namespace of
        its own and a `pkill` inside would see only itself. A process answers to its name and, for an
        interpreter running a program (the desktop's `vlc` launcher), to that program's name; Chromium also to
        `chrome`, the name OSWorld's VM gives Google Chrome's processes."""
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"pkill pattern {pattern!r}: {exc}") from None
        matched = [p for p in _sandboxed(str(self._root() / "home"), self._bwrap).values()
                   if any(regex.search(n) for n in _names(p))]
        for p in matched:
            try:
                p.terminate()
            except psutil.Error:
                pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not all(_gone(p) for p in matched):
            time.sleep(0.05)
        return len(matched)

    def terminal_output(self) -> str | None:
        """The text of the first terminal window on this desktop, read through AT-SPI; None when none is open or
        the accessibility bus does not answer (within 10 s)."""
        try:
            done = subprocess.run([sys.executable, str(_TERMINAL_HELPER)], env={**os.environ, **self.env()},
                                  capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
            text = json.loads(done.stdout.strip().splitlines()[-1])["text"]
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError, KeyError):
            return None
        return None if text is None else text.rstrip()

    def accessibility_tree(self) -> str | None:
        """Every application's accessibility tree on this desktop as OSWorld's XML (`_atspi_xml.py`, run outside
        the sandbox on this desktop's bus); None when the accessibility bus does not answer (within
        `TREE_TIMEOUT_S`) or AT-SPI is not available."""
        try:
            done = subprocess.run([sys.executable, str(_TREE_HELPER)], env={**os.environ, **self.env()},
                                  capture_output=True, text=True, timeout=TREE_TIMEOUT_S, stdin=subprocess.DEVNULL)
            xml = json.loads(done.stdout.strip().splitlines()[-1])["xml"]
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError, KeyError):
            return None
        return xml if isinstance(xml, str) else None


def _sandboxed(home: str, bwrap: str) -> dict[int, psutil.Process]:
    """Every bwrap process whose command line binds `home` (one desktop's sandbox) and everything under it."""
    name = os.path.basename(bwrap)
    found: dict[int, psutil.Process] = {}
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if p.info["name"] == name and home in (p.info["cmdline"] or []):
                found[p.pid] = p
                found.update((c.pid, c) for c in p.children(recursive=True))
        except psutil.Error:
            continue
    return found


def _names(p: psutil.Process) -> list[str]:
    """What `pkill` matches a process by here: its name, the program an interpreter runs, chrome for Chromium."""
    try:
        name, cmdline = p.name(), p.cmdline()
    except psutil.Error:
        return []
    names = [name]
    if name.startswith("python") and len(cmdline) > 1:
        names.append(os.path.basename(cmdline[1]).removesuffix(".py").removeprefix("conway_"))
    if name.startswith("chromium"):
        names.append("chrome")
    return names


def _kill_sandboxed(home: str, bwrap: str) -> None:
    """SIGKILL every process of one desktop's sandbox (`_sandboxed`: its pid namespace ends with it); returns
    once they are gone or zombies (their parents reap them)."""
    victims = _sandboxed(home, bwrap)
    for p in victims.values():
        try:
            p.kill()
        except psutil.Error:
            pass
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and not all(_gone(p) for p in victims.values()):
        time.sleep(0.02)


def _gone(p: psutil.Process) -> bool:
    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True
