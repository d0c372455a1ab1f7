"""VLC's playing state: the `vlc_playing_info` getter against a stand-in for VLC's HTTP interface on the loopback
(a fake, and the point: status.xml behind the password OSWorld's VM sets), and `is_vlc_playing` on generated
status files as OSWorld's function scores them."""

from __future__ import annotations

import base64
import http.server
import threading

import pytest
from helpers.task_env import TestTaskEnv

from conway.tasks import vlc_status
from conway.tasks.getters import GETTERS
from conway.tasks.metrics import METRICS


def status(state: str, **meta: str) -> str:
    infos = "".join(f'<info name="{k}">{v}</info>' for k, v in meta.items())
    return (f'<?xml version="1.0" encoding="utf-8"?><root><state>{state}</state><information>'
            f'<category name="meta">{infos}</category></information></root>')


class Vlc(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.headers.get("Authorization") != "Basic " + base64.b64encode(b":password").decode():
            self.send_error(401)
            return
        body = status("playing", filename="song.mp3").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def env(tmp_path):
    (tmp_path / "home").mkdir()
    return TestTaskEnv(home=tmp_path / "home", task_id="t", cache_dir=None)


def test_the_status_comes_from_vlcs_http_interface(env, monkeypatch):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Vlc)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(vlc_status, "PORT", httpd.server_address[1])
        path = GETTERS["vlc_playing_info"](env, {"dest": "status.xml"})
        assert path.endswith("status.xml")
        assert METRICS["is_vlc_playing"](path, {"type": "file_name", "file_name": "song.mp3"}) == 1.0
        monkeypatch.setattr(vlc_status, "PASSWORD", "wrong")
        assert GETTERS["vlc_playing_info"](env, {"dest": "status.xml"}) is None
    finally:
        httpd.shutdown()
        httpd.server_close()
    monkeypatch.setattr(vlc_status, "PORT", 9)
    assert GETTERS["vlc_playing_info"](env, {"dest": "status.xml"}) is None  # VLC not answering: OSWorld's None


@pytest.mark.parametrize("xml, rule, score", [
    (status("playing", filename="song.mp3"), {"type": "file_name", "file_name": "song.mp3"}, 1.0),
    (status("playing", uri="file:///home/user/Music/song.mp3"), {"type": "file_name", "file_name": "song.mp3"}, 1.0),
    (status("paused", filename="song.mp3"), {"type": "file_name", "file_name": "song.mp3"}, 0.0),
    (status("playing", filename="other.mp3"), {"type": "file_name", "file_name": "song.mp3"}, 0.0),
    (status("playing"), {"type": "file_name", "file_name": "song.mp3"}, 0.0),
    (status("playing", url="https://cdn.example.com/v/master.m3u8?x=1"),
     {"type": "url", "url": "https://cdn.example.com/v/master.m3u8"}, 1.0),
    (status("playing", filename="master.m3u8"), {"type": "url", "url": "https://cdn.example.com/v/master.m3u8"}, 1.0),
    (status("playing", url="https://other.org/v.m3u8"), {"type": "url", "url": "https://cdn.example.com/v/master.m3u8"},
     0.0),
    (status("playing", filename="song.mp3"), {"type": "other"}, 0.0),
    ("not xml", {"type": "file_name", "file_name": "x"}, 0.0),
    ("", {"type": "file_name", "file_name": "x"}, 0.0),
    ("<root/>", {"type": "file_name", "file_name": "x"}, 0.0),
])
def test_is_vlc_playing_scores_as_osworld(tmp_path, xml, rule, score):
    (tmp_path / "status.xml").write_text(xml)
    assert METRICS["is_vlc_playing"](str(tmp_path / "status.xml"), rule) == score
    assert METRICS["is_vlc_playing"](str(tmp_path / "missing.xml"), rule) == 0.0
