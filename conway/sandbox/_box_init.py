"""The first program of a task desktop's box: starts the desktop inside it and serves the host's requests.

Runs INSIDE the box (`conway.sandbox.box`), under the system's /usr/bin/python3 with the standard library only,
as the box's unprivileged user. It starts the X server, the session bus and (where Debian's pulseaudio is
installed) a sound server of the box's own, then answers requests on the
listening socket the host created and handed in as a file descriptor (the box cannot see, move or replace the
socket's path). One connection carries one request: a JSON line; the answer is JSON lines (`run` streams its
output as frames). Everything it reports is data the host parses strictly; it never names a path, program or
address the host would use.

Ops: `ready` (once X and the bus answer), `ping` (are they alive), `run` (a command to its end, its output
streamed, killed with its descendants at a timeout or when the host hangs up), `spawn` (a long-lived program),
`pkill` (SIGTERM by name, as OSWorld's `pkill` on its VM), `limits` (nothing: the host reads its own counters).
"""

import base64
import ctypes
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

LISTEN_FD = int(os.environ.pop("CONWAY_BOX_FD", "3"))
MAX_REQUEST = 1 << 20
PROTECTED = set()
"""Pids `pkill` never touches: this init, the X server, the bus (the desktop itself, as on OSWorld's VM where the
user cannot kill the display server)."""
_write_locks = {}
SOUND_LEVEL = "40%"
"""Where the box's sound starts: below full, as the desktop a task describes ("the volume is too small") is; OSWorld's
image keeps its own level, which its task files do not say."""


def _undumpable():
    # Every program in the box runs as the same uid: without this, any of them could ptrace this init (there is
    # no Yama here) and answer the host in its place.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def _send(conn, obj):
    conn.sendall((json.dumps(obj, separators=(",", ":")) + "\n").encode())


def _children_of():
    """{parent pid: [child pids]} of every process this box's /proc shows."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    return kids


def _descendants(pid):
    kids, out, todo = _children_of(), [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill_tree(proc):
    """SIGKILL the command's group and every descendant (one that left the group with setsid too)."""
    victims = _descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _start(argv, cwd, out=subprocess.PIPE, err=None):
    return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=out if err is None else err,
                            start_new_session=True, close_fds=True)


def _hung_up(conn):
    """Whether the host closed its end (the caller was stopped or killed)."""
    try:
        return not conn.recv(1, socket.MSG_PEEK)
    except OSError:
        return True


def _forward(conn, fd, streams, sent, cap):
    """Send one chunk of a command's output; False once the host is gone."""
    key, _stream = streams[fd]
    chunk = os.read(fd, 65536)
    if not chunk:
        del streams[fd]
        return True
    room = cap - sent[key]
    if room <= 0:
        return True  # past the cap: drained, not sent
    part = chunk[:room]
    sent[key] += len(part)
    try:
        _send(conn, {key: base64.b64encode(part).decode()})
    except OSError:
        return False
    return True


def _pump(conn, proc, deadline, cap):
    """Forward the command's output until it closes both streams; 'timeout', 'hangup' or None."""
    streams = {proc.stdout.fileno(): ("o", proc.stdout), proc.stderr.fileno(): ("e", proc.stderr)}
    sent = {"o": 0, "e": 0}
    while streams:
        wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
        ready, _, _ = select.select([*streams, conn.fileno()], [], [], wait)
        if conn.fileno() in ready and _hung_up(conn):
            return "hangup"
        for fd in ready:
            if fd in streams and not _forward(conn, fd, streams, sent, cap):
                return "hangup"
        if deadline is not None and time.monotonic() >= deadline:
            return "timeout"
    return None


