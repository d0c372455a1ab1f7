"""The shell tool with real processes: exit codes, bounded output, process-group kill."""

from __future__ import annotations

import os
import signal
import sys
import time
import tracemalloc
from pathlib import Path

import psutil
import pytest
from helpers.stopping import stopped_after

from conway.actions import Shell
from conway.tools.shell import ShellTool

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX shell semantics")


def _gone(pid: int) -> bool:
    # A zombie waiting for a non-reaping init is dead too: it runs nothing and holds nothing.
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_pidfile(path: Path) -> int:
    for _ in range(100):
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError("pid file never written")


def test_available(tmp_path):
    ok, reason = ShellTool(tmp_path).availability()
    assert ok and "/bin/sh" in reason
    assert not ShellTool(tmp_path / "missing").availability()[0]


def test_exit_code_merged_output_cwd_and_stdin(tmp_path):
    tool = ShellTool(tmp_path)
    r = tool.run(Shell(command="echo out; echo err >&2; echo out2; pwd; cat"))
    assert r.ok and r.data["exit_code"] == 0
    assert r.output == f"out\nerr\nout2\n{tmp_path}\n[exit code 0]"  # cat read /dev/null: no hang
    bad = tool.run(Shell(command="echo oops; exit 3"))
    assert not bad.ok and bad.data["exit_code"] == 3
    assert "oops" in bad.error and "[exit code 3]" in bad.error  # the model sees output on failure


def test_output_bounded_for_megabytes_with_memory_bounded(tmp_path):
    tool = ShellTool(tmp_path, max_output_bytes=4096)
    script = "echo FIRST; head -c 30000000 /dev/zero | tr '\\0' 'x'; echo; echo LAST"
    tracemalloc.start()
    try:
        r = tool.run(Shell(command=script))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.ok and r.truncated and r.data["output_bytes"] > 30_000_000
    assert r.output.startswith("FIRST\n") and r.output.endswith("LAST\n[exit code 0]")
    assert "bytes cut: showing first 2048 and last 2048 of" in r.output
    assert len(r.output) < 5000
    assert peak < 2_000_000, f"peak Python allocation {peak} bytes for 30 MB of output"


def test_timeout_kills_the_whole_process_group(tmp_path):
    tool = ShellTool(tmp_path, timeout_s=1)
    pidfile = tmp_path / "pid"
    start = time.monotonic()
    r = tool.run(Shell(command=f"echo started; sleep 100 & echo $! > {pidfile}; wait"))
    elapsed = time.monotonic() - start
    grandchild = _wait_pidfile(pidfile)
    assert not r.ok and r.data["timed_out"]
    assert "timed out after 1 s" in r.error and r.output.startswith("started\n")  # partial output kept
    assert elapsed < 5
    assert _gone(grandchild)


def test_a_stop_ends_a_running_command_and_its_process_group(tmp_path):
    tool = ShellTool(tmp_path, timeout_s=60)
    pidfile = tmp_path / "pid"
    r, elapsed = stopped_after(0.5, "terminated (SIGTERM)",
                               lambda: tool.run(Shell(command=f"echo started; sleep 100 & echo $! > {pidfile}; wait")))
    assert not r.ok and r.data["stopped"] is True and not r.data["timed_out"]
    assert "because the agent was stopped (terminated (SIGTERM))" in r.error and r.output.startswith("started\n")
    assert elapsed < 5  # not the 100 s the command wanted, nor the 60 s timeout
    assert _gone(_wait_pidfile(pidfile))


def test_timeout_escalates_to_sigkill_for_a_term_ignoring_grandchild(tmp_path):
    tool = ShellTool(tmp_path, timeout_s=0.5, kill_grace_s=0.5)
    pidfile = tmp_path / "pid"
    r = tool.run(Shell(command=f"trap '' TERM; sleep 100 & echo $! > {pidfile}; wait"))
    grandchild = _wait_pidfile(pidfile)
    assert r.data["timed_out"] and _gone(grandchild)


def test_command_timeout_is_capped_to_the_tool_maximum(tmp_path):
    tool = ShellTool(tmp_path, timeout_s=0.5)
    start = time.monotonic()
    r = tool.run(Shell(command="sleep 30", timeout_s=600))
    assert r.data["timed_out"] and time.monotonic() - start < 5
    assert "capped to 0.5 s" in r.error
    quick = tool.run(Shell(command="sleep 30", timeout_s=0.2))
    assert "timed out after 0.2 s" in quick.error


def test_background_process_holding_output_does_not_block(tmp_path):
    tool = ShellTool(tmp_path, timeout_s=30)
    start = time.monotonic()
    r = tool.run(Shell(command="sleep 30 & echo $!"))
    pid = int(r.output.splitlines()[0])
    try:
        assert r.ok and time.monotonic() - start < 5
        assert "still held the output" in r.output
    finally:
        os.kill(pid, signal.SIGKILL)


def test_detached_background_process_keeps_running(tmp_path):
    r = ShellTool(tmp_path).run(Shell(command="sleep 30 >/dev/null 2>&1 & echo $!"))
    pid = int(r.output.splitlines()[0])
    try:
        assert r.ok and "still held" not in r.output and not _gone(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_timeout_also_kills_a_descendant_that_left_the_group(tmp_path):
    pidfile = tmp_path / "pid"
    escape = f"{sys.executable} -c 'import os, time; os.setsid(); time.sleep(100)'"
    r = ShellTool(tmp_path, timeout_s=1).run(Shell(command=f"{escape} & echo $! > {pidfile}; wait"))
    escaped = _wait_pidfile(pidfile)
    assert r.data["timed_out"]
    assert _gone(escaped)
