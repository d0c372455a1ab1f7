"""Ending a command together with everything it started: its process group plus any descendant that left it.

The shell tool and the sandbox's bounded commands share this, so a timeout or a stop leaves nothing running
behind either of them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

from conway.tasks.env import CommandResult

_POSIX = os.name == "posix"


def kill_tree(proc: subprocess.Popen, grace_s: float = 2.0) -> None:
    """SIGTERM the group (`proc` must lead it: start_new_session) and every descendant, wait `grace_s`,
    then SIGKILL; returns once `proc` is reaped."""
    if not _POSIX:
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True)
        proc.wait()
        return
    pgid = proc.pid
    members = group_members(proc.pid)  # snapshot first: children are reparented once the leader dies
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        # SIGKILL always follows: a child forked after the snapshot may ignore SIGTERM.
        _signal(pgid, members, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if proc.poll() is not None and all(_dead(p) for p in members):
                break
            time.sleep(0.02)
    proc.wait()


def group_members(leader: int) -> list[psutil.Process]:
    """The leader's descendants plus its group's members (orphans reparented to init)."""
    found: dict[int, psutil.Process] = {}
    try:
        for p in psutil.Process(leader).children(recursive=True):
            found[p.pid] = p
    except psutil.Error:
        pass
    for p in psutil.process_iter():
        try:
            if p.pid != leader and os.getpgid(p.pid) == leader:
                found.setdefault(p.pid, p)
        except (OSError, psutil.Error):
            continue
    return list(found.values())


def _signal(pgid: int, members: list[psutil.Process], sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for p in members:  # also reaches descendants that left the group with setsid
        try:
            p.send_signal(sig)  # psutil refuses if the pid was reused
        except psutil.Error:
            pass


def _dead(p: psutil.Process) -> bool:
    # A zombie waiting for its (possibly slow) reaper runs nothing and holds nothing.
    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def run_bounded(argv: list[str], *, env: dict[str, str] | None, cwd: str | None, timeout_s: float,
                grace_s: float = 1.0) -> CommandResult:
    """Run to the end or to `timeout_s`, whichever comes first; at the limit the whole tree is killed and the
    output so far is kept (`returncode` None, `timed_out`)."""
    try:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=_POSIX)
    except OSError as exc:
        return CommandResult(returncode=127, stdout="", stderr=f"cannot start {argv[0]}: {exc.strerror or exc}")
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_tree(proc, grace_s)
        try:  # a holder of the pipes that escaped the kill must not hang us
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            out, err = b"", b""
        return CommandResult(None, _text(out), _text(err), timed_out=True)
    except BaseException:
        kill_tree(proc, grace_s)
        raise
    return CommandResult(proc.returncode, _text(out), _text(err))


def _text(raw: bytes | None) -> str:
    return (raw or b"").decode("utf-8", "replace")
