"""The journal's zero-filled tail: readers skip it (zeros to the end of the file), a reopen cuts it and appends
after the last byte of data, and `kill -9` at any instant of real writer processes loses no acknowledged event."""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from conway.readiness.checks.home_files import recovery_checks
from conway.store.home import Home, init_home
from conway.store.journal import (
    Journal,
    journal_data,
    journal_files,
    journal_lines,
    make_event,
    read_journal,
    tail_events,
    text_size,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_file_being_written_ends_in_zeros_and_every_reader_skips_them(tmp_path):
    j = Journal(tmp_path, fsync="intents")
    for i in range(10):
        j.append(make_event("s", i, "intent" if i % 2 else "observation", {"i": i}))
    path = j.path
    raw = path.read_bytes()
    end = text_size(path)
    assert len(raw) > end and raw[end:] == bytes(len(raw) - end)  # a zeroed tail, past the last line
    assert raw[:end].endswith(b"\n") and b"\0" not in raw[:end]
    read = read_journal(tmp_path)
    assert [e["step"] for e in read.events] == list(range(10)) and read.skipped == []
    assert [e["step"] for e in tail_events(tmp_path, 3)] == [7, 8, 9]
    assert len(list(journal_lines(path))) == 10 and journal_data(path) == raw[:end]
    home = Home(tmp_path / "home")
    init_home(home)
    (home.journal_dir / path.name).write_bytes(raw)  # a running agent's file, as preflight finds it
    tail = [c for c in recovery_checks(home) if c.check == "recovery: journal tail"]
    assert tail and tail[0].status == "ok" and "ends cleanly" in tail[0].detail
    j.close()
    assert path.stat().st_size == end  # a closed file is its text alone


def test_text_beyond_a_zeroed_gap_is_kept_and_the_next_line_goes_after_it(tmp_path):
    """After a power loss the blocks written back out of order can leave text beyond a zeroed gap: it was
    written, in order, before the crash; it is read, the gap is reported, and nothing is written over it."""
    lines = [(f'{{"schema":"conway-event/1","step":{i},"kind":"result","payload":{{}}}}\n').encode() for i in range(3)]
    later = b'{"schema":"conway-event/1","step":3,"kind":"result","payload":{"later":true}}\n'
    path = tmp_path / "000001-20260101T000000000000.jsonl"
    kept = b"".join(lines) + bytes(200) + later
    path.write_bytes(kept + bytes(300))
    read = read_journal(tmp_path)
    assert [e["step"] for e in read.events] == [0, 1, 2, 3]  # readers skip the gap, not stop at it
    assert [(s.offset, s.length) for s in read.unreadable] == [(len(b"".join(lines)), 200)]  # the tail is no gap
    j = Journal(tmp_path, fsync="intents")
    assert j.torn_on_open is None
    for i in range(4, 40):
        j.append(make_event("s", i, "intent", {"i": i}))
    j.close()
    read = read_journal(tmp_path)
    assert [e["step"] for e in read.events] == list(range(40)) and read.skipped == []
    assert path.read_bytes().startswith(kept)


def test_a_torn_line_before_the_zeros_is_isolated_on_reopen(tmp_path):
    path = tmp_path / "000001-20260101T000000000000.jsonl"
    path.write_bytes(b'{"schema":"conway-event/1","step":0,"kind":"result","payload":{}}\n{"schema":"conw' + bytes(500))
    j = Journal(tmp_path, fsync="intents")
    assert j.torn_on_open == path.name
    j.append(make_event("s", 1, "intent", {}))
    read = read_journal(tmp_path)
    assert [e["step"] for e in read.events] == [0, 1] and read.skipped == [f"{path.name}:2"]
    j.close()


def test_no_room_for_the_zeros_still_appends_the_line(tmp_path, monkeypatch):
    """A disk too full for the zeroed tail: the line goes in the plain way, the file stays text only."""
    real = os.pwrite

    def full_for_zeros(fd, data, offset):
        if data and not data.strip(b"\0"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", full_for_zeros)
    j = Journal(tmp_path, fsync="intents")
    for i in range(5):
        j.append(make_event("s", i, "intent", {"i": i}))
    assert j.path.stat().st_size == text_size(j.path)
    assert [e["step"] for e in read_journal(tmp_path).events] == list(range(5))
    j.close()


WRITER = """
import sys
from pathlib import Path
from conway.store.journal import Journal, make_event
Journal.preallocate_bytes = 700  # extend often, so kills land inside the zero-filling too
j = Journal(Path(sys.argv[1]), max_file_bytes=6000, max_total_bytes=1 << 30, fsync="intents")
step = int(sys.argv[2])
while True:
    j.append(make_event("w", step, "intent" if step % 3 == 0 else "result", {"pad": "p" * (step % 97)}))
    sys.stdout.write(f"{step}\\n")
    sys.stdout.flush()
    step += 1
"""


def test_kill_9_at_random_instants_loses_no_acknowledged_event(tmp_path):
    """Real writer processes killed with SIGKILL, each restarted on the same folder: every event whose
    append returned is read back, in order; at most one torn line per kill; nothing else is skipped."""
    rng = random.Random(26)
    folder = tmp_path / "journal"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    acked: list[int] = []
    kills = 12
    for k in range(kills):
        done = read_journal(folder).events  # a restarted writer goes on after what the journal holds
        start = done[-1]["step"] + 1 if done else 0
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(start)], env=env, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout.readline()  # it is writing
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err.decode()
        got = [start] + [int(x) for x in out.split()]
        acked.extend(got[:-1] if out and not out.endswith(b"\n") else got)
        read = read_journal(folder)  # as status or a viewer reads it, before any reopen
        steps = [e["step"] for e in read.events]
        assert steps == sorted(set(steps)), "out of order or repeated"
        assert set(acked) <= set(steps)
        assert len(read.skipped) <= k + 1  # a torn line per kill at most: the zeroed tail is never a line
    j = Journal(folder, fsync="intents")  # the last reopen, as a restarted run does
    j.close()
    read = read_journal(folder)
    steps = [e["step"] for e in read.events]
    assert set(acked) <= set(steps) and steps == sorted(set(steps))
    assert len(read.skipped) <= kills
    assert len(journal_files(folder)) > 1  # rotation was exercised
    for path in journal_files(folder):
        assert b"\0" not in path.read_bytes()  # reopened and closed: text only


def test_a_second_writer_beside_a_run_loses_nothing(tmp_path):
    """`conway promote` appends a control event while a run may be writing: neither overwrites the other."""
    run = Journal(tmp_path, fsync="intents")
    expected = []
    for i in range(30):
        run.append(make_event("run", i, "intent", {"i": i}))
        expected.append(("run", i))
        if i % 7 == 3:  # another process's Journal: opened, one event, closed (as candidates._journal does)
            other = Journal(tmp_path, fsync="intents")
            other.append(make_event("cli", i, "control", {"promoted": i}), sync=True)
            other.close()
            expected.append(("cli", i))
    run.close()
    read = read_journal(tmp_path)
    assert [(e["session"], e["step"]) for e in read.events] == expected and read.skipped == []
    for path in journal_files(tmp_path):
        assert b"\0" not in path.read_bytes()
