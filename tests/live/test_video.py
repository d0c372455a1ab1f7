"""`--video`: a playable video of the session's screen, as long as the session (ffprobe); none without the flag; a
full disk stops the video in one line while the run goes on. The agent is the scripted mock policy."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from helpers.desktop_fixtures import need, wait_until
from helpers.live_sessions import start_session

from conway.machine.xvfb import start_xvfb
from conway.observe.video import ScreenVideo


@pytest.fixture
def display():
    need("Xvfb", "xvfb")
    need("ffmpeg", "ffmpeg")
    server = start_xvfb(640, 480)
    try:
        yield server.display
    finally:
        server.stop()


def probe(path: Path) -> dict:
    done = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_name,width,height",
                           "-of", "json", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_run_video_is_playable_and_as_long_as_the_session(display: str, tmp_path: Path) -> None:
    s = start_session(tmp_path / "a", display, [{"action": {"type": "wait", "seconds": 0.5}}], "--video")
    time.sleep(5)
    out = s.stop()
    videos = list((s.home.root / "videos").glob("*.mp4"))
    assert len(videos) == 1, out
    info = probe(videos[0])
    assert info["streams"][0]["codec_name"] == "h264" and info["streams"][0]["width"] == 640
    live = json.loads((s.home.root / "live.json").read_text())
    assert live["video"] == str(videos[0])
    from conway.view.command import build_site  # the session's page in the viewer links it

    site = build_site(s.home)
    page = site.get(f"s/{site.sessions[-1].folder}/page-0001.html").decode()
    assert videos[0].resolve().as_uri() in page
    start = next(_t(e) for e in s.events("session") if e["payload"].get("event") == "start")
    end = next(_t(e) for e in s.events("session") if e["payload"].get("event") == "end")
    assert abs(float(info["format"]["duration"]) - (end - start)) < 2.0, (info, end - start)
    # decoding it end to end works (a playable file, not a header)
    done = subprocess.run(["ffmpeg", "-v", "error", "-i", str(videos[0]), "-f", "null", "-"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def _t(event: dict) -> float:
    from datetime import datetime

    return datetime.fromisoformat(event["ts"]).timestamp()


def test_without_the_flag_nothing_is_kept(display: str, tmp_path: Path) -> None:
    s = start_session(tmp_path / "b", display, [{"action": {"type": "wait", "seconds": 0.5}}])
    time.sleep(1.5)
    s.stop()
    assert not (s.home.root / "videos").exists()
    assert json.loads((s.home.root / "live.json").read_text())["video"] is None


def test_a_full_disk_stops_the_video_in_one_line(display: str) -> None:
    """/dev/full answers every write with ENOSPC: ffmpeg's output there is a disk that is full."""
    said: list[str] = []
    video = ScreenVideo.start(display, Path("/dev/full"), say=said.append)
    assert video is not None
    wait_until(lambda: video.proc.poll() is not None, timeout=30, what="ffmpeg to give up")
    wait_until(lambda: said, timeout=5, what="the line saying so")
    video.stop()
    assert len(said) == 1 and "the video stopped" in said[0] and "the run goes on" in said[0], said


def test_no_ffmpeg_or_no_screen_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    assert ScreenVideo.start(None, tmp_path / "v.mp4", say=said.append) is None
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert ScreenVideo.start(":99", tmp_path / "v.mp4", say=said.append) is None
    assert len(said) == 2 and "no screen" in said[0] and "ffmpeg is not installed" in said[1]
