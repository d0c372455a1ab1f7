"""`conway tasks fetch` against a real HTTP server on the loopback: OSWorld's cache layout, one download per URL,
resume after a broken or interrupted download, a 404, a checksum mismatch, a folder where a file belongs."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conway.cli.main import main
from conway.tasks.cache import cloud_path, download_path
from conway.tasks.fetch import MANIFEST, fetch_suite

BODY = bytes(range(256)) * 1024  # 256 KiB: several blocks


class Files(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    etags: dict[str, str] = {}
    cut: dict[str, int] = {}  # path → bytes sent before the connection drops (once)
    slow = False  # send the body in small pieces, slowly (for a Ctrl+C while it downloads)
    seen: list[tuple[str, str | None]] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.seen.append((self.path, self.headers.get("Range")))
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404, "Not Found")
            return
        start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        if self.path in self.etags:
            self.send_header("ETag", f'"{self.etags[self.path]}"')
        self.end_headers()
        limit = self.cut.pop(self.path, None)
        if self.slow:
            for i in range(start, len(body), 4096):
                try:
                    self.wfile.write(body[i:i + 4096])
                    self.wfile.flush()
                except OSError:  # the client went away
                    return
                # the first 96 KiB quickly (the client's first 64 KiB block reaches .part), then 0.5 s a piece:
                # ~20 s in which the Ctrl+C lands mid-download however loaded the machine is
                time.sleep(0.01 if i < 96 * 1024 else 0.5)
            return
        self.wfile.write(body[start:] if limit is None else body[start:start + limit])
        if limit is not None:
            self.close_connection = True


@pytest.fixture
def server():
    Files.files, Files.etags, Files.cut, Files.seen, Files.slow = {}, {}, {}, [], False
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def write_suite(root: Path, tasks: dict[str, dict]) -> Path:
    folder = root / "examples" / "os"
    folder.mkdir(parents=True)
    for tid, t in tasks.items():
        (folder / f"{tid}.json").write_text(json.dumps({"id": tid, "instruction": "x", "related_apps": ["os"], **t}))
    return root


def downloading(url: str, path: str = "/home/user/in.bin") -> dict:
    return {"config": [{"type": "download", "parameters": {"files": [{"url": url, "path": path}]}}],
            "evaluator": {"func": "exact_match", "result": {"type": "rule", "rules": {"expected": "a"}},
                          "expected": {"type": "rule", "rules": {"expected": "a"}}}}


def cloud(url: str, dest: str) -> dict:
    return {"evaluator": {"func": "compare_text_file", "result": {"type": "vm_file", "path": "~/a", "dest": "a"},
                         "expected": {"type": "cloud_file", "path": url, "dest": dest}}}


def test_every_file_lands_in_osworlds_layout_once_per_url(server, tmp_path, capsys):
    Files.files = {"/in.bin": BODY, "/gold.txt": b"gold\n"}
    suite = write_suite(tmp_path / "suite", {"a": downloading(server + "/in.bin"), "b": downloading(server + "/in.bin"),
                                             "c": cloud(server + "/gold.txt", "gold.txt")})
    cache = tmp_path / "cache"
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 0
    for tid in ("a", "b"):
        assert download_path(cache, tid, server + "/in.bin", "/home/user/in.bin").read_bytes() == BODY
    assert cloud_path(cache, "c", "gold.txt").read_bytes() == b"gold\n"
    assert [p for p, _ in Files.seen].count("/in.bin") == 1  # fetched once, copied for the second task
    manifest = json.loads((cache / MANIFEST).read_text())
    assert manifest["c/gold.txt"]["sha256"] == hashlib.sha256(b"gold\n").hexdigest()
    assert "3 file(s) named by 3 task(s): 3 fetched, 0 already in" in capsys.readouterr().out
    # the cache now makes the tasks runnable as far as files go, and a second fetch downloads nothing
    Files.seen.clear()
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache), "--quiet"]) == 0
    assert Files.seen == [] and "0 fetched, 3 already in" in capsys.readouterr().out


def test_a_broken_download_resumes_where_it_stopped(server, tmp_path, capsys):
    Files.files, Files.cut = {"/in.bin": BODY}, {"/in.bin": 100_000}
    suite = write_suite(tmp_path / "suite", {"a": downloading(server + "/in.bin")})
    cache = tmp_path / "cache"
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 2
    out = capsys.readouterr().out
    assert "FAILED a: " in out and "run again to resume" in out
    target = download_path(cache, "a", server + "/in.bin", "/home/user/in.bin")
    part = target.with_name(target.name + ".part")
    assert not target.exists() and part.stat().st_size == 100_000
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 0
    assert Files.seen[-1] == ("/in.bin", "bytes=100000-")
    assert target.read_bytes() == BODY and not part.exists()


def test_ctrl_c_mid_download_keeps_the_part_and_the_next_run_resumes(server, tmp_path, capsys):
    Files.files = {"/in.bin": BODY, "/other.txt": b"x"}
    suite = write_suite(tmp_path / "suite", {"a": downloading(server + "/in.bin"),
                                             "b": cloud(server + "/other.txt", "o.txt")})
    cache = tmp_path / "cache"

    class Interrupting:  # the real response, with Ctrl+C arriving after its second block
        def __init__(self, response):
            self.response, self.blocks = response, 0
            self.status, self.headers = response.status, response.headers

        def read(self, n):
            self.blocks += 1
            if self.blocks == 3:
                raise KeyboardInterrupt
            return self.response.read(n)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.response.close()

    def opener(request, timeout):
        return Interrupting(urllib.request.urlopen(request, timeout=timeout))

    code = fetch_suite([str(suite)], cache, opener=opener, say=print)
    assert code == 130
    assert "interrupted: run again to resume" in capsys.readouterr().out
    target = download_path(cache, "a", server + "/in.bin", "/home/user/in.bin")
    assert target.with_name(target.name + ".part").stat().st_size == 2 * 65536
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 0
    assert ("/in.bin", "bytes=131072-") in Files.seen and target.read_bytes() == BODY


def test_404_checksum_mismatch_and_a_folder_each_fail_alone(server, tmp_path, capsys):
    Files.files = {"/bad.bin": b"tampered", "/ok.txt": b"ok", "/dir.txt": b"d"}
    Files.etags = {"/bad.bin": hashlib.sha256(b"original").hexdigest()}
    suite = write_suite(tmp_path / "suite", {"gone": cloud(server + "/missing.txt", "m.txt"),
                                             "bad": cloud(server + "/bad.bin", "bad.bin"),
                                             "ok": cloud(server + "/ok.txt", "ok.txt"),
                                             "dir": cloud(server + "/dir.txt", "dir.txt")})
    cache = tmp_path / "cache"
    (cache / "dir" / "dir.txt").mkdir(parents=True)
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 2
    out = capsys.readouterr().out
    assert f"FAILED gone: {server}/missing.txt: HTTP 404" in out
    assert "FAILED bad: " in out and "checksum mismatch" in out
    assert "FAILED dir: " in out and "is a folder where the file belongs" in out
    assert "4 file(s) named by 4 task(s): 1 fetched, 0 already in" in out and "3 failed" in out
    assert (cache / "ok" / "ok.txt").read_bytes() == b"ok"
    assert not (cache / "bad" / "bad.bin").exists() and not list((cache / "bad").glob("*.part"))


def test_a_file_changed_since_it_was_fetched_is_fetched_again(server, tmp_path, capsys):
    Files.files = {"/ok.txt": b"ok"}
    suite = write_suite(tmp_path / "suite", {"ok": cloud(server + "/ok.txt", "ok.txt")})
    cache = tmp_path / "cache"
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 0
    (cache / "ok" / "ok.txt").write_bytes(b"corrupt")
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 0
    assert (cache / "ok" / "ok.txt").read_bytes() == b"ok"
    assert "1 fetched" in capsys.readouterr().out.splitlines()[-1]


def test_bad_input_and_the_help(tmp_path, capsys):
    suite = write_suite(tmp_path / "suite", {"ok": cloud("http://127.0.0.1:9/x", "x")})
    (tmp_path / "file").write_text("")
    assert main(["tasks", "fetch", str(suite), "--cache", str(tmp_path / "file")]) == 1
    assert "is a file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tasks", "fetch", "--help"])
    text = capsys.readouterr().out
    flat = " ".join(text.split())
    assert "resumes from there" in flat and "conway-fetch.json" in flat and "neither ever downloads" in flat


def test_a_real_ctrl_c_keeps_the_part_and_exits_130(server, tmp_path):
    """The command in its own process, sent SIGINT while a slow download is under way."""
    import os
    import signal
    import subprocess
    import sys
    import time

    Files.files = {"/slow.bin": BODY}
    Files.slow = True
    suite = write_suite(tmp_path / "suite", {"a": downloading(server + "/slow.bin")})
    cache = tmp_path / "cache"
    target = download_path(cache, "a", server + "/slow.bin", "/home/user/in.bin")
    part = target.with_name(target.name + ".part")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    # started as from a terminal: a suite run in the background (`... &` without job control) inherits SIGINT
    # ignored, and Python then leaves it ignored, as a background job should: the download ran to its end, exit 0
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli", "tasks", "fetch", str(suite), "--cache", str(cache)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (part.exists() and part.stat().st_size > 0):
        assert time.monotonic() < deadline and proc.poll() is None, "the download never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert "interrupted: run again to resume" in out
    assert part.exists() and not target.exists()
    Files.slow = False
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache), "--quiet"]) == 0
    assert target.read_bytes() == BODY


def test_a_cloud_file_named_outside_its_tasks_folder_is_refused_and_never_written(server, tmp_path, capsys):
    """`dest` is a name inside the task's cache folder: an absolute one or one climbing out with `..` would make
    this command write wherever the task file says."""
    Files.files = {"/x.txt": b"planted", "/ok.txt": b"ok"}
    target = tmp_path / "victim.txt"
    suite = write_suite(tmp_path / "suite", {"abs": cloud(server + "/x.txt", str(target)),
                                             "up": cloud(server + "/x.txt", "../../victim.txt"),
                                             "ok": cloud(server + "/ok.txt", "ok.txt")})
    cache = tmp_path / "cache"
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 2
    out = capsys.readouterr().out
    assert f"FAILED abs: {server}/x.txt: PathEscape: {target} is outside the task's cache folder" in out
    assert f"FAILED up: {server}/x.txt: PathEscape: ../../victim.txt is outside" in out
    assert "3 file(s) named by 3 task(s): 1 fetched" in out and "2 failed" in out
    assert not target.exists() and [p for p, _ in Files.seen] == ["/ok.txt"]
    assert (cache / "ok" / "ok.txt").read_bytes() == b"ok"


def test_offline_each_failure_is_said_once_and_no_empty_task_folder_is_left(tmp_path, capsys):
    # it printed every failure twice and left an empty folder per task in the cache
    import socket

    with socket.socket() as s:  # a port nothing listens on: offline, as far as this fetch can tell
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    suite = write_suite(tmp_path / "suite", {"a": cloud(dead + "/a.txt", "a.txt"),
                                             "b": downloading(dead + "/b.bin")})
    cache = tmp_path / "cache"
    assert main(["tasks", "fetch", str(suite), "--cache", str(cache)]) == 2
    out = capsys.readouterr().out
    assert out.count(f"{dead}/a.txt: cannot reach it") == 1 and out.count(f"{dead}/b.bin: cannot reach it") == 1
    assert "2 failed" in out
    assert sorted(p.name for p in cache.iterdir()) == []  # nothing fetched, nothing left behind
