"""The sandbox's boundary, tried from inside: escape attempts from a sandboxed shell command, as root and not.

    python -m scripts.reliability.sandbox_proof            # every attempt, both sandboxes, as the caller and (as root) as nobody
    python -m scripts.reliability.sandbox_proof --quick    # the same without the desktop (CI size)
    python -m scripts.reliability.sandbox_proof --json F   # also every row to F

Each attempt runs a shell command inside a sandbox built as Conway builds it (`BubblewrapEnvironment.for_workdir`,
what `conway run` with `tools.environment: sandbox` uses; a `DisposableDesktop`'s environment, what a task's
commands and applications use) and is judged from outside, on the host (a file that appeared, a process that
died, a connection accepted), never by what the command says about itself:

    remount       `mount -o remount,rw` of /usr, / and /etc, then a write into /usr
    mknod-mount   a block device node for the disk under / (its major:minor), then mounting it
    write-outside a file in a folder beside the bound one (same filesystem, not shown): plainly, and through
                  open_by_handle_at on the bound folder's mount (what CAP_DAC_READ_SEARCH allows)
    read-home     a secret in a folder standing for the hidden home (beside the bound one), and the real home's
                  names (`ls -A ~`), plainly and through open_by_handle_at
    read-root-only /etc/shadow (or another file only root may read in the shown system folders): its digest
    signal        `kill -9` of a `sleep` started outside, by its pid
    loopback      a TCP connection to a listener on the host's 127.0.0.1 (the sandbox has no network)
    keyring       keyctl on the session keyring bwrap leaves attached (the caller's keys: root's, as root)
    service-symlink (desktop) `~/.config/dconf` linked to a folder beside the home, then a setting written,
                  so that the bus's dconf service writes its database there
    atspi-address (desktop) the X root's AT_SPI_BUS set to a `unixexec:` address that touches a host path, then
                  the terminal, tree and snapshot helpers asked to read the desktop
    bus-env       (desktop) the bus's activation environment given LD_PRELOAD of a library in the home (and a
                  command in a variable), then dconf activated: the library must not load on the host
    proc-sys      (desktop and workdir) kernel/core_pattern written through /proc/sys
    files-race    (desktop) a file of the home swapped for a link to a host file between the files tool's check and
                  its write (the race made certain)
    leftovers     (desktop) a desktop in a process killed by SIGKILL: any process of it still running after 10 s

And the plumbing around the box, where the host takes something from a task file or serves the inside:

    step-output   (desktop) an execute step whose `stdout` names a host file (absolute, and `..` out)
    cache-name    (desktop) `cache_file` / `cloud_file` getters naming a host file: a score oracle for a secret
    viewer-token  `conway view --serve` on the host asked from a box sharing its network (`--network`) without
                  the token: escaped when the inside learns the token or reads a session's data
    xvfb-environ  (desktop) Conway's environment (a key under an unusual name) in the X server's environ

Run as root, it runs every attempt again as nobody (`setpriv --reuid=65534 --regid=65534 --clear-groups`).
Prints a table (attempt, sandbox, user, verdict); exit 0 when every attempt failed, 2 on any escape, 1 when the
sandbox could not be built at all.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from conway.sandbox import masks
from conway.sandbox.environment import BubblewrapEnvironment
from conway.sandbox.process import run_bounded
from scripts.reliability.common import REPO

ATTEMPTS = ("remount", "mknod-mount", "write-outside", "read-home", "read-root-only", "signal", "loopback", "keyring",
            "service-symlink", "atspi-address", "bus-env", "proc-sys", "files-race", "leftovers", "step-output",
            "cache-name", "viewer-token", "xvfb-environ")
SANDBOXES = ("workdir", "desktop")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@dataclass
class Box:
    """A sandbox to try, with a folder it shows read-write and a folder beside it that it must not show."""
    kind: str
    environment: BubblewrapEnvironment
    inside: str
    """The bound folder as the sandbox names it."""
    outside: Path
    """A host folder on the bound folder's filesystem, not shown."""
    desk: object = None
    """The DisposableDesktop (desktop kind)."""
    task_env: Any = None
    """The desktop as a task's steps and getters see it (`TaskEnv`); None for a sandbox without one."""


