"""The live page in a real browser (Playwright on the system Chromium): two running sessions, one tile each; the
screen of the one on Xvfb changes; its pause button pauses it and not the other; takeover clicks in the browser
reach the X display and are journaled as human steps; hand back resumes. The agents are the scripted mock policy
(named as such: the model is not the point here)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from helpers.desktop_fixtures import APPS, need, start_app, wait_until
from helpers.live_sessions import human_actions, start_session

from conway.machine.xvfb import start_xvfb
from conway.store.home import Home
from conway.view.command import build_site
from conway.view.server import ViewServer

CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
ARTIFACTS = Path(os.environ.get("CONWAY_TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts")


@pytest.fixture
def page():
    path = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
    need("chromium" if path is None else path, "chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            yield ctx.new_page()
        finally:
            browser.close()


def test_live_page_watches_controls_and_takes_over(page, tmp_path: Path) -> None:
    need("Xvfb", "xvfb")
    need("xdotool", "xdotool")
    server = start_xvfb(1024, 768)
    env = {**os.environ, "DISPLAY": server.display}
    app = start_app(APPS / "tk_probe_app.py", tmp_path / "tk.jsonl", env=env)
    pool = tmp_path / "pool"
    a = b = view = None
    try:
        entry = app.ready["widgets"]["entry"]
        button = app.ready["widgets"]["button"]
        a = start_session(pool / "a", server.display, [
            {"action": {"type": "click", "x": entry["cx"], "y": entry["cy"]}},
            {"action": {"type": "type", "text": "ab"}}, {"action": {"type": "wait", "seconds": 0.3}}])
        b = start_session(pool / "b", None, [{"action": {"type": "wait", "seconds": 0.3}}])
        site = build_site(Home(pool / "a"))
        view = ViewServer(site, live=[pool])
        view.start()
        page.goto(view.owner_url("live"))  # the address `conway view --serve` prints to its owner
        page.wait_for_selector("section.tile >> nth=1")
        sid_a = json.loads((pool / "a" / "live.json").read_text())["session"]
        tile = page.locator(f'section.tile[data-session="{sid_a}"]')
        img = tile.locator("img.screen")
        wait_until(lambda: int(img.get_attribute("data-frames") or 0) >= 2, timeout=20, what="frames")
        first = img.screenshot()
        wait_until(lambda: img.screenshot() != first, timeout=20, what="the live screen to change")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "live-view.png"))

        sid_b = json.loads((pool / "b" / "live.json").read_text())["session"]
        screenless = page.locator(f'section.tile[data-session="{sid_b}"]')  # the mock's synthetic screen
        wait_until(lambda: screenless.locator(".noscreen").is_visible(), timeout=10, what="b's tile to say no screen")
        # it showed a broken image and offered take over
        assert not screenless.locator("img.screen").is_visible()
        assert not screenless.locator("button[data-request=takeover]").is_visible()
        assert screenless.locator("button[data-request=pause]").is_visible()
        assert tile.locator("button[data-request=takeover]").is_visible() and not tile.locator(".noscreen").is_visible()

        tile.locator("button[data-request=pause]").click()
        wait_until(lambda: a.status() == "paused", timeout=15, what="session a paused")
        time.sleep(1.0)
        assert b.status() == "running" and not (pool / "b" / "control.json").exists()  # only that session
        tile.locator("button[data-request=resume]").click()
        wait_until(lambda: a.status() == "running", timeout=15, what="session a resumed")

        tile.locator("button[data-request=takeover]").click()
        wait_until(lambda: a.status() == "taken over", timeout=15, what="session a taken over")
        wait_until(lambda: "taken" in (tile.get_attribute("class") or ""), timeout=10, what="the tile to say so")
        time.sleep(0.5)
        mark = len(app.log.events())
        natural = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
        box = img.bounding_box()
        page.mouse.click(box["x"] + (button["cx"] + 0.5) * box["width"] / natural[0],
                         box["y"] + (button["cy"] + 0.5) * box["height"] / natural[1])
        app.log.wait_for(mark, lambda e: e["event"] == "click", timeout=10)  # the click reached the X display
        wait_until(lambda: human_actions(a), timeout=10, what="the click journaled as a human step")
        got = human_actions(a)[0]
        assert got["type"] == "click" and abs(got["x"] - button["cx"]) <= 2 and abs(got["y"] - button["cy"]) <= 2, got
        assert b.status() == "running" and not human_actions(b)

        tile.locator("button[data-request=handback]").click()
        wait_until(lambda: a.status() == "running", timeout=15, what="hand back")
        n = len(a.events("decision"))
        wait_until(lambda: len(a.events("decision")) > n, timeout=15, what="the agent deciding again")
    finally:
        for s in (a, b):
            if s is not None:
                s.stop()
        if view is not None:
            view.close()
        app.stop()
        server.stop()


def test_live_api_refuses_without_token_and_input_when_not_taken_over(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    b = start_session(tmp_path / "b", None, [{"action": {"type": "wait", "seconds": 0.3}}])
    view = ViewServer(build_site(Home(tmp_path / "b")), live=[tmp_path])
    url = view.start()
    try:
        for path in ("api/live", "live", "live?" + urlencode({"token": "guess"}),
                     "api/live?" + urlencode({"token": view.token})):
            with pytest.raises(urllib.error.HTTPError) as no_token:
                urllib.request.urlopen(url + path)
            body = no_token.value.read().decode()
            assert no_token.value.code == 403 and view.token not in body and str(tmp_path) not in body, path

        def call(path: str, body: dict | None = None) -> tuple[int, dict]:
            req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None,
                                         headers={"X-Conway-Token": view.token, "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())
        status, data = call("api/live")
        assert status == 200 and len(data["sessions"]) == 1
        sid = data["sessions"][0]["id"]
        status, data = call("api/input", {"id": sid, "type": "click", "x": 1, "y": 1})
        assert status == 409 and "not taken over" in data["error"]
        status, data = call("api/control", {"id": sid, "request": "handback"})
        assert status == 409 and "nothing to hand back" in data["error"]
        status, data = call("api/control", {"id": "nope", "request": "pause"})
        assert status == 404
    finally:
        view.close()
        b.stop()
