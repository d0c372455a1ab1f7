"""A NUL run inside a journal file's data (a block zeroed by a power loss, a bad block, an editor) is skipped
and reported, the lines after it are read, and the next writer appends after the last byte of data, never over
it (issue 32). The space set aside ahead of the writer is never what a reader of the file sees."""

from __future__ import annotations

import json
import os

import pytest

from conway.cli.main import main
from conway.session.app import render_status, status_report
from conway.store.home import Home
from conway.store.journal import (
    Journal,
    UnreadableSpan,
    journal_files,
    journal_lines,
    make_event,
    occupied_bytes,
    read_journal,
    reserve_blocks,
    tail_events,
    text_size,
    unreadable_spans,
)


def _line(step: int) -> bytes:
    return (json.dumps({"schema": "conway-event/1", "session": "old", "step": step, "kind": "result",
                        "payload": {"i": step}}, separators=(",", ":")) + "\n").encode()


def _file_with_a_nul_started_line(folder) -> tuple[bytes, int]:
    """Five lines, the third's first 40 bytes zeroed (what a zeroed block leaves): (the file's bytes, the run's offset)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [_line(i) for i in range(5)]
    at = len(lines[0]) + len(lines[1])
    cut = bytes(40) + lines[2][40:]  # the line's start is gone; its end is left behind
    raw = lines[0] + lines[1] + cut + lines[3] + lines[4]
    (folder / "000001-20260101T000000000000.jsonl").write_bytes(raw)
    return raw, at


def test_a_nul_started_line_in_the_middle_is_skipped_and_reported_and_every_line_after_it_read(tmp_path):
    raw, at = _file_with_a_nul_started_line(tmp_path)
    read = read_journal(tmp_path)
    assert [e["step"] for e in read.events] == [0, 1, 3, 4]  # before the fix: [0, 1]
    assert read.skipped == ["000001-20260101T000000000000.jsonl:3"]  # the cut line's leftover end
    assert read.unreadable == [UnreadableSpan("000001-20260101T000000000000.jsonl", at, 40)]
    assert str(read.unreadable[0]) == f"000001-20260101T000000000000.jsonl: skipped 40 unreadable bytes at offset {at}"
    assert unreadable_spans(tmp_path) == read.unreadable
    assert [e["step"] for e in tail_events(tmp_path, 2)] == [3, 4]
    assert text_size(journal_files(tmp_path)[0]) == len(raw)  # the data ends at its last byte, not at the NULs
    assert all(b"\0" not in line for line in journal_lines(journal_files(tmp_path)[0]))


def test_zeros_to_the_end_of_a_file_are_no_unreadable_span(tmp_path):
    """A killed writer of before may leave a zeroed tail: nothing follows it, so nothing is reported."""
    path = tmp_path / "000001-20260101T000000000000.jsonl"
    path.write_bytes(_line(0) + _line(1) + bytes(5000))
    read = read_journal(tmp_path)
    assert [e["step"] for e in read.events] == [0, 1] and read.unreadable == [] and read.skipped == []
    assert text_size(path) == len(_line(0) + _line(1))


def test_a_new_writer_appends_after_the_last_byte_of_data_and_keeps_every_byte(tmp_path):
    raw, at = _file_with_a_nul_started_line(tmp_path)
    j = Journal(tmp_path, fsync="intents")
    assert j.torn_on_open is None
    for i in range(5, 60):  # well past where the NUL run lay
        j.append(make_event("new", i, "intent", {"i": i}))
    j.close()
    path = journal_files(tmp_path)[0]
    assert path.read_bytes().startswith(raw)  # before the fix: cut at the NUL run and written over
    read = read_journal(tmp_path)
    assert [e["step"] for e in read.events] == [0, 1, 3, 4, *range(5, 60)]
    assert read.unreadable == [UnreadableSpan(path.name, at, 40)]


def test_the_live_journal_read_as_docs_say_has_no_nul_lines(tmp_path):
    """The file being written ends in zeros (the documented format): with them dropped, as docs/architecture.md
    tells an outside reader (`tr -d '\\000' < FILE | jq`), every line is one event; conway's own reader skips them."""
    j = Journal(tmp_path, fsync="intents")
    for i in range(20):
        j.append(make_event("s", i, "intent" if i % 2 else "observation", {"i": i}))
        raw = j.path.read_bytes()
        assert raw.endswith(b"\0")  # the tail set aside ahead of the writer
        assert [json.loads(line)["step"] for line in raw.replace(b"\0", b"").splitlines()] == list(range(i + 1))
        assert [json.loads(line)["step"] for line in journal_lines(j.path)] == list(range(i + 1))
    j.close()
    assert b"\0" not in journal_files(tmp_path)[0].read_bytes()  # a closed file is its data alone


def test_the_cap_counts_what_a_file_occupies(tmp_path):
    """Blocks taken past a file's end (fallocate with FALLOC_FL_KEEP_SIZE, by another tool or a writer that
    reserves that way) count toward the cap: the length alone would let the journal take more than it."""
    folder = tmp_path / "journal"
    folder.mkdir()
    for n in range(1, 6):  # five closed files of 4 KB data, each with 64 KiB taken past its end
        path = folder / f"{n:06d}-20260101T00000000000{n}.jsonl"
        path.write_bytes(_line(n) * 40)
        fd = os.open(path, os.O_RDWR)
        try:
            if not reserve_blocks(fd, path.stat().st_size, 64 << 10):
                pytest.skip("no fallocate(FALLOC_FL_KEEP_SIZE) on this file system")
        finally:
            os.close(fd)
        assert occupied_bytes(path) > 64 << 10
    cap = 200_000
    j = Journal(folder, max_file_bytes=20_000, max_total_bytes=cap, fsync="none")
    occupied = sum(occupied_bytes(p) for p in journal_files(folder))
    assert occupied <= cap, occupied  # before the fix: about 5 x 68 KiB, the blocks past the ends uncounted
    assert occupied_bytes(j.path) <= 20_000 + 4096  # the reopened file's blocks past its end were freed
    j.close()


def test_a_power_loss_zeroing_a_middle_block_then_a_new_run_keeps_every_old_line(tmp_path, capsys):
    home = tmp_path / "home"
    assert main(["--home", str(home), "init"]) == 0
    assert main(["--home", str(home), "run", "--mock", "--max-steps", "3"]) == 0
    path = journal_files(home / "journal")[0]
    before = path.read_bytes()
    assert len(before) > 3 * 2048, len(before)
    hurt = before[:2048] + bytes(2048) + before[4096:]  # one block in the middle never written back
    path.write_bytes(hurt)
    kept = [line for line in before.splitlines(keepends=True) if line in hurt]  # the lines the block spared
    capsys.readouterr()
    assert main(["--home", str(home), "run", "--mock", "--max-steps", "1"]) == 0
    after = path.read_bytes()
    assert after.startswith(hurt) and len(after) > len(hurt)  # before the fix: cut at 2048 and written over
    assert all(line in after for line in kept)
    read = read_journal(home / "journal")
    old = [json.loads(line) for line in kept]
    assert read.events[:len(old)] == old and len(read.events) > len(old)  # every spared line, then the new run's
    span = f"{path.name}: skipped 2048 unreadable bytes at offset 2048"
    assert [str(s) for s in read.unreadable] == [span]
    assert f"journal:  {span}" in render_status(status_report(Home(home)))
    capsys.readouterr()
    assert main(["--home", str(home), "export", "--output", str(tmp_path / "out.jsonl")]) == 0
    assert span in capsys.readouterr().out
