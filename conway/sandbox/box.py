"""One box per task desktop: everything of the desktop inside one bubblewrap sandbox, as an unprivileged user,
within limits, and nothing of it outliving the box.

The boundary (docs/desktop.md#the-box) in one paragraph: the X server, the session bus, the accessibility bus and
registry, dconf, the applications, the task's commands and Conway's own helpers that read the desktop (its
accessibility tree, a terminal's text) all run in ONE bubblewrap sandbox with its own user, pid, network, IPC and
mount namespaces. Its first program (`_box_init.py`) starts the desktop and answers requests on a listening socket
this process creates in a folder the box cannot see and hands in as a file descriptor; answers are JSON lines
parsed strictly here, so nothing of the inside becomes an address, a path, a command, a library or an environment
on this side. The host keeps the display connection for capture and input (through a hard link to the X server's
socket, so the box cannot swap the server this side talks to) and the task's home folder (a bind, read and
written only through `safe_files`, which follows no link).

As which user: started by root, the box runs as a uid of its own that owns nothing on this machine
(`BOX_UID_BASE` + a slot held with a lock for the box's life); started by another user, as that user. Inside,
everything runs as uid 1000 ("user") holding no capability, so `/proc/sys` and `/sys` are read-only to it.

Limits: pids, memory and CPU through a cgroup of the box's own where this process may make one (root: cgroup v1's
pids / memory / cpu hierarchies, or a v2 subtree), rlimits otherwise; sized tmpfs mounts for /tmp, /dev/shm and
the runtime folder; the home's size watched (`disk_mb`). Each breach is named (`Box.breaches`).

Nothing outlives it: bubblewrap's --die-with-parent and the box's own pid namespace end every process in it when
Conway ends, even by SIGKILL; its folders are swept at the next start (`sweep`).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from conway.sandbox import seccomp
from conway.sandbox.environment import BWRAP, SandboxError

__all__ = ["BOX_UID_BASE", "Box", "BoxLimits", "GUEST_UID", "sweep"]

GUEST_UID = 1000
"""The uid every program in the box has, inside ("user", as OSWorld's VM names its user)."""
BOX_UID_BASE = 1_800_000_000
"""Started by root, box N runs as this + N on this machine: a uid no file, process or account here has."""
_SLOTS = 4096
_INIT = Path(__file__).with_name("_box_init.py")
_SYSTEM_DIRS = ("/usr", "/etc", "/opt", "/var/lib/dbus", "/var/cache/fontconfig")
_LINKS = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64", "/lib32": "usr/lib32",
          "/libx32": "usr/libx32"}
_MAX_LINE = 96 << 20
"""The longest answer line accepted from the box (a frame of 64 KiB output is far below): past it, the box is lying."""
X_DIR = "/tmp/.X11-unix"
PASSWD = "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
GROUP = "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n"


@dataclass(frozen=True)
class BoxLimits:
    """Per-desktop limits (`tasks.limits.*`); 0 means no limit of that kind."""

    pids: int = 1024
    memory_mb: int = 4096
    cpus: float = 0.0
    """CPU share: at most this many cores' worth of time (0: no cap)."""
    cpu_seconds: int = 0
    """RLIMIT_CPU for each program in the box (0: none)."""
    disk_mb: int = 2048
    """The home's size, and each tmpfs's (/tmp, /dev/shm)."""
    file_mb: int = 0
    """RLIMIT_FSIZE (0: as disk_mb)."""


