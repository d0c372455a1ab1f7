"""The DevTools getters against a real headless Chromium showing a page served on the loopback: the probe's
WebSocket path (Runtime.evaluate, a new tab loaded and closed, a PDF print) and OSWorld's html-parse categories."""

from __future__ import annotations

import base64
import functools
import http.server
import os
import socket
import subprocess
import threading
import time
import urllib.request

import pytest
from helpers.desktop_fixtures import need
from helpers.task_env import TestTaskEnv

from conway.tasks import devtools
from conway.tasks.getters import GETTERS

PAGE = """<!doctype html><html><head><title>Flights</title></head><body>
<div class="when">  Mon, Jan 5 </div><div class="sep">SEA<div class="x"></div>NYC</div>
<ul class="crumbs"><li class="catAllProducts"><span>Toys</span></li><li class="catAllProducts"><span>Kids</span></li>
<li class="catAllProducts"><span>Games</span></li></ul>
<div class="card"><h3>First</h3></div><div class="card"><h3>Second</h3></div>
<input id="from" value=" Boston "><p>Price <b>low to high</b></p>
<a id="next" href="second.html">Next</a></body></html>"""
SECOND = """<!doctype html><html><head><title>Second</title></head><body>
<div id="doi"><a href="https://doi.example.org/10.1/x">Paper</a></div></body></html>"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def browser(tmp_path, monkeypatch):
    need("chromium", "chromium")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "page.html").write_text(PAGE)
    (tmp_path / "site" / "second.html").write_text(SECOND)
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    handler = functools.partial(Quiet, directory=str(tmp_path / "site"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    page = f"http://127.0.0.1:{httpd.server_address[1]}/page.html"
    port = free_port()
    chrome = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--remote-debugging-port={port}", f"--user-data-dir={tmp_path / 'profile'}", page],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "HOME": str(tmp_path / "chrome-home"),  # never the real home
                                   "XDG_CONFIG_HOME": str(tmp_path / "chrome-home"), "DBUS_SESSION_BUS_ADDRESS": "disabled:"})
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                if b"Flights" in r.read():
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "Chromium's DevTools endpoint never listed the page"
        time.sleep(0.2)
    monkeypatch.setattr(devtools, "PORT", port)
    (tmp_path / "home").mkdir()
    yield TestTaskEnv(home=tmp_path / "home", task_id="t", cache_dir=None), page
    chrome.kill()
    chrome.wait()
    httpd.shutdown()
    httpd.server_close()


def test_tabs_pages_and_pdf(browser):
    env, page = browser
    assert GETTERS["open_tabs_info"](env, {}) == [{"title": "Flights", "url": page}]
    assert GETTERS["active_url_from_accessTree"](env, {"goto_prefix": "http://"}) == page
    info = GETTERS["page_info"](env, {"url": page})
    assert info["title"] == "Flights" and info["url"] == page and info["content"].startswith("<!DOCTYPE html>")
    assert "Mon, Jan 5" in GETTERS["active_tab_info"](env, {"goto_prefix": "http://"})["content"]
    printed = devtools.open_page(env, page, pdf=True)["pdf"]
    assert base64.b64decode(printed).startswith(b"%PDF")
    pdf = GETTERS["pdf_from_url"](env, {"path": page, "dest": "page.pdf"})
    assert pdf.endswith("page.pdf") and open(pdf, "rb").read().startswith(b"%PDF") and os.path.getsize(pdf) > 500
    assert len(GETTERS["open_tabs_info"](env, {})) == 1  # the tabs the getters opened are closed again


def test_html_parse_categories(browser):
    env, _ = browser
    parse = GETTERS["active_tab_html_parse"]
    assert parse(env, {"goto_prefix": "http://", "category": "class", "class_singleObject": {"when": "time",
                                                                                            "absent": "none"},
                       "class_multiObject_child": {"sep": {"0": "from", "1": "to"}},
                       "class_multiObject_only_child": {"card": {"1": "second", "5": "sixth"}}}) == \
        {"time": "Mon, Jan 5", "none": "", "from": "SEA", "to": "NYC", "second": "Second", "sixth": ""}
    assert parse(env, {"goto_prefix": "http://", "category": "class&url",
                       "class_multiObject_li": {"crumbs": ["Toys", "Kids"]},
                       "url_include_expected": ["page", "cars"]}) == \
        {"toys": True, "kids": True, "is_other_exist": True, "page": True, "cars": False}
    assert parse(env, {"goto_prefix": "http://", "category": "input",
                       "inputObject": {"//input[@id='from']": "from", "//input[@id='to']": "to"}}) == \
        {"from": "Boston", "to": ""}
    assert parse(env, {"goto_prefix": "http://", "category": "xpath", "xpathObject": {"//p/b": "sort"}}) == \
        {"sort": "low to high"}
    assert parse(env, {"goto_prefix": "http://", "category": "label", "labelObject": {"LOW TO": "sort"}}) == \
        {"sort": "low to high"}
    # no open tab at the URL the task's prefix makes: OSWorld's empty answer
    assert parse(env, {"goto_prefix": "https://", "category": "label", "labelObject": {"x": "y"}}) == {}


def test_info_from_website_reads_clicks_and_falls_back(browser):
    env, page = browser
    infos = [{"action": "inner_text", "selector": ".when"},
             {"action": "attribute", "selector": "#from", "attribute": "id"},
             {"action": "click_and_inner_text", "selector": ["#next", "#doi a"]},
             {"action": "click_and_attribute", "selector": ["#next", "#doi a"], "attribute": "href"}]
    assert GETTERS["info_from_website"](env, {"url": page, "infos": infos, "backups": ["b"]}) == \
        ["Mon, Jan 5", "from", "Paper", "https://doi.example.org/10.1/x"]
    missing = [{"action": "inner_text", "selector": "#nowhere"}]
    assert GETTERS["info_from_website"](env, {"url": page, "infos": missing, "backups": ["b"]}) == ["b"]
    assert len(GETTERS["open_tabs_info"](env, {})) == 1


def test_the_appearance_mode_is_read_from_the_running_browser_first(browser):
    """OSWorld's `chrome_appearance_mode_ui` reads chrome://settings/appearance before the Preferences file: the
    file says dark (a change the browser has not committed yet looks like this), the running browser does not."""
    import json

    env, _ = browser
    prefs = env.host_path("~/.config/google-chrome/Default/Preferences")
    prefs.parent.mkdir(parents=True)
    prefs.write_text(json.dumps({"browser": {"theme": {"color_scheme2": 2}}}))
    live = devtools.ask(env, {"op": "appearance"})
    assert live in ("light", "system")
    assert GETTERS["chrome_appearance_mode_ui"](env, {}) == live
    assert len(GETTERS["open_tabs_info"](env, {})) == 1  # the settings tab is closed again


# a stand-in for www.recreation.gov (the point of the test: the getter's walk, on the elements OSWorld's getter uses)
REC_HOME = """<!doctype html><title>Recreation.gov</title><input id="hero-search-input">
<button class="nav-search-button" style="width:80px;height:30px" onclick="location.href = 'search.html?q=' +
 encodeURIComponent(document.getElementById('hero-search-input').value)">Search</button>"""