def _op_run(conn, req):
    argv, cwd = req.get("argv"), req.get("cwd") or os.environ.get("HOME", "/")
    timeout = req.get("timeout")
    cap = int(req.get("max_bytes") or (16 << 20))
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        return _send(conn, {"error": "argv must be a non-empty list of strings"})
    try:
        proc = _start(argv, cwd)
    except OSError as exc:
        return _send(conn, {"rc": 127, "start_error": f"cannot start {argv[0]}: {exc.strerror or exc}"})
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    ended = _pump(conn, proc, deadline, cap)
    if ended is not None:
        _kill_tree(proc)
    rc = proc.wait()
    if ended == "hangup":
        return None
    answer = {"rc": None if ended == "timeout" else rc, "timed_out": ended == "timeout"}
    if rc < 0:
        answer["signal"] = -rc
    return _send(conn, answer)


_SPAWNED = {}
"""pid → the program `spawn` started: `exited` says whether it has ended, and with what status."""
_STDERR_TAILS = {}
"""pid → (the thread reading the spawned program's stderr, the last LAST_WORDS bytes it read)."""
LAST_WORDS = 2048
"""The last bytes of a spawned program's stderr kept for `exited` (a program ended in error says why)."""


def _op_spawn(conn, req):
    argv = req.get("argv")
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        return _send(conn, {"error": "argv must be a non-empty list of strings"})
    try:
        proc = _start(argv, os.environ.get("HOME", "/"), out=subprocess.DEVNULL, err=subprocess.PIPE)
    except OSError as exc:
        return _send(conn, {"error": f"cannot start {argv[0]}: {exc.strerror or exc}"})
    _SPAWNED[proc.pid] = proc
    tail = bytearray()
    drain = threading.Thread(target=_drain, args=(proc, tail), daemon=True)
    _STDERR_TAILS[proc.pid] = (drain, tail)
    drain.start()
    threading.Thread(target=proc.wait, daemon=True).start()  # reaped when it ends
    return _send(conn, {"pid": proc.pid})


def _drain(proc, kept):
    """Read a spawned program's stderr to its end (a child may hold it open longer), keeping only the last
    LAST_WORDS bytes: what `exited` tells of a program that ended in error."""
    try:
        while chunk := proc.stderr.read1(65536):
            kept += chunk
            del kept[:-LAST_WORDS]
    except (OSError, ValueError):
        pass


def _op_exited(conn, req):
    proc = _SPAWNED.get(req.get("pid"))
    if proc is None:
        return _send(conn, {"error": "no program spawned with that pid"})
    answer = {"returncode": proc.returncode}  # None while it runs (set by its waiting thread)
    if proc.returncode and proc.pid in _STDERR_TAILS:
        drain, tail = _STDERR_TAILS[proc.pid]
        drain.join(0.5)  # what it wrote just before it ended
        answer["stderr"] = bytes(tail).decode("utf-8", "replace")
    return _send(conn, answer)


def _names(pid):
    """What `pkill` matches a process by: its name, the program an interpreter runs, chrome for Chromium."""
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            name = f.read().decode("utf-8", "replace").strip()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []
    names = [name]
    if name.startswith("python") and len(cmdline) > 1:
        names.append(os.path.basename(cmdline[1]).removesuffix(".py").removeprefix("conway_"))
    if name.startswith("chromium"):
        names.append("chrome")
    return names


def _op_pkill(conn, req):
    try:
        regex = re.compile(str(req.get("pattern", "")))
    except re.error as exc:
        return _send(conn, {"error": f"pkill pattern: {exc}"})
    me = os.getpid()
    matched = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in PROTECTED and int(name) != me and int(name) != 1:
            if any(regex.search(n) for n in _names(int(name))):
                matched.append(int(name))
    for pid in matched:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + float(req.get("wait", 5.0))
    while time.monotonic() < deadline and any(_alive(p) for p in matched):
        time.sleep(0.05)
    return _send(conn, {"count": len(matched)})


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


