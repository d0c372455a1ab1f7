"""The task desktop's box holds against the ways out found from inside on 8e8ecdd (issue 41), as an attacker tries
them: through Conway's own helpers that read the desktop, the bus's activation environment, the files tool's
check-then-open, /proc/sys; and it bounds what a task may take and leaves nothing after Conway dies.

Each test drives a real desktop (bubblewrap, Xvfb, dbus-daemon, AT-SPI) and judges on this side, where the attack
would land: a file appearing at a path of this machine the box cannot see, a host file changed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Callable

import psutil
import pytest
from helpers.desktop_fixtures import require, wait_until

from conway.actions import AppendFile, ReplaceText
from conway.sandbox.box import BoxLimits
from conway.sandbox.box_environment import BoxEnvironment
from conway.sandbox.desktop import DisposableDesktop
from conway.sandbox.paths import Resolved
from conway.tools.files import FileTools

pytestmark = pytest.mark.desktop
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def marker_dir() -> Path:
    """A folder of this machine the box cannot see (under the invoking user's temp, never the real home)."""
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="conway-box-attack-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_an_accessibility_bus_address_set_inside_runs_nothing_on_this_side(
        open_desk: Callable[..., DisposableDesktop], marker_dir: Path) -> None:
    desk = open_desk("atspi-addr")
    marker = marker_dir / "pwned-atspi"
    address = f"unixexec:path=/bin/touch,argv0=touch,argv1={marker}"
    done = desk.run(["xprop", "-root", "-f", "AT_SPI_BUS", "8s", "-set", "AT_SPI_BUS", address])
    assert done.returncode == 0, done.stderr
    desk.terminal_output()
    desk.accessibility_tree()
    from conway.observe.accessibility import snapshot
    snapshot(helper_prefix=desk.helper_argv("_atspi_snapshot.py"), timeout_s=10)
    time.sleep(0.5)
    assert not marker.exists(), "a helper connected to the address the desktop wrote and ran its program here"


def test_the_bus_activation_environment_reaches_nothing_on_this_side(
        open_desk: Callable[..., DisposableDesktop], marker_dir: Path) -> None:
    require(shutil.which("gcc") is not None, "gcc not installed (apt-get install build-essential)")
    desk = open_desk("dbus-env")
    marker = marker_dir / "pwned-dbus"
    source = marker_dir / "evil.c"
    source.write_text(textwrap.dedent(f"""
        #include <fcntl.h>
        #include <unistd.h>
        __attribute__((constructor)) static void hit(void) {{
            int fd = open("{marker}", O_CREAT | O_WRONLY, 0644);
            if (fd >= 0) close(fd);
        }}
    """))
    lib = marker_dir / "evil.so"
    built = subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    desk.write_file("evil.so", lib.read_bytes())
    done = desk.run("dbus-update-activation-environment LD_PRELOAD=/home/user/evil.so && "
                    "gsettings set org.gnome.desktop.interface cursor-size 33; sleep 1; "
                    "gsettings get org.gnome.desktop.interface cursor-size", shell=True, timeout_s=30)
    assert "33" in done.stdout, done.stdout + done.stderr  # dconf was started by the bus: with the library
    assert not marker.exists(), "a service the desktop's bus started ran the library on this side"


class _RacingEnvironment(BoxEnvironment):
    """The attack's timing made certain: the desktop swaps the file for a link to a host file right after Conway
    resolved its path (what a process inside does in a loop until it wins)."""

    target: Path

    def resolve(self, path: str, *, cwd: str) -> Resolved:
        found = super().resolve(path, cwd=cwd)
        found.host.unlink()
        found.host.symlink_to(self.target)
        return found


@pytest.mark.parametrize("action", ["replace", "append"])
def test_the_files_tool_never_follows_a_link_swapped_in_after_its_check(
        open_desk: Callable[..., DisposableDesktop], marker_dir: Path, action: str) -> None:
    desk = open_desk("race")
    host_file = marker_dir / "host.conf"
    host_file.write_text("setting=old\n")
    desk.write_file("notes.txt", b"setting=old\n")
    env = _RacingEnvironment(desk.box, desk.home)
    env.target = host_file
    tool = FileTools(Path("/home/user"), environment=env)
    act = (ReplaceText(path="notes.txt", old="old", new="pwned") if action == "replace"
           else AppendFile(path="notes.txt", text="pwned\n"))
    result = tool.run(act)
    assert host_file.read_text() == "setting=old\n", "the files tool wrote through the link onto this machine"
    assert not result.ok, result.output


def test_proc_sys_is_read_only_and_the_box_runs_as_nobody_here(open_desk: Callable[..., DisposableDesktop]) -> None:
    desk = open_desk("procsys")
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    done = desk.run("echo '|/bin/touch /tmp/pwned' > /proc/sys/kernel/core_pattern; echo rc=$?; "
                "id -u", shell=True)
    lines = done.stdout.split()
    assert "rc=0" not in lines and lines[-1] == "1000", done.stdout + done.stderr
    # what uid 1000 may write under /proc/sys belongs to the box's own namespaces (its IPC and pid namespaces):
    # nothing of this machine's kernel settings
    writable = desk.run("find /proc/sys -type f -writable 2>/dev/null", shell=True).stdout.split()
    own = ("/proc/sys/fs/mqueue/", "/proc/sys/kernel/msg", "/proc/sys/kernel/shm", "/proc/sys/kernel/sem",
           "/proc/sys/kernel/auto_msgmni", "/proc/sys/kernel/ns_last_pid", "/proc/sys/kernel/pid_max")
    assert [w for w in writable if not w.startswith(own)] == []
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before
    desk.spawn(["sleep", "401.5"])
    sleeper = wait_until(lambda: next((p for p in psutil.process_iter(["cmdline", "uids"])
                                       if p.info["cmdline"] == ["sleep", "401.5"]), None), timeout=10,
                         what="the spawned sleep")
    uid = sleeper.info["uids"].real
    assert uid != 0 and (os.geteuid() != 0 or uid >= 1_800_000_000), f"the box runs as uid {uid} on this machine"


