"""The browser getters through the real DevTools probe (run as the task's command, as in the sandbox) against a
stand-in DevTools HTTP endpoint on the loopback: a fake, and the point (the listing and closing of page targets
as Chromium answers them); the probe's WebSocket path needs a real Chromium."""

from __future__ import annotations

import http.server
import json
import threading

import pytest
from helpers.task_env import TestTaskEnv

from conway.tasks import devtools
from conway.tasks.getters import GETTERS

TARGETS = [
    {"id": "A", "type": "page", "title": "Cars", "url": "https://www.cars.com/shopping/results/?zip=10001&list_price_max=50000&fuel_slugs[]=electric"},
    {"id": "W", "type": "service_worker", "title": "sw", "url": "https://x.org/sw.js"},
    {"id": "B", "type": "page", "title": "Old", "url": "https://example.org/first"},
]


class Endpoint(http.server.BaseHTTPRequestHandler):
    closed: list[str] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/json/list":
            body = json.dumps(TARGETS).encode()
        elif self.path.startswith("/json/close/"):
            self.closed.append(self.path.rsplit("/", 1)[1])
            body = b"Target is closing"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def env(tmp_path, monkeypatch):
    Endpoint.closed = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setattr(devtools, "PORT", httpd.server_address[1])
    home = tmp_path / "home"
    home.mkdir()
    yield TestTaskEnv(home=home, task_id="t", cache_dir=None)
    httpd.shutdown()
    httpd.server_close()


def test_tabs_and_the_active_url(env):
    assert GETTERS["open_tabs_info"](env, {}) == [{"title": "Old", "url": "https://example.org/first"},
                                                  {"title": "Cars", "url": TARGETS[0]["url"]}]
    url = GETTERS["active_url_from_accessTree"](env, {"goto_prefix": "https://www."})
    assert url == TARGETS[0]["url"]  # the address bar's "cars.com/…" after the task's prefix
    assert GETTERS["active_url_from_accessTree"](env, {"goto_prefix": ""}).startswith("cars.com/shopping")
    parsed = GETTERS["active_tab_url_parse"](env, {"goto_prefix": "https://www.",
                                                   "parse_keys": ["zip", "list_price_max", "fuel_slugs[]", "none"],
                                                   "replace": {"zip": "postcode"}})
    assert parsed == {"list_price_max": "50000", "fuel_slugs[]": "electric", "none": "", "postcode": "10001"}
    dash = GETTERS["url_dashPart"](env, {"goto_prefix": "https://www.", "partIndex": -2, "needDeleteId": False,
                                         "returnType": "json", "key": "time"})
    assert dash == {"time": "results"}
    devtools.close_tabs(env, ["B"])
    assert Endpoint.closed == ["B"]


def test_no_browser_is_an_empty_tab_list_or_one_error_line(env, monkeypatch):
    monkeypatch.setattr(devtools, "PORT", 9)  # nothing listens there
    assert GETTERS["open_tabs_info"](env, {}) == []
    stub = GETTERS["pdf_from_url"](env, {"path": "http://127.0.0.1:9/x", "dest": "x.pdf"})
    assert open(stub, "rb").read() == b"%PDF-1.4\n%EOF\n"  # OSWorld's stub when the page cannot be printed
    with pytest.raises(devtools.DevToolsError, match="DevTools endpoint"):
        GETTERS["active_url_from_accessTree"](env, {})


def test_a_macys_path_is_read_as_osworld_reads_it():
    from conway.tasks.devtools import url_path_parse

    class Fixed:
        pass
    path = ("https://www.macys.com/shop/mens-clothing/mens-shirts/Men_regular_size_t,Price_discount_range/"
            "L,50_PERCENT_ off %26 more?id=1")
    devtools_active = devtools.active_url
    try:
        devtools.active_url = lambda env, config: path
        got = url_path_parse(Fixed(), {"parse_keys": ["mens_clothing", "shirts", "Men_regular_size_t",
                                                       "Price_discount_range"]})
    finally:
        devtools.active_url = devtools_active
    assert got["mens_clothing"] is True and got["shirts"] is True and got["short_sleeve"] is None
    assert got["Men_regular_size_t"] == "L" and got["Price_discount_range"] == "50_PERCENT_ off & more"