class Desktop:
    def __init__(self, display, size):
        self.display, self.size = display, size
        self.x = self.bus = self.sound = None
        self.problem = None

    def start(self):
        sock = f"/tmp/.X11-unix/X{self.display}"
        try:
            self.x = subprocess.Popen(["Xvfb", f":{self.display}", "-screen", "0", self.size, "-nolisten", "tcp",
                                       "-noreset"],  # a desktop session keeps its state when its last window closes
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=open("/run/user/1000/xvfb.log", "wb"), start_new_session=True)
        except OSError as exc:
            self.problem = f"Xvfb did not start: {exc.strerror or exc}"
            return
        PROTECTED.add(self.x.pid)
        deadline = time.monotonic() + 20
        while not os.path.exists(sock):
            if self.x.poll() is not None or time.monotonic() > deadline:
                self.problem = f"the X server did not start (exit {self.x.poll()})"
                return
            time.sleep(0.02)
        try:
            self.bus = subprocess.Popen(["dbus-daemon", "--config-file=/run/conway-box/bus.conf", "--nofork",
                                         "--nopidfile"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=open("/run/user/1000/bus.log", "wb"), start_new_session=True)
        except OSError as exc:
            self.problem = f"the session bus did not start: {exc.strerror or exc}"
            return
        PROTECTED.add(self.bus.pid)
        while not os.path.exists("/run/user/1000/bus"):
            if self.bus.poll() is not None or time.monotonic() > deadline:
                self.problem = f"the session bus (dbus-daemon --session) did not start (exit {self.bus.poll()})"
                return
            time.sleep(0.02)

    def start_sound(self):
        """The box's own PulseAudio (where it is installed: the box's /usr is this machine's), its socket in the
        box's runtime folder, its only sink a null one; the sink starts at SOUND_LEVEL, below full, so a task
        that asks for more ("the volume is too small") starts as it says. No sound is no desktop problem."""
        if shutil.which("pulseaudio") is None or shutil.which("pactl") is None:
            return
        try:
            self.sound = subprocess.Popen(["pulseaudio", "--daemonize=no", "--exit-idle-time=-1", "--log-target=stderr"],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=open("/run/user/1000/pulse.log", "wb"), start_new_session=True)
        except OSError:
            return
        PROTECTED.add(self.sound.pid)
        deadline = time.monotonic() + 20
        while not os.path.exists("/run/user/1000/pulse/native"):
            if self.sound.poll() is not None or time.monotonic() > deadline:
                return
            time.sleep(0.02)
        try:
            subprocess.run(["pactl", "set-sink-volume", "@DEFAULT_SINK@", SOUND_LEVEL], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def state(self):
        if self.problem:
            return {"problem": self.problem}
        return {"x": self.x is not None and self.x.poll() is None,
                "x_exit": None if self.x is None else self.x.poll(),
                "bus": self.bus is not None and self.bus.poll() is None,
                "bus_exit": None if self.bus is None else self.bus.poll()}


def _serve(conn, desktop):
    with conn:
        conn.settimeout(None)
        buf = b""
        while b"\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return
            buf += chunk
            if len(buf) > MAX_REQUEST:
                return
        try:
            req = json.loads(buf.split(b"\n", 1)[0])
            op = req["op"]
        except (ValueError, KeyError, TypeError):
            return _send(conn, {"error": "bad request"})
        try:
            if op in ("ready", "ping"):
                _send(conn, desktop.state())
            elif op == "run":
                _op_run(conn, req)
            elif op == "spawn":
                _op_spawn(conn, req)
            elif op == "exited":
                _op_exited(conn, req)
            elif op == "pkill":
                _op_pkill(conn, req)
            else:
                _send(conn, {"error": f"unknown op {op!r}"})
        except OSError:
            pass


def main():
    _undumpable()
    display, size = sys.argv[1], sys.argv[2]
    listener = socket.socket(fileno=LISTEN_FD)
    desktop = Desktop(display, size)
    desktop.start()
    if not desktop.problem:
        desktop.start_sound()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve, args=(conn, desktop), daemon=True).start()


if __name__ == "__main__":
    main()
