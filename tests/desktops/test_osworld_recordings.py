"""`conway tasks run` with `tasks.desktop=osworld` against recordings of OSWorld's UNMODIFIED guest server
(tests/data/osworld_guest/, made by scripts/build/record_osworld_guest.py from the commit each names): every
recorded task scores as the recorded run did, Conway sends exactly the requests the real server answered, and
the server's own answers (a 500 page for activate_window, `{"output": null}` from /terminal, pyautogui's
warnings before /execute's output, a multipart upload) are read as OSWorld reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.replay_guest import ReplayGuest
from helpers.task_desktop import REPO

from conway.tasks.cache import download_path

RECORDINGS = sorted((REPO / "tests" / "data" / "osworld_guest").glob("*.json"))


def test_the_recordings_come_from_the_unmodified_server_at_a_named_commit() -> None:
    assert len(RECORDINGS) >= 3
    for path in RECORDINGS:
        server = json.loads(path.read_text())["server"]
        assert server["file"] == "desktop_env/server/main.py" and len(server["commit"] or "") == 40
        assert "unmodified" in server["runner"]


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_each_recorded_task_scores_as_the_real_server_run_did(path: Path, tmp_path: Path) -> None:
    rec = json.loads(path.read_text())
    task = rec["task"]
    suite, scripts, cache = tmp_path / "suite", tmp_path / "scripts", tmp_path / "cache"
    for d in (suite, scripts, cache):
        d.mkdir()
    (suite / f"{task['id']}.json").write_text(json.dumps(task))
    (scripts / f"{task['id']}.yaml").write_text(rec["mock_script"])
    for f in rec["cached"]:
        target = download_path(cache, task["id"], f["url"], f["path"])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f["text"])
    guest = ReplayGuest(rec)
    out = tmp_path / "report.json"
    try:
        done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "home"), "tasks", "run",
                               str(suite), "tasks.wait_after_setup_s=0", "tasks.settle_before_eval_s=0",
                               "--desktop-url", guest.url, "--mock-scripts", str(scripts), "--cache", str(cache),
                               "--output", str(out)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              capture_output=True, text=True, timeout=300)
    finally:
        guest.close()
    assert out.is_file(), done.stdout + done.stderr
    case = json.loads(out.read_text())["cases"][0]
    assert (case["outcome"], case["score"]) == (rec["outcome"], rec["score"]), done.stdout + done.stderr
    assert guest.unexpected == [] and guest.pending == []  # the same requests, every one answered as recorded
    if any(e["path"] == "/setup/activate_window" and e["status"] == 500 for e in rec["exchanges"]):
        assert "activate_window" in case["desktop"]["setup_notes"][0]  # OSWorld goes on; the case says so


def test_what_the_builders_proxy_records_the_replay_answers_the_same(tmp_path) -> None:
    # the recorder (scripts/build/record_osworld_guest.py) in front of a guest server, then the replay of what it
    # kept: the same requests get the same answers, JSON, a form and a multipart upload alike; an unrecorded one 404
    from helpers.standin_guest import StandinGuest

    from scripts.build.record_osworld_guest import Recorder

    guest = StandinGuest(":0", tmp_path / "guest-home")  # no display is used by these endpoints
    recorder = Recorder(guest.url)
    calls = [("POST", "/setup/upload", {"files": {"file_data": ("n.txt", b"hello\x00")},
                                        "data": {"file_path": "/home/user/n.txt"}}),
             ("POST", "/file", {"data": {"file_path": "/home/user/n.txt"}}),
             ("POST", "/execute", {"json": {"command": ["echo", "hi"], "shell": False}}),
             ("POST", "/screen_size", {})]
    try:
        first = [_call(recorder.url, *c) for c in calls]
    finally:
        recorder.close()
        guest.close()
    assert first[1] == (200, b"hello\x00") and b'"hi\\n"' in first[2][1]
    replay = ReplayGuest({"exchanges": recorder.exchanges})
    try:
        assert [_call(replay.url, *c) for c in calls] == first and not replay.unexpected
        assert _call(replay.url, "POST", "/screen_size", {})[0] == 404  # each exchange answers once
    finally:
        replay.close()


def _call(url: str, method: str, path: str, kw: dict) -> tuple[int, bytes]:
    import httpx

    r = httpx.request(method, url + path, timeout=30, **kw)
    return r.status_code, r.content