@dataclass
class Row:
    attempt: str
    sandbox: str
    user: str
    escaped: bool
    evidence: str

    @property
    def verdict(self) -> str:
        return "ESCAPED" if self.escaped else "held"


def _sh(box: Box, script: str, timeout_s: float = 20.0) -> str:
    prep = box.environment.prepare(script, cwd=box.inside, env=dict(os.environ))
    done = run_bounded(list(prep.argv), env=prep.env, cwd=prep.cwd, timeout_s=timeout_s)
    return (done.stdout + done.stderr).strip()


def _handle(path: Path) -> str:
    """The file handle of `path` (name_to_handle_at; needs no privilege) as hex, for open_by_handle_at inside."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8 + 128)
    ctypes.c_uint.from_buffer(buf).value = 128
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, str(path).encode(), buf, ctypes.byref(mount_id), 0) != 0:
        return ""
    size = ctypes.c_uint.from_buffer(buf).value
    return buf.raw[:8 + size].hex()


_BY_HANDLE = """python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
handle = ctypes.create_string_buffer(bytes.fromhex(sys.argv[2]))
fd = libc.open_by_handle_at(os.open(sys.argv[1], os.O_RDONLY), handle, int(sys.argv[3]))
print("open_by_handle_at", fd, os.strerror(ctypes.get_errno()) if fd < 0 else "")
if fd >= 0 and sys.argv[4] == "write":
    os.close(os.open("conway-escape", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)); print("WROTE")
elif fd >= 0:
    print(os.read(fd, 200).decode(errors="replace"))
' """


def _remount(box: Box) -> tuple[bool, str]:
    marker = Path(f"/usr/.conway-escape-{uuid.uuid4().hex[:8]}")
    try:
        said = _sh(box, f"mount -o remount,rw /usr; mount -o remount,rw /; mount -o remount,rw /etc; "
                        f"touch {marker}")
        return marker.exists(), said
    finally:
        marker.unlink(missing_ok=True)


def _mknod_mount(box: Box) -> tuple[bool, str]:
    dev = os.stat("/").st_dev
    major, minor = os.major(dev), os.minor(dev)
    said = _sh(box, f"mknod /tmp/disk b {major} {minor} && [ -b /tmp/disk ] && echo MKNOD; "
                    "mkdir -p /tmp/d /tmp/m; mount -t tmpfs -o dev none /tmp/d && "
                    f"mknod /tmp/d/disk b {major} {minor} && echo MKNOD && mount -o ro /tmp/d/disk /tmp/m "
                    "&& echo MOUNTED; umount /tmp/m /tmp/d 2>/dev/null; rm -f /tmp/disk")
    return "MKNOD" in said or "MOUNTED" in said, said


def _write_outside(box: Box) -> tuple[bool, str]:
    target = box.outside / "conway-escape"
    said = _sh(box, f"touch /etc/conway-escape /conway-escape {box.outside}/conway-escape; "
                    f"{_BY_HANDLE} {box.inside} {_handle(box.outside)} {os.O_RDONLY | os.O_DIRECTORY} write")
    escaped = target.exists() or Path("/etc/conway-escape").exists()
    target.unlink(missing_ok=True)
    Path("/etc/conway-escape").unlink(missing_ok=True)
    return escaped, said


def _read_home(box: Box) -> tuple[bool, str]:
    token = uuid.uuid4().hex
    secret = box.outside / "secret"
    secret.write_text(token)
    real = Path(os.path.expanduser("~"))
    names = sorted(os.listdir(real)) if real.is_dir() and os.access(real, os.R_OK) else []
    # a bind under the home (a temp folder there) shows the folders on its way, empty: not the home's content
    shown = {b.inside for b in box.environment.view(dict(os.environ))}
    names = [n for n in names if not any(p == f"{real}/{n}" or p.startswith(f"{real}/{n}/") for p in shown)]
    said = _sh(box, f"cat {secret}; ls -A {real}; {_BY_HANDLE} {box.inside} {_handle(secret)} {os.O_RDONLY} read")
    listed = set(said.split()) & set(names)
    return token in said or bool(listed), said.replace(token, "<the secret>")


