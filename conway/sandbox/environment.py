"""The environment seam the toolbox runs commands through (in the spirit of mini-swe-agent's environments).

`LocalEnvironment` is the machine as it is: commands run as the user running Conway, paths are the user's
(routing, not a sandbox). `BubblewrapEnvironment` runs each command inside bubblewrap (`/usr/bin/bwrap`):

- the system directories (`/usr`, `/etc`, `/bin` …) read-only, the root itself read-only;
- `/home` and `/root` empty (tmpfs), so the real home and other users' files are not there; then the binds
  it was given (a workdir or a disposable home, read-write) on top;
- a private `/tmp` (a folder of its own, kept across its commands, removed by `close`);
- no network (`--unshare-net`: only a private loopback) unless `network=True`;
- the X socket of the command's `DISPLAY` and its session bus socket bound in, so GUI programs work;
- `--unshare-pid`, `--die-with-parent` and `--new-session`: nothing a command starts outlives it or Conway,
  and it cannot push keystrokes into Conway's terminal;
- a user namespace of its own (`--unshare-user`, `--disable-userns`) with no capabilities (`--cap-drop ALL`)
  and no new privileges (bwrap sets PR_SET_NO_NEW_PRIVS): a command cannot remount the read-only view, make
  device nodes, mount anything or nest a namespace to regain capabilities. Without it, bwrap started by root
  keeps every capability of its caller. Commands keep the caller's uid (root's: 0, holding nothing): a uid
  of its own inside would not match on the desktop's buses, whose EXTERNAL check compares the uid a client
  claims with the socket's (see `_unprivileged`);
- a seccomp filter (`conway.sandbox.seccomp`): the kernel keyring calls and the mount family fail with EPERM;
- started by root, what only root may read in the configuration folders (`/etc/shadow` …) hidden
  (`conway.sandbox.masks`), since uid 0 without capabilities still reads what root owns.

Both hand back an argv (and cwd, env) for `subprocess`: the caller keeps its own timeout, output bounding
and process-group kill, so a sandboxed shell command is cancelled exactly like a local one.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from conway.sandbox import masks, seccomp
from conway.sandbox.paths import Bind, Resolved, resolve
from conway.tasks.env import PathEscape

__all__ = ["BWRAP", "SYSTEM_PATH", "Bind", "BubblewrapEnvironment", "Environment", "LocalEnvironment", "Prepared",
           "SandboxError"]

BWRAP = "/usr/bin/bwrap"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
                "/var/lib/dbus", "/var/cache/fontconfig")
"""Shown read-only: what programs need to start (binaries, libraries, configuration, fonts' cache)."""
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""PATH for commands that see only the system's folders (a task's desktop)."""


class SandboxError(RuntimeError):
    """The sandbox cannot be used here (bubblewrap missing, namespaces refused); the message is one line."""


@dataclass(frozen=True)
class Prepared:
    argv: list[str] | str
    cwd: str | None
    env: dict[str, str] | None


class Environment(Protocol):
    name: str

    def availability(self) -> tuple[bool, str]:
        """Whether commands can run here (tried, not guessed) and a line saying how, or why not."""
        ...

    def prepare(self, argv: list[str] | str, *, cwd: str, env: dict[str, str] | None) -> Prepared:
        """What to hand `subprocess.Popen` to run `argv` in `cwd` (a path as this environment names it)."""
        ...

    def resolve(self, path: str, *, cwd: str) -> Resolved:
        """Where a path a tool was given lives on this machine; `PathEscape` when this environment hides it."""
        ...

    def close(self) -> None:
        ...


class LocalEnvironment:
    """Today's behaviour: the command runs as it is, paths are the current user's."""

    name = "local"

    def availability(self) -> tuple[bool, str]:
        return True, "commands run as the current user (no sandbox)"

    def prepare(self, argv: list[str] | str, *, cwd: str, env: dict[str, str] | None) -> Prepared:
        return Prepared(argv, cwd, env)

    def resolve(self, path: str, *, cwd: str) -> Resolved:
        p = Path(os.path.expanduser(path))
        return Resolved(inside=str(p if p.is_absolute() else Path(cwd) / p),
                        host=p if p.is_absolute() else Path(cwd) / p, writable=True)

    def close(self) -> None:
        pass


class BubblewrapEnvironment:
    """Commands inside bubblewrap with the view described in the module docstring."""

    name = "sandbox"

    def __init__(self, binds: list[Bind], *, home: str, network: bool = False, tmp: Path | None = None,
                 setenv: dict[str, str] | None = None, bwrap: str = BWRAP):
        self.binds = sorted(binds, key=lambda b: b.inside.count("/"))  # parents before what is bound inside
        self.home = home
        """HOME inside (and what `~` means to `resolve`)."""
        self.network = network
        self._own_tmp = tmp is None
        self._tmp = None if tmp is None else Path(tmp)
        self.setenv = dict(setenv or {})
        """Set in every command's environment on top of the one it is given."""
        self.bwrap = bwrap
        self.netns: str | None = None
        """A network namespace (`/proc/PID/ns/net`) every command joins instead of a loopback of its own
        (a disposable desktop's, so its programs reach each other); root only (`nsenter`)."""

    @classmethod
    def for_workdir(cls, workdir: Path, *, network: bool = False, bwrap: str = BWRAP) -> "BubblewrapEnvironment":
        """`conway run`'s sandbox: the tools' workdir read-write at its own path (and HOME), the rest read-only."""
        given = os.path.abspath(os.path.expanduser(str(workdir)))
        # shown at the path the tools use (links in it not followed: inside, the link would not exist)
        return cls([Bind(given, Path(given).resolve(), True)], home=given, network=network, bwrap=bwrap)

    @property
    def tmp(self) -> Path:
        """The host folder shown as /tmp (made at first use, so an environment never used leaves nothing)."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="conway-sandbox-tmp-"))
        return self._tmp

    # --- the view ------------------------------------------------------------

    def view(self, env: dict[str, str] | None = None, tmp: Path | None = None) -> list[Bind]:
        """Every bind a command gets (system, /tmp, display and bus sockets, the given binds), in mount order."""
        out = [Bind(d, Path(d)) for d in _SYSTEM_DIRS if os.path.exists(d)]
        out.append(Bind("/tmp", self.tmp if tmp is None else tmp, True))
        mine = [b.inside.rstrip("/") + "/" for b in self.binds]
        out.extend(b for b in _socket_binds(env or {}) if not any(b.inside.startswith(m) for m in mine))
        return out + self.binds

    def _bwrap_argv(self, env: dict[str, str], cwd: str, tmp: Path | None = None) -> list[str]:
        argv = [*(seccomp.launcher() or []), *([shutil.which("nsenter") or "nsenter", f"--net={self.netns}", "--"] if self.netns else []),
                self.bwrap]
        view = self.view(env, tmp)
        for b in view:
            if b.inside == "/tmp":  # after /home and /root are emptied, before anything bound under /tmp
                # /proc/sys read-only: uid 0 inside (Conway run by root) could otherwise write kernel settings
                # such as kernel/core_pattern, whose helper the kernel runs on the host with every capability
                argv += ["--tmpfs", "/home", "--tmpfs", "/root", "--dev", "/dev", "--tmpfs", "/dev/shm",
                         "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--symlink", "../tmp", "/var/tmp"]
            argv += ["--bind" if b.writable else "--ro-bind", str(b.host), b.inside]
        argv += masks.mask_args()  # root only: what only root may read in the system folders
        if not self.network and not self.netns:
            argv.append("--unshare-net")
        argv += _unprivileged(self.bwrap) + seccomp.bwrap_args()
        argv += ["--unshare-pid", "--die-with-parent", "--new-session", "--remount-ro", "/", "--chdir", cwd, "--"]
        return argv

    # --- the seam ------------------------------------------------------------

    def availability(self) -> tuple[bool, str]:
        problem = self.problem()
        if problem:
            return False, problem
        net = "network shared" if self.network else "no network"
        return True, f"bubblewrap sandbox ({net}; HOME {self.home}; the real home hidden; no capabilities)"

    def problem(self) -> str | None:
        """None when bubblewrap starts a command here; otherwise why not, in one line (tried, not guessed)."""
        if not (os.path.isfile(self.bwrap) and os.access(self.bwrap, os.X_OK)):
            return f"bubblewrap is not installed ({self.bwrap} is missing; Debian: apt-get install bubblewrap)"
        try:
            with tempfile.TemporaryDirectory(prefix="conway-sandbox-probe-") as probe_tmp:  # asking leaves nothing
                done = subprocess.run(self._bwrap_argv({}, "/", Path(probe_tmp)) + ["/bin/true"],
                                      stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=15)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap did not start: {exc}"
        if done.returncode == 0:
            return None
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        if any(w in last.lower() for w in ("namespace", "permission", "not permitted", "uid map")):
            return f"bubblewrap cannot create its namespaces here (user namespaces refused?): {last}"
        return f"bubblewrap failed on a no-op command: {last}"

    def require(self) -> None:
        problem = self.problem()
        if problem:
            raise SandboxError(problem)

    def prepare(self, argv: list[str] | str, *, cwd: str, env: dict[str, str] | None) -> Prepared:
        full = {**(os.environ if env is None else env), "HOME": self.home, **self.setenv}
        if isinstance(argv, str):
            argv = ["/bin/sh", "-c", argv]
        # bwrap itself starts in / (the cwd named is inside the sandbox: --chdir)
        return Prepared(self._bwrap_argv(full, cwd) + list(argv), "/", full)

    def resolve(self, path: str, *, cwd: str) -> Resolved:
        found = resolve(self.view(dict(os.environ, **self.setenv)), path, cwd=cwd, home=self.home)
        if masks.is_masked(found.inside):  # the files tool runs as Conway: it must not read what commands cannot
            raise PathEscape(f"{path}: only root may read it, and this sandbox hides it")
        return found

    def close(self) -> None:
        if self._own_tmp and self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _unprivileged(bwrap: str) -> list[str]:
    """What keeps a command from undoing its view: its own user namespace, no capabilities (bounding set
    included, so an exec as uid 0 regains none), no nested user namespace. The uid stays the caller's. Tried
    with uid 1000 inside a root-started desktop: D-Bus's EXTERNAL check refused the applications (they
    claim 1000, the bus reads 0 from the socket), and with ANONYMOUS allowed on the session and the
    accessibility bus the observer still saw no application. Holding no capability, uid 0 inside is no
    more than uid 1000 would be (both are root on this machine's files); the masks cover what that reads."""
    uid, gid = os.getuid(), os.getgid()
    # --disable-userns is bubblewrap 0.8's (Debian 12); an older one still nests no capability back: the
    # mounts a nested namespace would see are locked read-only by the kernel
    nested = ["--disable-userns"] if _knows(bwrap, "--disable-userns") else []
    return ["--unshare-user", *nested, "--uid", str(uid), "--gid", str(gid), "--cap-drop", "ALL"]


@functools.lru_cache(maxsize=8)
def _knows(bwrap: str, option: str) -> bool:
    """Whether this bubblewrap lists `option` in its --help (asked once per process)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option in done.stdout + done.stderr


def _socket_binds(env: dict[str, str]) -> list[Bind]:
    """The X socket of `DISPLAY` (":N") and the session bus socket (`unix:path=`), each at its own path."""
    out: list[Bind] = []
    display = env.get("DISPLAY", "")
    if display.startswith(":"):
        sock = f"/tmp/.X11-unix/X{display[1:].split('.')[0]}"
        if os.path.exists(sock):
            out.append(Bind(sock, Path(sock)))
    auth = env.get("XAUTHORITY")
    if auth and os.path.isfile(auth):
        out.append(Bind(auth, Path(auth)))
    for part in env.get("DBUS_SESSION_BUS_ADDRESS", "").split(";"):
        path = next((kv[5:] for kv in part.partition(":")[2].split(",") if kv.startswith("path=")), None)
        if path and os.path.exists(path):
            out.append(Bind(path, Path(path), True))
    return out