@dataclass
class BoxRun:
    """What a `run` request gave back."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    signal: int | None = None
    start_error: str | None = None


class BoxError(SandboxError):
    """The box broke its protocol, died, or refused a request; one line."""


@dataclass
class _Cgroup:
    paths: list[Path] = field(default_factory=list)
    version: int = 0

    def procs_files(self) -> list[str]:
        return [str(p / "cgroup.procs") for p in self.paths]


def _own_cgroup_v1(controller: str) -> Path | None:
    base = Path("/sys/fs/cgroup") / controller
    if not (base / "cgroup.procs").exists():
        return None
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            if controller in ctrls.split(","):
                return base / path.lstrip("/")
    except (OSError, ValueError):
        return None
    return base


def _make_cgroup(name: str, limits: BoxLimits) -> tuple[_Cgroup, list[str]]:
    """A cgroup of the box's own with its limits written, and the limits it could not set (said in the report)."""
    group = _Cgroup()
    missing: list[str] = []
    if os.geteuid() != 0:
        return group, ["cgroup (not root: rlimits instead)"]
    v2 = Path("/sys/fs/cgroup/cgroup.controllers")
    if v2.exists():
        try:
            own = Path("/proc/self/cgroup").read_text().splitlines()[0].split(":", 2)[2]
            path = Path("/sys/fs/cgroup") / own.lstrip("/") / name
            path.mkdir()
            group.paths, group.version = [path], 2
            if limits.pids:
                (path / "pids.max").write_text(str(limits.pids))
            if limits.memory_mb:
                (path / "memory.max").write_text(str(limits.memory_mb << 20))
                _try_write(path / "memory.swap.max", "0")
            if limits.cpus:
                (path / "cpu.max").write_text(f"{int(limits.cpus * 100000)} 100000")
            return group, missing
        except (OSError, IndexError):
            _remove_cgroup(group)
            group = _Cgroup()
    group.version = 1
    for controller, wanted in (("pids", limits.pids), ("memory", limits.memory_mb), ("cpu", limits.cpus)):
        if not wanted:
            continue
        parent = _own_cgroup_v1(controller)
        try:
            if parent is None:
                raise OSError("no such hierarchy")
            path = parent / name
            path.mkdir()
            group.paths.append(path)
            if controller == "pids":
                (path / "pids.max").write_text(str(limits.pids))
            elif controller == "memory":
                (path / "memory.limit_in_bytes").write_text(str(limits.memory_mb << 20))
                _try_write(path / "memory.memsw.limit_in_bytes", str(limits.memory_mb << 20))
            else:
                (path / "cpu.cfs_period_us").write_text("100000")
                (path / "cpu.cfs_quota_us").write_text(str(int(limits.cpus * 100000)))
        except OSError:
            missing.append(f"{controller} cgroup")
    return group, missing


def _try_write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:
        pass


def _remove_cgroup(group: _Cgroup) -> None:
    for path in group.paths:
        for _ in range(50):  # the kernel refuses while a process (a dying one) is still in it
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                _kill_cgroup(path)
                time.sleep(0.05)


def _kill_cgroup(path: Path) -> None:
    try:
        pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _counter(path: Path, names: tuple[str, ...], key: str) -> int:
    for name in names:
        try:
            for line in (path / name).read_text().splitlines():
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
        except (OSError, ValueError):
            continue
    return 0


def _slot_dir() -> Path:
    return Path(tempfile.gettempdir()) / "conway-box-slots"


def _take_uid_slot() -> tuple[int, int]:
    """(uid, lock fd): a uid no other live box holds; the lock goes when this process does (even by SIGKILL)."""
    folder = _slot_dir()
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    for slot in range(_SLOTS):
        fd = os.open(folder / f"{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return BOX_UID_BASE + slot, fd
    raise SandboxError(f"no free box uid: {_SLOTS} desktops are running")


def _take_display() -> tuple[int, str]:
    """A display number free on this machine, held by its lock file (/tmp/.XN-lock, as X servers do)."""
    for n in range(200, 1200):
        lock = f"/tmp/.X{n}-lock"
        if os.path.exists(f"{X_DIR}/X{n}") or _abstract_x_listens(n):
            continue
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid():>10}\n")
        return n, lock
    raise SandboxError("no free X display number between :200 and :1199")


def _abstract_x_listens(n: int) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(f"\0{X_DIR}/X{n}")
        return True
    except OSError:
        return False
    finally:
        s.close()


