"""Direct file tools and the head+tail cutter, on real files in tmp_path."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conway.actions import AppendFile, ListDir, ReadFile, ReplaceText
from conway.protocols import DispatchUncertain, ToolResult
from conway.text.bounded import HeadTail, cut_bytes, cut_text
from conway.tools.files import FileTools


@pytest.fixture
def tools(tmp_path: Path) -> FileTools:
    return FileTools(tmp_path, read_max_bytes=100, list_max_entries=5)


# --- bounded -----------------------------------------------------------------


def test_cut_text_keeps_head_and_tail_and_announces():
    text = "".join(f"line {i}\n" for i in range(1000))
    out, truncated = cut_text(text, 40)
    assert truncated
    assert out.startswith(text[:20]) and out.endswith(text[-20:])
    assert f"[... {len(text) - 40} chars cut: showing first 20 and last 20 of {len(text)} ...]" in out


def test_cut_short_is_untouched():
    assert cut_text("abc", 3) == ("abc", False)
    assert cut_bytes(b"abc", 10) == (b"abc", False)


@given(st.lists(st.binary(max_size=300), max_size=30), st.integers(min_value=0, max_value=200))
def test_streaming_head_tail_equals_one_shot(chunks, cap):
    data = b"".join(chunks)
    buf = HeadTail(cap)
    for c in chunks:
        buf.feed(c)
    head, tail = buf.parts()
    assert buf.total == len(data)
    if len(data) <= cap:
        assert head + tail == data and not buf.truncated
    else:
        assert buf.truncated and data.startswith(head) and data.endswith(tail)
        assert len(head) == cap // 2 and len(tail) == cap - cap // 2
        out, truncated = cut_bytes(data, cap)
        assert truncated and out.startswith(head) and out.endswith(tail)
        assert f"{len(data) - cap} bytes cut".encode() in out


def test_cut_never_splits_a_utf8_character():
    buf = HeadTail(9)
    buf.feed(("é" * 100).encode())  # 2-byte characters, odd cap: both edges split one
    text, truncated = buf.text()
    assert truncated and "\ufffd" not in text


# --- read --------------------------------------------------------------------


def test_read_small_file(tools, tmp_path):
    (tmp_path / "a.txt").write_text("hello\nworld\n")
    r = tools.run(ReadFile(path="a.txt"))
    assert r.ok and r.output == "hello\nworld\n" and not r.truncated
    assert r.data["size"] == 12 and r.data["binary"] is False


def test_read_cap_keeps_head_and_tail_and_announces_cut(tools, tmp_path):
    body = "HEAD-MARK\n" + "x" * 10_000 + "\nTAIL-MARK"
    (tmp_path / "big.txt").write_text(body)
    r = tools.run(ReadFile(path=str(tmp_path / "big.txt")))
    assert r.ok and r.truncated
    assert r.output.startswith("HEAD-MARK") and r.output.endswith("TAIL-MARK")
    assert f"[... {len(body) - 100} bytes cut: showing first 50 and last 50 of {len(body)} ...]" in r.output
    assert len(r.output) < 200


def test_read_binary_file_says_so(tools, tmp_path):
    (tmp_path / "b.bin").write_bytes(bytes(range(256)))
    r = tools.run(ReadFile(path="b.bin"))
    assert r.ok and r.data["binary"] and r.output.startswith("[binary-looking file")


def test_read_non_utf8_text_says_so(tools, tmp_path):
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    r = tools.run(ReadFile(path="latin.txt"))
    assert r.ok and "not valid UTF-8" in r.output and "caf\ufffd" in r.output


def test_read_user_mistakes_are_results(tools, tmp_path):
    missing = tools.run(ReadFile(path="nope.txt"))
    assert not missing.ok and "no such file" in missing.error and "nope.txt" in missing.error
    (tmp_path / "d").mkdir()
    isdir = tools.run(ReadFile(path="d"))
    assert not isdir.ok and "is a directory" in isdir.error


def _as_sandboxed_root(tmp_path: Path, action: str) -> ToolResult | None:
    """Run as root, a sandboxed command holds no capability (uid 0 in a user namespace of its own, bounding
    set empty): the files tool is run here the same way (setpriv in a child process), so the permission
    boundary is asserted as root too. None when not root: the caller runs the tool itself."""
    if os.geteuid() != 0:
        return None
    code = ("import json, sys; from pathlib import Path; from conway.actions import ReadFile, ReplaceText; "
            "from conway.tools.files import FileTools; "
            f"r = FileTools(Path(sys.argv[1]), read_max_bytes=100).run({action}); "
            "print(json.dumps([r.ok, r.error, r.output]))")
    done = subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", sys.executable,
                           "-c", code, str(tmp_path)], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ok, error, output = json.loads(done.stdout)
    return ToolResult(ok=ok, error=error, output=output)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_read_permission_denied(tools, tmp_path):
    p = tmp_path / "secret"
    p.write_text("x")
    p.chmod(0)
    r = _as_sandboxed_root(tmp_path, 'ReadFile(path="secret")') or tools.run(ReadFile(path="secret"))
    assert not r.ok and "permission denied" in r.error


def test_tilde_expands(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "h.txt").write_text("home")
    r = FileTools(tmp_path / "elsewhere").run(ReadFile(path="~/h.txt"))
    assert r.ok and r.output == "home"


# --- replace -----------------------------------------------------------------


def _leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".conway-tmp")]


def test_replace_exact_is_atomic_and_keeps_mode(tools, tmp_path):
    p = tmp_path / "conf.ini"
    p.write_bytes(b"a = 1\r\nb = 2\r\n")
    p.chmod(0o640)
    inode = p.stat().st_ino
    r = tools.run(ReplaceText(path="conf.ini", old="b = 2", new="b = 3"))
    assert r.ok, r.error
    assert p.read_bytes() == b"a = 1\r\nb = 3\r\n"  # line endings untouched
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert p.stat().st_ino != inode  # a new file was renamed over the old one
    assert _leftovers(tmp_path) == []


def test_replace_no_match_leaves_file_unchanged(tools, tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("alpha beta\n")
    before = p.stat()
    r = tools.run(ReplaceText(path="f.txt", old="gamma", new="delta"))
    assert not r.ok and "not found" in r.error and "unchanged" in r.error
    assert p.read_text() == "alpha beta\n" and p.stat().st_mtime_ns == before.st_mtime_ns
    assert _leftovers(tmp_path) == []


def test_replace_ambiguous_is_refused_with_count(tools, tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("x = 1\nx = 1\nx = 1\n")
    r = tools.run(ReplaceText(path="f.txt", old="x = 1", new="x = 2"))
    assert not r.ok and "ambiguous" in r.error and "3 places" in r.error
    assert p.read_text() == "x = 1\nx = 1\nx = 1\n"
    overlapping = tools.run(ReplaceText(path="f.txt", old="1\nx = 1", new="?"))
    assert not overlapping.ok and "2 places" in overlapping.error


def test_replace_through_symlink_edits_target(tools, tmp_path):
    (tmp_path / "real.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    assert tools.run(ReplaceText(path="link.txt", old="old", new="new")).ok
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new\n"


def test_replace_missing_and_non_utf8(tools, tmp_path):
    assert "no such file" in tools.run(ReplaceText(path="none", old="a", new="b")).error
    (tmp_path / "bin").write_bytes(b"\xff\xfe a")
    r = tools.run(ReplaceText(path="bin", old="a", new="b"))
    assert not r.ok and "UTF-8" in r.error and (tmp_path / "bin").read_bytes() == b"\xff\xfe a"


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_replace_in_readonly_directory_is_certain_failure(tools, tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    (d / "f.txt").write_text("a\n")
    d.chmod(0o555)
    try:
        r = (_as_sandboxed_root(tmp_path, 'ReplaceText(path="ro/f.txt", old="a", new="b")')
             or tools.run(ReplaceText(path="ro/f.txt", old="a", new="b")))
    finally:
        d.chmod(0o755)
    assert not r.ok and "unchanged" in r.error and (d / "f.txt").read_text() == "a\n"


# --- append ------------------------------------------------------------------


def test_append_creates_then_appends(tools, tmp_path):
    r1 = tools.run(AppendFile(path="log.txt", text="one\n"))
    assert r1.ok and r1.data["created"] and "created" in r1.output
    r2 = tools.run(AppendFile(path="log.txt", text="two\n"))
    assert r2.ok and not r2.data["created"] and r2.data["size"] == 8
    assert (tmp_path / "log.txt").read_text() == "one\ntwo\n"


def test_append_needs_existing_parent(tools, tmp_path):
    r = tools.run(AppendFile(path="no/such/dir/f.txt", text="x"))
    assert not r.ok and "parent directory does not exist" in r.error
    assert not (tmp_path / "no").exists()
    (tmp_path / "d").mkdir()
    assert "is a directory" in tools.run(AppendFile(path="d", text="x")).error


# --- list --------------------------------------------------------------------


def test_list_dir_sorted_marked_and_bounded(tools, tmp_path):
    for i in range(8):
        (tmp_path / f"f{i}.txt").write_text("x" * i)
    (tmp_path / "a_dir").mkdir()
    r = tools.run(ListDir(path="."))
    assert r.ok and r.truncated
    lines = r.output.splitlines()
    assert lines[0].endswith("9 entries")
    assert lines[1:6] == ["a_dir/", "f0.txt  0 bytes", "f1.txt  1 bytes", "f2.txt  2 bytes", "f3.txt  3 bytes"]
    assert "4 more entries not shown" in lines[6] and r.data["omitted"] == 4


def test_list_dir_mistakes(tools, tmp_path):
    assert "no such file" in tools.run(ListDir(path="missing")).error
    (tmp_path / "f").write_text("")
    assert "not a directory" in tools.run(ListDir(path="f")).error


def test_availability(tmp_path):
    assert FileTools(tmp_path).availability()[0]
    ok, reason = FileTools(tmp_path / "missing").availability()
    assert not ok and "missing" in reason


class _DiskFillsHalfway:
    """os.write as a file system that fills up mid-append: the first write to the payload lands half of it
    (a short write, as the kernel does when space runs out), the next one raises ENOSPC."""

    def __init__(self, payload: bytes):
        self.payload, self.real, self.fd, self.full = payload, os.write, None, False

    def __call__(self, fd, data):
        if self.fd is None and bytes(data) == self.payload:
            self.fd = fd
            return self.real(fd, bytes(data)[: len(data) // 2])
        if fd == self.fd and not self.full:  # once: the fd number is reused after the append closes it
            self.full = True
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.real(fd, data)


def test_an_append_cut_short_by_a_full_disk_is_uncertain(tools, tmp_path, monkeypatch):
    (tmp_path / "log.txt").write_text("before\n")
    monkeypatch.setattr(os, "write", _DiskFillsHalfway(b"0123456789"))
    with pytest.raises(DispatchUncertain, match="part-way"):
        tools.run(AppendFile(type="append_file", path="log.txt", text="0123456789"))
    assert (tmp_path / "log.txt").read_bytes() == b"before\n01234"  # half of it landed


def test_a_half_written_append_ends_the_run_as_uncertain(conway_home, monkeypatch):
    from helpers.loop_harness import run_script

    from conway.loop.ending import RunEnd
    monkeypatch.setattr(os, "write", _DiskFillsHalfway(b"0123456789"))
    append = {"action": {"type": "append_file", "path": "log.txt", "text": "0123456789"}}
    run = run_script([append, append], overrides=["agent.max_steps=5"])
    assert run.outcome.end is RunEnd.UNCERTAIN
    unc = run.payloads("uncertain")
    assert len(unc) == 1 and "part-way" in unc[0]["detail"] and "No space left" in unc[0]["detail"]
    assert run.payloads("error") == [] and run.kinds().count("intent") == 1


def _unblock(fifo: Path) -> None:
    """Let a reader stuck in open() on `fifo` go (old code) so the test leaves no thread behind."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


@pytest.mark.parametrize("make", [lambda p: ReadFile(path=p), lambda p: ReplaceText(path=p, old="a", new="b")])
def test_read_file_and_replace_text_refuse_a_fifo_without_blocking(tmp_path, make):
    """Item 25.13: the regular-file check came after a blocking open()."""
    import threading
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    tools = FileTools(tmp_path)
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", tools.run(make("pipe"))), daemon=True)
    worker.start()
    worker.join(timeout=20)
    blocked = worker.is_alive()
    _unblock(fifo)
    worker.join(timeout=5)
    assert not blocked, "stuck in open() on a FIFO"
    result = box["result"]
    assert result.ok is False and result.error == f"not a regular file: {fifo}"
