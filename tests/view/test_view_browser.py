"""`conway view` in a real browser: the system Chromium, driven headless by Playwright (no browser download).

Skipped only when Chromium is not installed and CONWAY_REQUIRE_DESKTOP is
unset (scripts/test.sh installs it and sets the variable, so there a missing
browser fails). A screenshot of the rendered session page is written to
test-artifacts/ (or $CONWAY_TEST_ARTIFACTS).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from conway.cli.main import main
from scripts.demos.view_session import CLICK_STEP, INJECTED, SIZE, WINDOW_TITLE

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
"""Root in a container: no sandbox; a small /dev/shm; no GPU."""
ARTIFACTS = Path(os.environ.get("CONWAY_TEST_ARTIFACTS") or REPO / "test-artifacts")


def chromium_path() -> str | None:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def expect(locator):
    from playwright.sync_api import expect as pw_expect
    return pw_expect(locator)


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    if path is None:
        msg = "Chromium not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CONWAY_REQUIRE_DESKTOP"):
            pytest.fail(msg)
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright  # a pinned dev dependency: missing means a broken setup

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))  # type: ignore[attr-defined]
    yield pg
    ctx.close()


@pytest.fixture
def site(session, tmp_path):
    """(session id, a function: page number -> file URL) of a static site with 4 steps per page."""
    sid = session
    out = tmp_path / "site"
    assert main(["view", "--last", "--page-size", "4", "--output", str(out)]) == 0
    return sid, lambda n=1: (out / "s" / sid / f"page-{n:04d}.html").as_uri()


def current_step(pg) -> int:
    pg.wait_for_selector("article.card.current")
    return int(pg.get_attribute("article.card.current", "data-step"))


def visible_steps(pg) -> list[int]:
    return pg.eval_on_selector_all("article.card:not([hidden])", "els => els.map(e => +e.dataset.step)")


def marker_centre(pg, selector: str) -> tuple[float, float]:
    b = pg.locator(selector).bounding_box()
    return b["x"] + b["width"] / 2, b["y"] + b["height"] / 2


def expected_pixel(pg, frame_selector: str, x: float, y: float) -> tuple[float, float]:
    b = pg.locator(frame_selector + " img").bounding_box()
    return b["x"] + x * b["width"] / SIZE[0], b["y"] + y * b["height"] / SIZE[1]


def test_cards_and_the_click_drawn_at_its_pixel(site, page):
    sid, url = site
    page.goto(url(1))
    assert page.locator("article.card").count() == 4
    card = f"#step-{CLICK_STEP}"
    assert page.get_attribute(card, "data-outcome") == "ok"
    for zoom in ("thumbnail", "full size"):
        got = marker_centre(page, f"{card} g.act-click circle.dot")
        want = expected_pixel(page, f"{card} .frame", 320, 200)
        assert abs(got[0] - want[0]) < 1.0 and abs(got[1] - want[1]) < 1.0, (zoom, got, want)
        if zoom == "thumbnail":
            page.click(f"{card} .frame")  # the full-size image, drawn on the same way
            expect(page.locator(f"{card} img")).to_have_attribute("src", re.compile(r"img/step-1\.png$"))
            expect(page.locator(f"{card} img")).to_have_js_property("complete", True)
    # the image really is the screenshot: it loaded at its own size
    assert page.eval_on_selector(f"{card} img", "i => [i.naturalWidth, i.naturalHeight]") == list(SIZE)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.click(f"{card} .frame")
    page.screenshot(path=str(ARTIFACTS / "view-session.png"), full_page=False)
    assert (ARTIFACTS / "view-session.png").stat().st_size > 10_000
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_index_leads_to_the_session(site, page, tmp_path):
    sid, url = site
    page.goto((tmp_path / "site" / "index.html").as_uri())
    page.click(f"text={sid}")
    page.wait_for_url("**/page-0001.html")
    assert page.locator("article.card").count() == 4 and page.locator("section.summary details[open]").count() == 1


def test_keyboard_steps_through_cards_and_pages(site, page):
    sid, url = site
    page.goto(url(1))
    page.keyboard.press("ArrowRight")
    assert current_step(page) == 1
    page.keyboard.press("ArrowRight")
    assert current_step(page) == 2
    page.keyboard.press("ArrowLeft")
    assert current_step(page) == 1
    page.keyboard.press("e")  # the next error is on page 2: the page changes, the card is selected
    page.wait_for_url("**/page-0002.html#s=5")
    assert current_step(page) == 5
    page.keyboard.press("e")
    assert current_step(page) == 6
    page.keyboard.press("ArrowLeft")
    assert current_step(page) == 5
    page.keyboard.press("ArrowLeft")
    page.wait_for_url("**/page-0001.html#s=4")
    assert current_step(page) == 4
    assert page.errors == []  # type: ignore[attr-defined]


def test_filters_by_kind_outcome_and_thought_text(site, page):
    sid, url = site
    page.goto(url(1))
    page.select_option("#f-outcome", "error")
    assert visible_steps(page) == []  # none of steps 1-4 failed ...
    assert page.inner_text("#f-count") == "2 of 10 match (0 on this page)"
    page.keyboard.press("ArrowRight")  # ... and the arrow goes to the next match, on page 2, keeping the filter
    page.wait_for_url("**/page-0002.html#s=5&outcome=error")
    assert visible_steps(page) == [5, 6] and page.input_value("#f-outcome") == "error"
    page.select_option("#f-outcome", "")
    page.select_option("#f-kind", "hotkey")
    assert visible_steps(page) == [7]
    page.click("#step-7 a.step")  # selecting a card keeps the filter
    assert current_step(page) == 7 and page.input_value("#f-kind") == "hotkey" and "kind=hotkey" in page.url
    page.select_option("#f-kind", "")
    page.fill("#f-text", "SLIDER")
    assert page.inner_text("#f-count").startswith("1 of 10 match")
    page.goto(url(1) + "#q=slider")
    assert visible_steps(page) == [3] and page.input_value("#f-text") == "slider"


def test_a_script_in_the_thought_is_shown_as_text(site, page):
    sid, url = site
    page.goto(url(1))
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.inner_text("#step-2 details.thought pre") == f"Type the file name. {INJECTED}"
    assert WINDOW_TITLE in page.inner_text("#step-2 .facts-col")  # a window title from the screen, as text
    assert page.locator("img[src='x']").count() == 0 and page.locator("main script").count() == 0
    assert page.errors == []  # type: ignore[attr-defined]


def test_timeline_click_jumps_to_the_step(site, page):
    sid, url = site
    page.goto(url(1))
    box = page.locator("#timeline").bounding_box()
    page.mouse.click(box["x"] + box["width"] * (7.5 / 10), box["y"] + box["height"] / 2)  # the 8th of 10 marks
    page.wait_for_url("**/page-0002.html#s=8")
    assert current_step(page) == 8


def test_a_step_whose_screenshot_was_rotated_away_shows_a_placeholder(session, conway_home, tmp_path, page):
    sid = session
    (conway_home / "screenshots" / "step-001.png").unlink()
    out = tmp_path / "site"
    assert main(["view", "--last", "--output", str(out)]) == 0
    page.goto((out / "s" / sid / "page-0001.html").as_uri())
    assert "screenshot rotated away" in page.inner_text("#step-1 .frame")
    assert page.locator("#step-1 img").count() == 0
    # still drawn where it was: the placeholder keeps the screen's proportions
    b = page.locator("#step-1 .frame").bounding_box()
    got = marker_centre(page, "#step-1 g.act-click circle.dot")
    assert abs(got[0] - (b["x"] + 1 + 320 * (b["width"] - 2) / SIZE[0])) < 1.5


def test_vision_check_report_target_and_click(conway_home, tmp_path, page):
    from test_view import vision_report

    report = vision_report(tmp_path, "vc", [(0, 0), (250, 250)])
    cases = json.loads(report.read_text())["cases"]
    out = tmp_path / "rsite"
    assert main(["view", str(report), "--output", str(out)]) == 0
    page.goto((out / "index.html").as_uri())
    expect(page.locator("#step-1 img")).to_have_js_property("complete", True)
    px, py = cases[1]["predicted"]
    got = marker_centre(page, "#step-1 g.click circle.dot")
    want = expected_pixel(page, "#step-1 .frame", px, py)
    assert abs(got[0] - want[0]) < 1.0 and abs(got[1] - want[1]) < 1.0
    x0, y0, x1, y1 = cases[1]["target"]["box"]
    # the box's geometry (stroke left out) mapped to the page: it covers pixels x0..x1 inclusive
    left, top, right, bottom = page.eval_on_selector("#step-1 rect.target", """r => {
        const b = r.getBBox(), m = r.getScreenCTM();
        return [m.a * b.x + m.e, m.d * b.y + m.f, m.a * (b.x + b.width) + m.e, m.d * (b.y + b.height) + m.f]; }""")
    tl = expected_pixel(page, "#step-1 .frame", x0, y0)
    br = expected_pixel(page, "#step-1 .frame", x1 + 1, y1 + 1)
    assert abs(left - tl[0]) < 1.0 and abs(top - tl[1]) < 1.0
    assert abs(right - br[0]) < 1.0 and abs(bottom - br[1]) < 1.0
    page.select_option("#f-outcome", "miss")
    assert visible_steps(page) == [1]


def test_review_round_trip_through_serve_then_export(session, conway_home, tmp_path, page):
    sid = session
    env = {**os.environ, "CONWAY_HOME": str(conway_home), "PYTHONPATH": str(REPO)}
    errors = tmp_path / "view-stderr.txt"  # a file, not a pipe nobody reads: a full pipe would block the server
    with open(errors, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "view", "--serve", "--last"], cwd=REPO,
                                env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("serving http://127.0.0.1:"), first + errors.read_text()
        owner = first.split()[1]  # the address printed to the owner: the only place the token is
        base = owner.split("?")[0]
        page.goto(f"{base}s/{sid}/page-0001.html")  # without it, nothing: not the session, not the token
        assert "This viewer needs its token" in page.content() and "review" not in page.content()
        page.goto(owner)  # its cookie lets the browser follow the pages' own links from here
        page.goto(f"{base}s/{sid}/page-0001.html")
        card = "#step-8"
        page.click(f"{card} button[data-verdict='wrong']")
        frame = page.locator(f"{card} .frame img").bounding_box()
        page.mouse.click(frame["x"] + 500.4 * frame["width"] / SIZE[0], frame["y"] + 100.4 * frame["height"] / SIZE[1])
        x, y = int(page.input_value(f"{card} .c-x")), int(page.input_value(f"{card} .c-y"))
        assert abs(x - 500) <= 1 and abs(y - 100) <= 1  # screen pixels (the thumbnail is 3/4 of the size)
        page.fill(f"{card} .c-note", "the menu is on the file, higher up")
        page.click(f"{card} .c-save")
        expect(page.locator(f"{card} .review .status")).to_have_text(re.compile("^saved: wrong with a corrected"))
        # a typed text corrected through the text field; a bad action refused with the server's reason
        page.click("#step-2 button[data-verdict='wrong']")
        assert page.input_value("#step-2 .c-type") == "type"
        page.fill("#step-2 .c-text", "notes.md")
        page.click("#step-2 .c-save")
        expect(page.locator("#step-2 .review .status")).to_have_text("saved: wrong with a corrected action")
        page.click("#step-7 button[data-verdict='wrong']")
        page.fill("#step-7 .c-json", "{nope")
        page.click("#step-7 .c-save")
        expect(page.locator("#step-7 .review .status")).to_have_text(re.compile("^the corrected action is not JSON"))
        page.fill("#step-7 .c-json", '{"type": "click", "x": -3, "y": 1}')
        page.click("#step-7 .c-save")
        expect(page.locator("#step-7 .review .status")).to_have_text(re.compile("^the corrected action is not valid"))
        page.click("#step-1 button[data-verdict='correct']")
        expect(page.locator("#step-1 .review .status")).to_have_text("saved: correct")
        page.reload()  # the server reads labels afresh: the page shows them
        assert "wrong (review)" in page.inner_text(f"{card} header")
        assert page.locator(f"{card} g.mark.corrected").get_attribute("data-x") == str(x)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, errors.read_text()
    assert errors.read_text() == ""  # a browser that drops a connection is not an error worth a traceback
    out = tmp_path / "traj.jsonl"
    assert main(["export", "--output", str(out)]) == 0
    recs = {r["step"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert recs[8]["labels"] == {"success": "unknown", "source": "review", "hindsight": False, "verdict": "wrong",
                                 "corrected_action": {"type": "right_click", "x": float(x), "y": float(y)},
                                 "note": "the menu is on the file, higher up"}
    assert recs[1]["labels"]["verdict"] == "correct" and recs[1]["labels"]["source"] == "review"
    assert recs[2]["labels"]["corrected_action"] == {"type": "type", "text": "notes.md"}
    assert recs[7]["labels"] == {"success": "unknown"}  # the refused label wrote nothing