def _read_root_only(box: Box) -> tuple[bool, str]:
    secret = "/etc/shadow"
    if not os.path.isfile(secret):
        secret = next((p for p, is_dir in masks.root_only() if not is_dir), "")
    if not secret:
        return False, "no file only root may read under /etc (not tried)"
    said = _sh(box, f"sha256sum {secret}")
    try:
        digest = hashlib.sha256(Path(secret).read_bytes()).hexdigest()
    except OSError:  # not root: the command's own answer is all there is
        digest = said.split()[0] if said and len(said.split()[0]) == 64 else "-"
    return digest in said, said


def _signal(box: Box) -> tuple[bool, str]:
    victim = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
    try:
        said = _sh(box, f"kill -9 {victim.pid}; python3 -c 'import os; os.kill({victim.pid}, 9)'")
        time.sleep(0.2)
        return victim.poll() is not None, said
    finally:
        victim.kill()
        victim.wait()


def _loopback(box: Box) -> tuple[bool, str]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        said = _sh(box, f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3); "
                        "print(\"CONNECTED\")'")
        try:
            listener.accept()[0].close()
            accepted = True
        except OSError:
            accepted = False
    return accepted or "CONNECTED" in said, said


def _keyring(box: Box) -> tuple[bool, str]:
    nr = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
    if nr is None:
        return False, "keyctl's number is not known on this machine (not tried)"
    said = _sh(box, "python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
                    f"print(\"KEYRING\", libc.syscall({nr}, 0, ctypes.c_long(-3), 1), ctypes.get_errno())'")
    return "KEYRING" in said and "KEYRING -1" not in said, said


def _service_symlink(box: Box) -> tuple[bool, str]:
    if box.kind != "desktop":
        return False, "no session bus in this sandbox (not tried)"
    said = _sh(box, f"mkdir -p ~/.config && ln -s {box.outside} ~/.config/dconf && "
                    "gsettings set org.gnome.desktop.interface cursor-size 33; sleep 1; "
                    "gsettings get org.gnome.desktop.interface cursor-size")
    time.sleep(0.5)
    return (box.outside / "user").exists(), said


def _atspi_address(box: Box) -> tuple[bool, str]:
    if box.desk is None:
        return False, "no desktop in this sandbox (not tried)"
    marker = box.outside / f"pwned-{uuid.uuid4().hex[:8]}"
    said = _sh(box, f"xprop -root -f AT_SPI_BUS 8s -set AT_SPI_BUS 'unixexec:path=/bin/touch,argv0=touch,argv1={marker}'"
                    " && echo SET")
    box.desk.terminal_output()
    box.desk.accessibility_tree()
    from conway.observe.accessibility import snapshot
    snapshot(helper_prefix=box.desk.helper_argv("_atspi_snapshot.py"), timeout_s=10)
    time.sleep(0.3)
    return marker.exists(), said


def _bus_env(box: Box) -> tuple[bool, str]:
    if box.desk is None:
        return False, "no desktop in this sandbox (not tried)"
    marker = box.outside / f"pwned-{uuid.uuid4().hex[:8]}"
    src = box.outside / "evil.c"
    src.write_text('#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void hit(void)'
                   f' {{ int fd = open("{marker}", O_CREAT | O_WRONLY, 0644); if (fd >= 0) close(fd); }}\n')
    lib = box.outside / "evil.so"
    if shutil.which("gcc") is None or subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)],
                                                     capture_output=True).returncode != 0:
        return False, "gcc could not build the library (not tried)"
    box.desk.write_file("evil.so", lib.read_bytes())
    said = _sh(box, "dbus-update-activation-environment LD_PRELOAD=/home/user/evil.so && "
                    f"dbus-update-activation-environment EVIL='touch {marker}'; "
                    "gsettings set org.gnome.desktop.interface cursor-size 31; sleep 1; "
                    "gsettings get org.gnome.desktop.interface cursor-size", timeout_s=30)
    return marker.exists(), said