def test_nothing_of_conways_environment_goes_inside(open_desk: Callable[..., DisposableDesktop],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZQX_UNUSUAL_NAME", "s3cret-value-9317")
    desk = open_desk("env")
    done = desk.run("env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'", shell=True)
    assert "s3cret-value-9317" not in done.stdout
    for p in psutil.process_iter(["name", "cmdline"]):
        if p.info["name"] == "Xvfb" and desk.display in (p.info["cmdline"] or []):
            assert "s3cret-value-9317" not in Path(f"/proc/{p.pid}/environ").read_bytes().decode(errors="replace")
            break
    else:
        pytest.fail("the desktop's X server was not found")


def test_a_fork_bomb_a_memory_hog_and_a_disk_filler_end_with_named_errors(
        open_desk: Callable[..., DisposableDesktop]) -> None:
    desk = open_desk("limits", limits=BoxLimits(pids=96, memory_mb=256, disk_mb=64))
    bomb = desk.run("python3 -c 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
                    "        pass'", shell=True, timeout_s=5)
    assert bomb.timed_out or bomb.returncode != 0
    hog = desk.run(["python3", "-c", "x = b'x' * (1 << 30); print(len(x))"], timeout_s=60)
    assert hog.returncode != 0 and "1073741824" not in hog.stdout
    filler = desk.run("dd if=/dev/zero of=/home/user/fill bs=1M count=200", shell=True, timeout_s=60)
    assert filler.returncode != 0 and "No space left" in filler.stderr
    breaches = " ".join(desk.breaches())
    assert "disk limit (64 MiB)" in breaches
    if not desk.box.unenforced:  # root: the cgroup counts each
        assert "process limit (96)" in breaches and "memory limit (256 MiB)" in breaches
        assert "memory limit" in hog.stderr  # the step's own error names it
    assert desk.run("echo alive").stdout == "alive\n"  # the desktop still works once the hogs are gone


_CHILD = """
import sys, time
from conway.sandbox.desktop import DisposableDesktop
d = DisposableDesktop("killed")
d.start()
d.spawn(["sleep", "402.25"])
print(d.root, d.display, flush=True)
time.sleep(600)
"""


def test_after_kill_9_of_conway_nothing_of_its_desktop_remains(open_desk: Callable[..., DisposableDesktop]) -> None:
    open_desk("probe")  # skips (or fails where CI runs) without the desktop's programs
    child = subprocess.Popen([sys.executable, "-c", _CHILD], cwd=REPO, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        root, display = child.stdout.readline().split()
        wait_until(lambda: _pids_of("402.25"), timeout=20, what="the desktop's sleep")
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        wait_until(lambda: not _pids_of("402.25") and not _pids_of(display), timeout=10,
                   what="every process of the killed desktop to end")
    finally:
        if child.poll() is None:
            child.kill()
    with DisposableDesktop("next") as nxt:  # the next start sweeps what the dead one left
        assert not Path(root).exists()
        lock = Path(f"/tmp/.X{display[1:]}-lock")
        assert nxt.display == display or not lock.exists()  # its display number free again (or taken anew)
        assert not lock.exists() or int(lock.read_text()) == os.getpid()


def _pids_of(arg: str) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"]) if arg in (p.info["cmdline"] or [])
            and p.status() != psutil.STATUS_ZOMBIE]


def test_with_network_the_box_has_its_own_and_reaches_no_x_server_or_loopback_here(
        open_desk: Callable[..., DisposableDesktop]) -> None:
    require(shutil.which("slirp4netns") is not None, "slirp4netns not installed (apt-get install slirp4netns)")
    other = open_desk("other")
    desk = open_desk("net", network=True)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        probe = textwrap.dedent(f"""
            import socket
            for name, addr, fam in (("loopback", ("127.0.0.1", {port}), socket.AF_INET),
                                    ("other-x", "\\0/tmp/.X11-unix/X{other.display[1:]}", socket.AF_UNIX)):
                s = socket.socket(fam)
                s.settimeout(3)
                try:
                    s.connect(addr); print(name, "REACHED")
                except OSError as e:
                    print(name, "refused", e)
        """)
        done = desk.run(["python3", "-c", probe], timeout_s=30)
    assert "REACHED" not in done.stdout and "loopback refused" in done.stdout, done.stdout + done.stderr
    assert desk.environment.availability()[1].startswith("the task desktop's box (its own network")


def test_a_reader_that_cannot_reach_atspi_is_an_error_never_an_empty_terminal(
        open_desk: Callable[..., DisposableDesktop], monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper's own answer when the box's Python has no AT-SPI (a stand-in answer: the point is what the host
    makes of it): an error naming the reason, so the task is an error, not a 0 for a terminal that looked empty."""
    from conway.sandbox.box import BoxRun
    from conway.sandbox.environment import SandboxError
    desk = open_desk("no-atspi")
    said = b'{"text": null, "reason": "AT-SPI unavailable: No module named gi"}\n'
    monkeypatch.setattr(desk.box, "run", lambda *a, **k: BoxRun(0, said, b""))
    with pytest.raises(SandboxError, match="cannot read AT-SPI: AT-SPI unavailable: No module named gi"):
        desk.terminal_output()
    monkeypatch.setattr(desk.box, "run", lambda *a, **k: BoxRun(0, b'{"text": null}\n', b""))
    assert desk.terminal_output() is None  # no terminal open: that is an answer