def sweep() -> list[str]:
    """Remove what boxes of dead Conway processes left (their roots, X lock files and socket links, cgroups);
    returns what was removed. Called at every box start."""
    removed: list[str] = []
    tmp = Path(tempfile.gettempdir())
    for root in tmp.glob("conway-desktop-*"):
        owner = _owner(root)
        if owner is not None and not _pid_alive(owner):
            _umount_quietly(root / "home")
            shutil.rmtree(root, ignore_errors=True)
            removed.append(str(root))
    for lock in Path("/tmp").glob(".X*-lock"):
        try:
            if not lock.name[2:-5].isdigit() or int(lock.name[2:-5]) < 200:
                continue
            pid = int(lock.read_text().strip() or "0")
        except (OSError, ValueError):
            continue
        if pid and not _pid_alive(pid) and (Path(X_DIR) / f"X{lock.name[2:-5]}").exists():
            for p in (Path(X_DIR) / f"X{lock.name[2:-5]}", lock):
                try:
                    p.unlink()
                    removed.append(str(p))
                except OSError:
                    pass
    if os.geteuid() == 0:
        for parent in {_own_cgroup_v1(c) for c in ("pids", "memory", "cpu")} - {None}:
            for group in parent.glob("conway-box-*"):
                pid = group.name.rsplit("-", 2)[-2] if group.name.count("-") >= 3 else ""
                if pid.isdigit() and not _pid_alive(int(pid)):
                    _remove_cgroup(_Cgroup([group]))
                    removed.append(str(group))
    return removed