def _proc_sys(box: Box) -> tuple[bool, str]:
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    said = _sh(box, "echo '|/bin/touch /tmp/conway-core' > /proc/sys/kernel/core_pattern; echo rc=$?")
    changed = Path("/proc/sys/kernel/core_pattern").read_text() != before
    if changed and os.geteuid() == 0:
        Path("/proc/sys/kernel/core_pattern").write_text(before)
    return changed, said


def _files_race(box: Box) -> tuple[bool, str]:
    if box.desk is None:
        return False, "no desktop in this sandbox (not tried)"
    from conway.actions import ReplaceText
    from conway.sandbox.box_environment import BoxEnvironment
    from conway.tools.files import FileTools
    target = box.outside / "host.conf"
    target.write_text("setting=old\n")

    class Racing(BoxEnvironment):
        def resolve(self, path, *, cwd):
            found = super().resolve(path, cwd=cwd)
            found.host.unlink()
            found.host.symlink_to(target)  # what a process inside does in a loop until it wins
            return found
    box.desk.write_file("race.txt", b"setting=old\n")
    result = FileTools(Path("/home/user"), environment=Racing(box.desk.box, box.desk.home)).run(
        ReplaceText(path="race.txt", old="old", new="pwned"))
    return target.read_text() != "setting=old\n", result.error or result.output


_KILLED_CHILD = """
import time
from conway.sandbox.desktop import DisposableDesktop
d = DisposableDesktop("killed")
d.start()
d.spawn(["sleep", "{tag}"])
print(d.display, flush=True)
time.sleep(600)
"""


def _leftovers(box: Box) -> tuple[bool, str]:
    if box.desk is None:
        return False, "no desktop in this sandbox (not tried)"
    tag = f"{uuid.uuid4().int % 1000}.{uuid.uuid4().int % 1000:03d}"
    from conway.sandbox.box_environment import relay_python
    child = subprocess.Popen([relay_python(), "-c", _KILLED_CHILD.format(tag=tag)], cwd=REPO, stdout=subprocess.PIPE,
                             text=True, start_new_session=True)
    display = child.stdout.readline().strip()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not _running(tag):
        time.sleep(0.1)
    os.kill(child.pid, 9)
    child.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (_running(tag) or _running(display)):
        time.sleep(0.1)
    left = _running(tag) + _running(display)
    return bool(left), f"after kill -9: {len(left)} process(es) of the desktop {display} left"


def _running(arg: str) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if arg.encode() in f.read().split(b"\0"):
                    with open(f"/proc/{pid}/stat", "rb") as f2:
                        if f2.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                            out.append(int(pid))
        except (OSError, ValueError, IndexError):
            continue
    return out
# --- the plumbing around the box: what the host takes from a task file, what it serves, what it hands its helpers --


@contextmanager
def _task_cache(box: Box) -> Iterator[Any]:
    """The desktop as a TaskEnv with a cache of its own (what `tasks run --cache` gives), its task's folder made."""
    env = box.task_env
    kept, env.cache_dir = env.cache_dir, box.outside.parent / "proof-cache"
    (env.cache_dir / env.task_id).mkdir(parents=True, exist_ok=True)
    try:
        yield env
    finally:
        shutil.rmtree(env.cache_dir, ignore_errors=True)
        env.cache_dir = kept


def _step_output(box: Box) -> tuple[bool, str]:
    if box.task_env is None:
        return False, "no task steps in this sandbox (not tried)"
    from conway.sandbox.setup import SetupError, run_setup

    targets = [box.outside / "conway-escape-abs", box.outside / "conway-escape-up"]
    said = []
    with _task_cache(box) as env:
        for name in (str(targets[0]), "../" * 24 + str(targets[1]).lstrip("/")):
            try:
                run_setup([{"type": "execute", "parameters": {"command": ["echo", "planted"], "stdout": name}}], env)
                said.append(f"{name}: ran")
            except SetupError as exc:
                said.append(str(exc))
    escaped = any(t.exists() for t in targets)
    for t in targets:
        t.unlink(missing_ok=True)
    return escaped, "; ".join(said)


def _cache_name(box: Box) -> tuple[bool, str]:
    if box.task_env is None:
        return False, "no task getters in this sandbox (not tried)"
    from conway.tasks.getters import GETTERS

    secret = box.outside / "secret"
    secret.write_text(uuid.uuid4().hex)
    said, escaped = [], False
    with _task_cache(box) as env:
        for getter, config in (("cache_file", {"path": str(secret)}),
                               ("cache_file", {"path": "../" * 24 + str(secret).lstrip("/")}),
                               ("cloud_file", {"path": "https://example.invalid/x", "dest": str(secret)})):
            try:
                got = GETTERS[getter](env, config)
                escaped = escaped or Path(got).resolve() == secret.resolve()
                said.append(f"{getter}: handed {got}")
            except Exception as exc:  # refused (PathEscape) or not found: held
                said.append(f"{getter}: {type(exc).__name__}: {exc}")
    secret.unlink(missing_ok=True)
    return escaped, "; ".join(said)


_ASK_VIEWER = """python3 -c '
import sys, urllib.request, urllib.error
for path in ("live", "", "index.html", "api/live"):
    try:
        print(path, urllib.request.urlopen(sys.argv[1] + path, timeout=5).read().decode(errors="replace")[:4000])
    except urllib.error.HTTPError as e:
        print(path, e.code, e.read().decode(errors="replace")[:4000])
    except OSError as e:
        print(path, "no answer:", e)
' """


def _viewer_token(box: Box) -> tuple[bool, str]:
    from conway.view.server import ViewServer
    from conway.view.site import Site

    work = box.outside / "viewer-work"
    work.mkdir(exist_ok=True)
    server = ViewServer(Site(box.outside))
    server.start()
    shared = BubblewrapEnvironment.for_workdir(work, network=True)  # what `tasks run --network` shares
    try:
        prep = shared.prepare(f"{_ASK_VIEWER} {server.url}", cwd=str(work), env=dict(os.environ))
        done = run_bounded(list(prep.argv), env=prep.env, cwd=prep.cwd, timeout_s=30)
        said = (done.stdout + done.stderr).strip()
    finally:
        server.close()
        shared.close()
    escaped = server.token in said or '"sessions"' in said
    return escaped, said.replace(server.token, "<the token>")


def _xvfb_environ(box: Box) -> tuple[bool, str]:
    if box.kind != "desktop":
        return False, "no X server for this sandbox (not tried)"
    from conway.machine.xvfb import start_xvfb

    canary, name = uuid.uuid4().hex, "ZQ_PROOF_UPSTREAM_CREDENTIAL"  # a name no filter by name would guess
    os.environ[name] = canary
    try:
        x = start_xvfb(320, 200)  # as a desktop starts its display
    finally:
        del os.environ[name]
    try:
        raw = Path(f"/proc/{x.proc.pid}/environ").read_bytes()
    finally:
        x.stop()
    names = sorted(item.split(b"=", 1)[0].decode(errors="replace") for item in raw.split(b"\0") if item)
    return canary.encode() in raw, f"Xvfb's environment holds: {', '.join(names)}"


TRIES: dict[str, Callable[[Box], tuple[bool, str]]] = {
    "remount": _remount, "mknod-mount": _mknod_mount, "write-outside": _write_outside, "read-home": _read_home,
    "read-root-only": _read_root_only, "signal": _signal, "loopback": _loopback, "keyring": _keyring,
    "service-symlink": _service_symlink, "atspi-address": _atspi_address, "bus-env": _bus_env,
    "proc-sys": _proc_sys, "files-race": _files_race, "leftovers": _leftovers, "step-output": _step_output,
    "cache-name": _cache_name, "viewer-token": _viewer_token, "xvfb-environ": _xvfb_environ}


