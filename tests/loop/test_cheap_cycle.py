"""What makes a cycle cheap without changing what it does (issue 14, goal 4): one long-lived thread for
decisions, tools run unwatched unless a stop can end them, and files consulted every cycle read again
only when they changed. Each piece is held to the behaviour it replaced."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from conway.cancel import Cancel, DecisionAborted, Worker, current_cancel, run_cancellable
from conway.config import AgentConfig
from conway.loop.control import Clock, Control
from conway.store.state import ReadIfChanged, atomic_write_json, read_control, write_control

# --- one thread for the run's decisions -------------------------------------------------------


def test_a_worker_runs_every_decision_on_one_thread():
    worker = Worker()
    threads = [run_cancellable(threading.get_ident, Cancel(), lambda: None, 0.05, worker=worker) for _ in range(5)]
    assert len(set(threads)) == 1 and threads[0] != threading.get_ident()
    with pytest.raises(ZeroDivisionError):  # the work's own exceptions come back to the caller
        run_cancellable(lambda: 1 / 0, Cancel(), lambda: None, 0.05, worker=worker)
    token = Cancel()
    assert run_cancellable(current_cancel, token, lambda: None, 0.05, worker=worker) is token  # its scope
    assert run_cancellable(threading.get_ident, Cancel(), lambda: None, 0.05, worker=worker) == threads[0]
    worker.close()


def test_work_that_ignores_a_stop_is_abandoned_and_the_next_decision_gets_a_fresh_thread():
    worker = Worker()
    release = threading.Event()
    started = threading.Event()

    def stuck():
        started.set()
        release.wait(30)  # ignores the token
        return "late"

    first = run_cancellable(threading.get_ident, Cancel(), lambda: None, 0.05, worker=worker)
    t0 = time.monotonic()
    with pytest.raises(DecisionAborted, match="abandoned"):
        run_cancellable(stuck, Cancel(), lambda: "stop requested" if started.is_set() else None, 0.05,
                        grace_s=0.2, worker=worker)
    assert time.monotonic() - t0 < 5
    second = run_cancellable(threading.get_ident, Cancel(), lambda: None, 0.05, worker=worker)
    assert second != first  # not queued behind the abandoned work
    release.set()
    worker.close()


def test_an_aborted_decision_is_discarded_once_a_stop_arrives():
    worker = Worker()

    def cooperative():
        token = current_cancel()
        while not token.is_set():
            time.sleep(0.01)
        token.check()

    stop_after = time.monotonic() + 0.2
    with pytest.raises(DecisionAborted, match="stop requested"):
        run_cancellable(cooperative, Cancel(), lambda: "stop requested" if time.monotonic() > stop_after else None,
                        0.05, worker=worker)
    worker.close()


# --- an abortable decision runs on the loop's thread, watched ------------------------------------


def test_an_abortable_decision_runs_on_the_callers_thread_and_a_stop_aborts_it(tmp_path):
    control = _control(tmp_path)
    me = threading.get_ident()
    assert control.cancellable(lambda: (threading.get_ident(), current_cancel() is not None), abortable=True) \
        == (me, True)
    assert control.cancellable(threading.get_ident) != me  # the default: the run's worker thread

    def model():  # blocks until aborted, as a request whose socket a stop shuts down
        token = current_cancel()
        write_control(tmp_path / "control.json", "s-1", "stop")  # `conway stop` from another terminal
        deadline = time.monotonic() + 10
        while not token.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        token.check()
        return "answered"

    t0 = time.monotonic()
    with pytest.raises(DecisionAborted, match="stop requested"):
        control.cancellable(model, abortable=True)
    assert time.monotonic() - t0 < 5  # about the control poll (0.05 s here)
    with pytest.raises(ZeroDivisionError):  # the work's own errors pass on
        control.cancellable(lambda: 1 / 0, abortable=True)
    control.close()


def test_an_abortable_decision_past_its_deadline_is_aborted_the_same_way(tmp_path):
    control = _control(tmp_path)

    def model():
        token = current_cancel()
        while not token.is_set():
            time.sleep(0.01)
        token.check()

    with pytest.raises(DecisionAborted, match="timed out after 0.2 s"):
        control.cancellable(model, within_s=0.2, abortable=True)
    control.close()


def test_the_loop_decides_on_its_own_thread_only_for_a_policy_that_says_it_is_abortable(tmp_path):
    """The mock never blocks, unless a step sleeps (it then ignores a stop, as a stalled model would);
    a loopback endpoint connects at once, a remote one may hold its connect up to the timeout."""
    from conway.abortable_http import on_loopback
    from conway.policies.backends.http_client import HTTPBackend, OpenAIClient
    from conway.policies.mock import MockPolicy, MockScript

    assert MockPolicy().abortable
    assert not MockPolicy(MockScript.model_validate({"steps": [{"sleep": 1, "action": {"type": "wait"}}]})).abortable
    assert [on_loopback(u) for u in ("http://127.0.0.1:8080/v1", "http://localhost:1/v1", "http://[::1]:9/v1",
                                     "http://127.3.4.5/v1", "http://10.0.0.2:8080/v1", "https://api.example/v1",
                                     "http://localhost.example/v1")] == [True] * 4 + [False] * 3
    for url, abortable in (("http://127.0.0.1:9/v1", True), ("http://192.0.2.1:9/v1", False)):
        client = OpenAIClient(url)
        assert HTTPBackend(client, "m").abortable is abortable
        client.close()

    from conway.config import load_config
    from conway.loop.control import SimulatedClock
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import Home, init_home

    steps = [{"action": {"type": "append_file", "path": "a.txt", "text": "x"}}]
    for script, on_loop_thread in ((steps, True), ([{"sleep": 0.01, **steps[0]}], False)):
        home = Home(tmp_path / f"home-{on_loop_thread}")
        init_home(home)
        policy = MockPolicy(MockScript.model_validate({"steps": script}))
        threads: list[int] = []
        decide = policy.decide
        policy.decide = lambda ctx: threads.append(threading.get_ident()) or decide(ctx)
        run_agent(home, load_config(home.config, ["agent.max_steps=3"]),
                  RunRequest(single_session=False, policy=policy, clock=SimulatedClock()), say=lambda _s: None)
        assert len(threads) == 3 and (set(threads) == {threading.get_ident()}) is on_loop_thread, threads


# --- tools run watched only when a stop can end them --------------------------------------------


def _control(tmp_path: Path) -> Control:
    return Control(tmp_path / "control.json", "s-1", Clock(), AgentConfig(control_poll_s=0.05),
                   record=lambda *_: None, set_status=lambda _s: None, say=lambda _s: None,
                   before_sleep=lambda: None, decisions=lambda: 0)


def test_a_quick_tool_runs_in_the_loop_thread_with_no_watcher(tmp_path):
    control = _control(tmp_path)

    def watchers() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name == "conway-stop-watch"]

    seen = control.watched(lambda: (current_cancel(), watchers(), threading.get_ident()), False)
    assert seen == (None, [], threading.get_ident())
    assert control.watched(lambda: watchers(), True) == ["conway-stop-watch"]  # a cancellable one is watched


def test_a_cancellable_tool_is_ended_by_a_stop_that_arrives_while_it_runs(tmp_path):
    control = _control(tmp_path)

    def long_tool():
        token = current_cancel()
        assert token is not None
        write_control(tmp_path / "control.json", "s-1", "stop")  # `conway stop` from another terminal
        deadline = time.monotonic() + 10
        while not token.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        return token.reason

    assert control.watched(long_tool, True) == "stop requested"


# --- control.json, goals.md: read again only when they changed --------------------------------


def _settled(path: Path) -> None:
    """Make the file look written a minute ago (older than the rule that rereads fresh files)."""
    old = time.time() - 60
    os.utime(path, (old, old))


def test_read_if_changed_reads_again_exactly_when_the_file_changed(tmp_path):
    path = tmp_path / "goals.md"
    reads: list[str] = []

    def read(p: Path) -> str:
        reads.append(p.read_text())
        return reads[-1]

    cache = ReadIfChanged(path, read, "(missing)")
    assert cache.get() == "(missing)" and reads == []
    path.write_text("build the thing")
    _settled(path)
    assert [cache.get() for _ in range(3)] == ["build the thing"] * 3 and len(reads) == 1  # a stat each time
    path.write_text("build the ring!!")  # edited in place (same inode, another size)
    assert cache.get() == "build the ring!!"
    _settled(path)
    cache.get()
    stamp = path.stat().st_mtime_ns
    tmp = tmp_path / "new"
    tmp.write_text("build the rung!!")  # an editor's save: same size and time, another inode
    os.utime(tmp, ns=(stamp, stamp))
    os.replace(tmp, path)
    assert cache.get() == "build the rung!!"
    path.unlink()
    assert cache.get() == "(missing)"


def test_a_file_written_just_now_is_read_every_time(tmp_path):
    """Timestamps are coarse: a same-size edit in the same tick as the last read must not look unchanged."""
    path = tmp_path / "goals.md"
    path.write_text("aaaa")
    reads = []
    cache = ReadIfChanged(path, lambda p: reads.append(1) or p.read_text(), "")
    assert cache.get() == "aaaa"
    stamp = path.stat().st_mtime_ns
    path.write_text("bbbb")  # same size, same inode
    os.utime(path, ns=(stamp, stamp))  # and, as within one clock tick, the same time
    assert cache.get() == "bbbb" and len(reads) == 2


def test_control_requests_are_seen_as_they_change(tmp_path):
    control = _control(tmp_path)
    path = tmp_path / "control.json"
    assert control.request() is None
    write_control(path, "s-1", "pause")
    assert control.request() == "pause"
    write_control(path, "s-1", "resume")
    assert control.request() == "resume"
    write_control(path, "other-session", "stop")  # another session's request is not ours
    assert control.request() is None and control.stop_requested() is None
    write_control(path, "s-1", "stop")
    assert control.request() == "stop" and control.stop_requested() == "stop requested"
    atomic_write_json(path, {"session": "s-1", "request": "pause"})
    _settled(path)
    assert control.request() == "pause" == read_control(path, "s-1")
    path.write_text("{torn")
    assert control.request() is None  # a corrupt file is no request, as before