REC_SEARCH = """<!doctype html><title>Search</title><script>
const q = new URLSearchParams(location.search).get('q');
document.write(q === 'Diamond' ? '<a class="search-result-highlight--success" target="_blank" href="camp.html">Diamond</a>'
 : '<p>nothing for ' + q + '</p>');</script>"""
REC_CAMP = """<!doctype html><title>Diamond Campground</title>
<div class="camp-sortable-column-header">Site</div><div class="camp-sortable-column-header">Loop</div>
<div class="camp-sortable-column-header" id="when">not yet</div>
<button class="next-available" onclick="document.getElementById('when').textContent = '  Dec 12  '">Next</button>"""


def test_goto_recreation_page_walks_the_site_in_the_browser(browser, tmp_path, monkeypatch):
    from conway.tasks import recreation
    env, page = browser
    site = tmp_path / "site" / "recreation.gov"  # its path holds "recreation.gov/search", as the walk waits for
    site.mkdir()
    for name, html in (("home.html", REC_HOME), ("search.html", REC_SEARCH), ("camp.html", REC_CAMP)):
        (site / name).write_text(html)
    base = page.rsplit("/", 1)[0] + "/recreation.gov/"
    monkeypatch.setattr(recreation, "HOMES", (base + "home.html",))
    monkeypatch.setattr(recreation, "WAIT_SCALE", 0.05)
    config = {"type": "gotoRecreationPage_and_get_html_content", "selector": "class",
              "class": "camp-sortable-column-header", "order": "2"}
    got = GETTERS["gotoRecreationPage_and_get_html_content"](env, config)
    assert got == {"expected": {"camp-sortable-column-header": "Dec 12"}}  # read after "next available" is clicked
    assert GETTERS["gotoRecreationPage_and_get_html_content"](env, {**config, "order": "7"}) == \
        {"expected": {"camp-sortable-column-header": "__EVALUATION_FAILED__"}}
    assert [t["title"] for t in devtools.page_targets(env)] == ["Flights"]  # the walk's tabs are closed


def test_goto_recreation_page_without_a_browser_gives_osworlds_failure(tmp_path, monkeypatch):
    from conway.tasks import recreation
    monkeypatch.setattr(devtools, "PORT", free_port())  # nothing listens there
    (tmp_path / "home").mkdir()
    env = TestTaskEnv(home=tmp_path / "home", task_id="t", cache_dir=None)
    got = recreation.gotoRecreationPage_and_get_html_content(env, {"selector": "class", "class": "x"}, retry_s=0)
    assert got["expected"]["error"] == "__EVALUATION_FAILED__"
    assert got["expected"]["error_message"].startswith("Failed after 3 attempts:")