@contextmanager
def sandbox(kind: str) -> Iterator[Box]:
    """A sandbox of `kind` built as Conway builds it, with a folder beside its bound one (same filesystem)."""
    with ExitStack() as stack:
        base = Path(tempfile.mkdtemp(prefix="conway-sandbox-proof-"))
        stack.callback(shutil.rmtree, base, True)
        outside = base / "outside"
        outside.mkdir()
        if kind == "workdir":
            (base / "work").mkdir()
            env = BubblewrapEnvironment.for_workdir(base / "work")
            stack.callback(env.close)
            yield Box(kind, env, str(base / "work"), outside)
            return
        from conway.sandbox.desktop import DisposableDesktop  # the desktop's programs only when asked for
        desk = stack.enter_context(DisposableDesktop("sandbox-proof", root_parent=base))
        assert desk.environment is not None and desk.root is not None
        beside = desk.root / "outside"  # the home's filesystem, not shown
        beside.mkdir()
        yield Box(kind, desk.environment, "/home/user", beside, desk, task_env=desk)


def run_attempts(attempts: list[str], kinds: list[str]) -> list[Row]:
    user = "root" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    rows = []
    for kind in kinds:
        with sandbox(kind) as box:
            for name in attempts:
                escaped, said = TRIES[name](box)
                rows.append(Row(name, kind, user, escaped, " ".join(said.split())[:300]))
    return rows


def as_nobody(attempts: list[str], kinds: list[str]) -> list[Row]:
    """The same attempts in a process of its own as nobody (root only); its rows, read from its JSON."""
    with tempfile.TemporaryDirectory(prefix="conway-sandbox-proof-") as d:
        os.chmod(d, 0o777)
        home, tmp = Path(d) / "home", Path(d) / "tmp"  # apart: a home holding the bound folders shows them
        for sub in (home, tmp):
            sub.mkdir(mode=0o777)
            sub.chmod(0o777)
        (home / ".nobody-home").write_text("not to be seen inside\n")
        out = Path(d) / "rows.json"
        argv = [*NOBODY, sys.executable, "-m", "scripts.reliability.sandbox_proof", "--only-me", "--json", str(out),
                "--attempts", ",".join(attempts), "--sandboxes", ",".join(kinds)]
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "HOME": str(home), "TMPDIR": str(tmp)})
        if not out.is_file():
            raise RuntimeError(f"the run as nobody did not finish (exit {done.returncode}): {done.stderr[-1500:]}")
        return [Row(**{k: v for k, v in r.items() if k != "verdict"}) for r in json.loads(out.read_text())["rows"]]


def table(rows: list[Row]) -> str:
    head = ("attempt", "sandbox", "user", "verdict")
    cells = [head] + [(r.attempt, r.sandbox, r.user, r.verdict) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sandbox_proof", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the workdir sandbox only (no desktop)")
    ap.add_argument("--json", type=Path, help="write every row (with what the command said) here")
    ap.add_argument("--attempts", default=",".join(ATTEMPTS), help="comma-separated, of: " + ", ".join(ATTEMPTS))
    ap.add_argument("--sandboxes", default=None, help="comma-separated, of: " + ", ".join(SANDBOXES))
    ap.add_argument("--only-me", action="store_true", help="as root: do not run again as nobody")
    args = ap.parse_args(argv)
    attempts = [a for a in args.attempts.split(",") if a]
    kinds = [k for k in (args.sandboxes or ("workdir" if args.quick else ",".join(SANDBOXES))).split(",") if k]
    if set(attempts) - set(ATTEMPTS) or set(kinds) - set(SANDBOXES):
        ap.error(f"unknown attempt or sandbox in {attempts} {kinds}")
    start = time.monotonic()
    try:
        rows = run_attempts(attempts, kinds)
        if os.geteuid() == 0 and not args.only_me:
            rows += as_nobody(attempts, kinds)
    except Exception as exc:  # one line: the sandbox could not be built here
        print(f"sandbox_proof: could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(table(rows))
    escapes = sum(r.escaped for r in rows)
    print(f"{len(rows)} attempts, {escapes} escaped, {time.monotonic() - start:.1f} s")
    if args.json:
        args.json.write_text(json.dumps({"rows": [{**asdict(r), "verdict": r.verdict} for r in rows],
                                         "escapes": escapes}, indent=1), encoding="utf-8")
    return 2 if escapes else 0


if __name__ == "__main__":
    sys.exit(main())