def _owner(root: Path) -> int | None:
    try:
        return int((root / "owner").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _umount_quietly(path: Path) -> None:
    if os.geteuid() == 0 and os.path.ismount(path):
        subprocess.run(["umount", "-l", str(path)], capture_output=True, stdin=subprocess.DEVNULL)


class Box:
    """See the module docstring. `root`: the desktop's folder (home/, box/ …), made by the caller;
    `guest`: a read-only folder shown at /run/conway; `env`: the environment every program inside gets (an
    allowlist the caller builds); `network`: the box's own network namespace reaches the internet through
    slirp4netns (never this machine's loopback or its abstract sockets)."""

    def __init__(self, root: Path, *, size: tuple[int, int], env: dict[str, str], guest: Path,
                 bus_config: str, network: bool = False, limits: BoxLimits | None = None, bwrap: str = BWRAP):
        self.root = root
        self.size = size
        self.env = dict(env)
        self.guest = guest
        self.bus_config = bus_config
        self.network = network
        self.limits = limits or BoxLimits()
        self.bwrap = bwrap
        self.display = ""
        self.uid = os.getuid()
        self.proc: subprocess.Popen[bytes] | None = None
        self.unenforced: list[str] = []
        """Limits this machine would not let us set (said in the report)."""
        self._ctl_dir: Path | None = None
        self._slot_fd: int | None = None
        self._lock = ""
        self._x_link = ""
        self._cgroup = _Cgroup()
        self._counts0: dict[str, int] = {}
        self._net: subprocess.Popen[bytes] | None = None

    # --- life ------------------------------------------------------------------

    def start(self) -> None:
        sweep()
        (self.root / "owner").write_text(f"{os.getpid()}\n")
        if not (os.path.isfile(self.bwrap) and os.access(self.bwrap, os.X_OK)):
            raise SandboxError(f"bubblewrap is not installed ({self.bwrap} is missing; Debian: apt-get install bubblewrap)")
        if self.network and shutil.which("slirp4netns") is None:
            raise SandboxError("--network needs slirp4netns for the desktop's own network (Debian: apt-get install "
                               "slirp4netns); the desktop never shares this machine's network")
        number, self._lock = _take_display()
        self.display = f":{number}"
        if os.geteuid() == 0:
            self.uid, self._slot_fd = _take_uid_slot()
        box = self.root / "box"
        box.mkdir(exist_ok=True)
        (box / "init.py").write_bytes(_INIT.read_bytes())
        (box / "bus.conf").write_text(self.bus_config, encoding="utf-8")
        (box / "passwd").write_text(PASSWD)
        (box / "group").write_text(GROUP)
        x11 = Path(tempfile.mkdtemp(prefix="conway-x11-", dir="/tmp"))  # beside /tmp/.X11-unix: one file system
        self._x11 = x11
        os.chmod(self.root, 0o711)  # the box's uid passes through to its folders, lists nothing here
        for p in (self.root / "home", x11):
            os.chmod(p, 0o700)
        if os.geteuid() == 0:
            self._mount_home()
            _chown_tree(self.root / "home", self.uid)
            os.chown(x11, self.uid, self.uid)
        self._ctl_dir = Path(tempfile.mkdtemp(prefix="conway-ctl-"))
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self._ctl_dir / "ctl"))
        listener.listen(64)
        name = f"conway-box-{os.getpid()}-{number}"
        self._cgroup, self.unenforced = _make_cgroup(name, self.limits)
        self._counts0 = self._counts()
        try:
            self._launch(listener, x11, number)
        finally:
            listener.close()
        if self.network:
            self._start_network()
        state = self._ready()
        if state.get("problem"):
            raise SandboxError(f"the desktop did not start in its box: {state['problem']}")
        os.makedirs(X_DIR, mode=0o1777, exist_ok=True)
        self._x_link = f"{X_DIR}/X{number}"
        try:  # a hard link: this side keeps talking to this X server even if the box replaces its own file
            os.link(x11 / f"X{number}", self._x_link)
        except OSError as exc:
            raise SandboxError(f"cannot show the desktop's display to this machine ({self._x_link}): {exc}") from None

    def _mount_home(self) -> None:
        """Root: the home is a tmpfs of `disk_mb` (a task that fills it gets ENOSPC, this machine's disk is
        untouched). Elsewhere the home is a plain folder and `disk_mb` is watched (`breaches`)."""
        if not self.limits.disk_mb:
            return
        home = self.root / "home"
        seeded = self.root / "home-seed"
        home.rename(seeded)  # what the caller put in the home goes into the tmpfs
        home.mkdir(mode=0o700)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.limits.disk_mb}m,mode=0700,nosuid,nodev",
                               "conway-home", str(home)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            self.unenforced.append("home size (mount refused)")
        shutil.copytree(seeded, home, symlinks=True, dirs_exist_ok=True)
        shutil.rmtree(seeded, ignore_errors=True)

    def _launch(self, listener: socket.socket, x11: Path, number: int) -> None:
        fds: list[int] = [listener.fileno()]
        try:
            argv = self._bwrap_argv(x11, number, fds)
            self._spawn(argv, fds)
        finally:
            for fd in fds[1:]:
                os.close(fd)

    def _bwrap_argv(self, x11: Path, number: int, fds: list[int]) -> list[str]:
        """bubblewrap's command line for the box; the descriptors it needs are appended to `fds`."""
        lim = self.limits
        argv = [self.bwrap, "--unshare-user", "--disable-userns", "--uid", str(GUEST_UID), "--gid", str(GUEST_UID),
                "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--hostname", "conway-desktop", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--clearenv"]
        for d in _SYSTEM_DIRS:
            if os.path.exists(d):
                argv += ["--ro-bind", d, d]
        for link, target in _LINKS.items():
            if os.path.islink(link):
                argv += ["--symlink", target, link]
            elif os.path.isdir(link):
                argv += ["--ro-bind", link, link]
        def data(text: str) -> str:
            fd = os.memfd_create("conway-box-file", 0)
            os.write(fd, text.encode())
            os.lseek(fd, 0, os.SEEK_SET)
            fds.append(fd)
            return str(fd)

        argv += ["--ro-bind-data", data(PASSWD), "/etc/passwd", "--ro-bind-data", data(GROUP), "/etc/group",
                 "--proc", "/proc", "--dev", "/dev"]
        disk = str(lim.disk_mb << 20) if lim.disk_mb else None
        for path in ("/tmp", "/dev/shm", "/var/tmp"):
            argv += (["--size", disk] if disk else []) + ["--perms", "1777", "--tmpfs", path]
        argv += ["--size", str(64 << 20), "--perms", "0700", "--tmpfs", "/run/user/1000",
                 # folders by path (bubblewrap's --bind-fd goes through /proc/self/fd, which the box's uid may not
                 # read once setpriv changed it), made by this side under a folder the box's uid may pass through
                 "--dir", "/home", "--bind", str(self.root / "home"), "/home/user",
                 "--bind", str(x11), X_DIR,
                 "--ro-bind", str(self.root / "box"), "/run/conway-box",
                 "--ro-bind", str(self.guest), "/run/conway",
                 "--remount-ro", "/", "--chdir", "/home/user"]
        for k, v in self.env.items():
            argv += ["--setenv", k, v]
        argv += ["--setenv", "DISPLAY", f":{number}", "--setenv", "CONWAY_BOX_FD", str(fds[0])]
        prog = seccomp.program()
        if prog is not None and hasattr(os, "memfd_create"):
            memfd = os.memfd_create("conway-box-seccomp", 0)
            os.write(memfd, prog)
            os.lseek(memfd, 0, os.SEEK_SET)
            fds.append(memfd)
            argv += ["--seccomp", str(memfd)]  # closed with the rest once bubblewrap has them
        argv += ["--", "/usr/bin/python3", "-I", "-S", "/run/conway-box/init.py", str(number),
                 f"{self.size[0]}x{self.size[1]}x24"]
        return argv

    def _spawn(self, argv: list[str], fds: list[int]) -> None:
        rlimits = self._rlimits()
        # join the cgroups, set the rlimits, become the box's uid (root only), then bubblewrap: a shell line of
        # fixed text, its arguments passed apart
        script = ('for c in $CG; do echo $$ > "$c" || exit 97; done; '
                  'exec prlimit $RL -- "$@"' if rlimits else
                  'for c in $CG; do echo $$ > "$c" || exit 97; done; exec "$@"')
        lead = (["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--"]
                if os.geteuid() == 0 else [])
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "CG": " ".join(self._cgroup.procs_files()),
               "RL": " ".join(rlimits)}
        with open(self.root / "box.log", "wb") as log:
            self.proc = subprocess.Popen(["/bin/sh", "-c", script, "sh", *lead, *argv], env=env,
                                         pass_fds=tuple(fds), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)

    def _rlimits(self) -> list[str]:
        lim = self.limits
        out = []
        if lim.pids and not any(p.parent.name == "pids" or (self._cgroup.version == 2) for p in self._cgroup.paths):
            out.append(f"--nproc={lim.pids}")
        if lim.cpu_seconds:
            out.append(f"--cpu={lim.cpu_seconds}")
        fsize = lim.file_mb or lim.disk_mb
        if fsize:
            out.append(f"--fsize={fsize << 20}")
        return out

    def _start_network(self) -> None:
        """slirp4netns gives the box's own network namespace a NAT to the internet; this machine's loopback
        stays unreachable (--disable-host-loopback), and so do its abstract sockets (another namespace)."""
        assert self.proc is not None
        child = self._box_child()
        r, w = os.pipe()
        try:
            self._net = subprocess.Popen(
                ["slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback", f"--ready-fd={w}",
                 *([] if os.geteuid() == 0 else [f"--userns-path=/proc/{child}/ns/user"]),
                 "--netns-type=path", f"/proc/{child}/ns/net", "tap0"],
                pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
            os.close(w)
            w = -1
            with os.fdopen(r, "rb") as ready:
                r = -1
                if ready.read(1) != b"1":
                    raise SandboxError("the desktop's network (slirp4netns) did not start")
        finally:
            for fd in (r, w):
                if fd >= 0:
                    os.close(fd)

    def _box_child(self) -> int:
        """The pid (on this machine) of a process inside the box's namespaces: the init's."""
        deadline = time.monotonic() + 15
        me = os.readlink("/proc/self/ns/net")
        while time.monotonic() < deadline:
            for pid in _descendants(self.proc.pid if self.proc else 0):
                try:
                    if os.readlink(f"/proc/{pid}/ns/net") != me:
                        return pid
                except OSError:
                    continue
            time.sleep(0.02)
        raise SandboxError("the desktop's box did not start")

    def _ready(self, timeout_s: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise SandboxError(f"the desktop's box exited at start ({self._box_said()})")
            try:
                return self.request({"op": "ready"}, timeout_s=max(1.0, deadline - time.monotonic()))
            except BoxError as exc:
                last = str(exc)
                time.sleep(0.05)
        raise SandboxError(f"the desktop's box did not answer within {timeout_s:g} s ({last})")

    def _box_said(self) -> str:
        try:
            lines = (self.root / "box.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        code = self.proc.returncode if self.proc else None
        if code == 97:
            return "it could not join its cgroup"
        return (lines[-1][:300] if lines else f"exit code {code}")

    def stop(self, unmount_home: bool = True) -> None:
        """End every process of the box (its pid namespace goes with its first process), remove its links,
        locks and cgroups; the home's size-bounded mount too unless `unmount_home` is False (the desktop's `kill`
        leaves the home readable until `close`)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            for path in self._cgroup.paths:
                _kill_cgroup(path)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        if self._net is not None:
            self._net.kill()
            self._net.wait()
            self._net = None
        _remove_cgroup(self._cgroup)
        self._cgroup = _Cgroup()
        for path in (self._x_link, self._lock):
            if path:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        self._x_link = self._lock = ""
        for folder in (self._ctl_dir, getattr(self, "_x11", None)):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        self._ctl_dir = None
        if unmount_home:
            _umount_quietly(self.root / "home")
        if self._slot_fd is not None:
            os.close(self._slot_fd)
            self._slot_fd = None

    # --- the channel -------------------------------------------------------------

    @property
    def ctl_path(self) -> str:
        if self._ctl_dir is None:
            raise BoxError("the desktop's box is not running")
        return str(self._ctl_dir / "ctl")

    def connect(self, request: dict, timeout_s: float | None = 30.0) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout_s)
        try:
            s.connect(self.ctl_path)
            s.sendall((json.dumps(request) + "\n").encode())
        except OSError as exc:
            s.close()
            raise BoxError(f"the desktop's box does not answer: {exc}") from None
        return s

    def request(self, request: dict, timeout_s: float = 30.0) -> dict:
        """One request, one answer object (not `run`)."""
        try:
            with self.connect(request, timeout_s) as s:
                for frame in frames(s):
                    return frame
        except OSError as exc:
            raise BoxError(f"the desktop's box stopped answering: {exc}") from None
        raise BoxError("the desktop's box closed the connection without an answer")

    def run(self, argv: list[str], *, cwd: str, timeout_s: float | None, max_bytes: int = 16 << 20) -> BoxRun:
        before = self._counts()
        out, err = bytearray(), bytearray()
        end: dict = {}
        limit = None if timeout_s is None else timeout_s + 30.0
        try:
            with self.connect({"op": "run", "argv": argv, "cwd": cwd, "timeout": timeout_s,
                               "max_bytes": max_bytes}, limit) as s:
                for frame in frames(s):
                    if "o" in frame:
                        out += _b64(frame["o"])
                    elif "e" in frame:
                        err += _b64(frame["e"])
                    else:
                        end = frame
                        break
        except (OSError, TimeoutError) as exc:
            raise BoxError(f"the desktop's box stopped answering: {exc}") from None
        if "error" in end:
            raise BoxError(str(end["error"])[:300])
        if not end:
            raise BoxError("the desktop's box ended the command without saying how")
        rc = end.get("rc")
        result = BoxRun(rc if isinstance(rc, int) else None, bytes(out), bytes(err),
                        timed_out=end.get("timed_out") is True,
                        signal=end["signal"] if isinstance(end.get("signal"), int) else None,
                        start_error=str(end["start_error"])[:300] if end.get("start_error") else None)
        breach = self._breach_since(before)
        if breach and (result.signal or result.returncode not in (0, None)):
            result.start_error = breach
        return result

    # --- limits ------------------------------------------------------------------

    def _counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for path in self._cgroup.paths:
            if self._cgroup.version == 2:
                out["oom"] = _counter(path, ("memory.events",), "oom_kill")
                out["pids"] = _counter(path, ("pids.events",), "max")
            elif path.parent.name == "memory" or "memory" in str(path):
                out["oom"] = _counter(path, ("memory.oom_control",), "oom_kill")
            elif "pids" in str(path):
                out["pids"] = _counter(path, ("pids.events",), "max")
        return out

    def _breach_since(self, before: dict[str, int]) -> str | None:
        now = self._counts()
        if now.get("oom", 0) > before.get("oom", 0):
            return f"killed by the desktop's memory limit ({self.limits.memory_mb} MiB)"
        if now.get("pids", 0) > before.get("pids", 0):
            return f"the desktop's process limit was reached ({self.limits.pids} processes)"
        return None

    def breaches(self) -> list[str]:
        """Every limit this box hit since it started, named (for the task's report)."""
        out = []
        now = self._counts()
        if now.get("oom", 0) > self._counts0.get("oom", 0):
            out.append(f"memory limit ({self.limits.memory_mb} MiB): {now['oom'] - self._counts0.get('oom', 0)} "
                       "process(es) killed")
        if now.get("pids", 0) > self._counts0.get("pids", 0):
            out.append(f"process limit ({self.limits.pids}): {now['pids'] - self._counts0.get('pids', 0)} "
                       "fork(s) refused")
        if self.limits.disk_mb and self.root is not None:
            used = _usage(self.root / "home")
            if used >= (self.limits.disk_mb << 20) * 0.98:
                out.append(f"disk limit ({self.limits.disk_mb} MiB): the home is full")
        return out


def frames(s: socket.socket):
    """The JSON objects the box sends, one a line; a line past `_MAX_LINE` or one that is not an object ends it."""
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = s.recv(1 << 20)
            if not chunk:
                return
            buf += chunk
            if len(buf) > _MAX_LINE:
                raise BoxError("the desktop's box sent an answer longer than any it may send")
        line, buf = buf.split(b"\n", 1)
        try:
            obj = json.loads(line)
        except ValueError:
            raise BoxError("the desktop's box sent something that is not JSON") from None
        if not isinstance(obj, dict):
            raise BoxError("the desktop's box sent something that is not an object")
        yield obj


def _b64(value: object) -> bytes:
    if not isinstance(value, str):
        raise BoxError("the desktop's box sent output that is not text")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        raise BoxError("the desktop's box sent output that is not base64") from None


def _chown_tree(top: Path, uid: int) -> None:
    """Give the box's uid the home it writes in (root only; links are changed, never followed)."""
    for root, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)
    os.chown(top, uid, uid)


def _usage(top: Path) -> int:
    try:
        st = os.statvfs(top)
        if os.path.ismount(top):
            return (st.f_blocks - st.f_bfree) * st.f_frsize
    except OSError:
        return 0
    total = 0
    for root, _dirs, files in os.walk(top):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def _descendants(pid: int) -> list[int]:
    """Every process under `pid` (psutil's walk, as `conway.sandbox.process` uses)."""
    import psutil

    try:
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []
