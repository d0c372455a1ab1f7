"""The `osworld` provider against a stand-in of OSWorld's guest server (tests/helpers/standin_guest.py: a real HTTP
server running real commands on the session's Xvfb): observation, pyautogui actions through /execute reaching
a real application, the client's retries and its strict reading of hostile answers, setup steps, the getters'
TaskEnv."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from helpers.desktop_fixtures import desktop, tk_app, wait_until, xvfb_session  # noqa: F401  (fixtures)
from helpers.standin_guest import StandinGuest

from conway.actions import Click, Hotkey, Key, Scroll, TypeText
from conway.config import ConwayConfig
from conway.desktops import DesktopRequest, StepLimits
from conway.desktops.guest_actions import GuestGuiTool, pyautogui_code
from conway.desktops.guest_client import GuestClient, GuestError
from conway.desktops.guest_setup import GuestSetupError
from conway.desktops.osworld import GuestDesktop
from conway.geometry import ScreenGeometry
from conway.observe.screen import CaptureError
from conway.store.home import Home
from conway.tasks.env import PathEscape

SCREEN = ScreenGeometry(0, 0, 1280, 800, 1280, 800)


def quick(url: str) -> GuestClient:
    """OSWorld's client with its 5 s between tries cut to 10 ms."""
    return GuestClient(url, retry_interval_s=0.01)


@pytest.fixture
def guest(xvfb_session, tmp_path):  # noqa: F811
    stand_in = StandinGuest(xvfb_session.display, tmp_path / "guest-home", size=tuple(xvfb_session.size))
    yield stand_in
    stand_in.close()


def open_guest(guest: StandinGuest, tmp_path: Path, cache: Path | None = None) -> GuestDesktop:
    return GuestDesktop(guest.url, DesktopRequest("t1", cache_dir=cache), client=quick(guest.url),
                        setup_options={"check_interval_s": 0.01, "sleep": lambda s: None})


def test_actions_are_written_as_pyautogui_code_with_osworlds_less_than_fix() -> None:
    assert pyautogui_code(Click(x=10, y=20), SCREEN) == "pyautogui.click(10, 20, button='left')"
    assert pyautogui_code(Key(key="enter"), SCREEN) == "pyautogui.press('enter')"
    assert pyautogui_code(Hotkey(keys=["ctrl", "c"]), SCREEN) == "pyautogui.hotkey('ctrl', 'c')"
    assert pyautogui_code(Scroll(dy=-3, x=5, y=6), SCREEN) == "pyautogui.moveTo(5, 6); pyautogui.scroll(-3)"
    # `<` comes out as `>` through pyautogui on OSWorld's VM: it is pressed as Shift+comma, as DesktopEnv.step does
    assert pyautogui_code(TypeText(text="a<b'c"), SCREEN) == (
        "pyautogui.typewrite('a'); pyautogui.hotkey(\"shift\", \",\"); pyautogui.typewrite(\"b'c\")")


def test_the_guest_is_observed_and_described_as_its_server_says(guest, tmp_path) -> None:
    with open_guest(guest, tmp_path) as desk:
        assert desk.size == guest.size and desk.platform == "Linux"
        assert desk.facts()["line"] == f"OSWorld guest server at {guest.url}, Linux, screen 1280x800"
        home = Home(tmp_path / "home")
        home.ensure_dirs()
        cfg = desk.task_config(ConwayConfig.model_validate({"observe": {"accessibility": True}}))
        assert cfg.tools.enabled == ["gui"]  # OSWorld's agents act through pyautogui only
        obs = desk.observer(cfg, home).observe()
        assert obs.captured_size == (1280, 800) and obs.geometry.logical_size == (1280, 800)
        assert obs.accessibility.startswith("<desktop-frame") and obs.screenshot_path
    paths = [r["path"] for r in guest.recording]
    assert paths[:2] == ["/screen_size", "/execute"] and "/screenshot" in paths and "/accessibility" in paths


@pytest.mark.desktop
def test_a_click_and_typing_reach_a_real_application_through_execute(guest, tk_app, tmp_path) -> None:  # noqa: F811
    button = tk_app.ready["widgets"]["button"]
    entry = tk_app.ready["widgets"]["entry"]
    tool = GuestGuiTool(quick(guest.url), guest.size)
    assert tool.run(Click(x=button["cx"], y=button["cy"]), SCREEN).ok
    wait_until(lambda: any(e["event"] == "click" for e in tk_app.log.events()), what="the guest's click")
    assert tool.run(Click(x=entry["cx"], y=entry["cy"]), SCREEN).ok
    assert tool.run(TypeText(text="x<y"), SCREEN).ok
    wait_until(lambda: any(e.get("value") == "x<y" for e in tk_app.log.events()), what="the typed text")
    sent = [r["request"]["command"] for r in guest.recording if r["path"] == "/execute"]
    assert sent[0][:2] == ["python", "-c"]
    assert sent[0][2].startswith("import pyautogui; import time; pyautogui.FAILSAFE = False; pyautogui.click(")


def test_a_point_off_the_guests_screen_is_refused_before_anything_is_sent(guest) -> None:
    tool = GuestGuiTool(quick(guest.url), guest.size)
    result = tool.run(Click(x=5000, y=10), SCREEN)
    assert not result.ok and "rejected" in result.error
    assert not [r for r in guest.recording if r["path"] == "/execute"]


def test_failed_requests_are_tried_three_times_as_osworld_tries_them(guest) -> None:
    guest.fail["/screenshot"] = 2
    client = quick(guest.url)
    assert client.screenshot()[:4] == b"\x89PNG"
    assert [r["status"] for r in guest.recording if r["path"] == "/screenshot"] == [500, 500, 200]
    guest.fail["/screenshot"] = 3
    from conway.desktops.guest_screen import GuestObserver

    with pytest.raises(CaptureError) as caught:  # the loop's recovery backoff, as for a lost display
        GuestObserver(client).observe()
    assert "\n" not in str(caught.value) and "failed 3 time(s): HTTP 500" in str(caught.value)


def test_hostile_answers_are_refused_in_one_line() -> None:
    """A planted guest (httpx's MockTransport, which is the point here: answers no honest server gives)."""
    def hostile(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/screen_size":
            return httpx.Response(200, json={"width": "1280; rm -rf /", "height": 800})
        if request.url.path == "/accessibility":
            return httpx.Response(302, headers={"Location": "http://elsewhere.invalid/"})
        if request.url.path == "/execute":
            return httpx.Response(200, json={"output": ["not", "text"], "error": "", "returncode": 0})
        return httpx.Response(200, content=b"x" * (2 << 20))

    client = GuestClient("http://guest.invalid:5000", retry_interval_s=0, transport=httpx.MockTransport(hostile))
    for call in (client.screen_size, client.accessibility_tree, lambda: client.execute(["true"]),
                 lambda: client.terminal_output()):
        with pytest.raises(GuestError) as caught:
            call()
        assert "\n" not in str(caught.value)
    with pytest.raises(GuestError):
        GuestClient("http://user:pw@guest:5000/x")


def test_setup_steps_go_through_the_guests_setup_endpoints(guest, tmp_path) -> None:
    from conway.tasks.cache import download_path

    cache = tmp_path / "cache"
    url = "https://files.example.org/report.txt"
    source = download_path(cache, "t1", url, "/home/user/Documents/report.txt")
    source.parent.mkdir(parents=True)
    source.write_text("from the cache\n")
    steps = [{"type": "download", "parameters": {"files": [{"url": url, "path": "/home/user/Documents/report.txt"}]}},
             {"type": "execute", "parameters": {"command": "echo {SCREEN_WIDTH} > ~/w.txt", "shell": True,
                                                "stdout": "w.out"}},
             {"type": "execute", "parameters": {"command": ["cat", "/home/user/Documents/report.txt"],
                                                "until": {"stdout": "from the cache"}}},
             {"type": "activate_window", "parameters": {"window_name": "no such window"}}]
    with open_guest(guest, tmp_path, cache) as desk:
        desk.run_steps(steps, StepLimits())
        assert (guest.home / "Documents" / "report.txt").read_text() == "from the cache\n"
        assert (guest.home / "w.txt").read_text() == "1280\n"
        assert desk.notes == ["activate_window 'no such window': the guest answered HTTP 404 (OSWorld goes on)"]
        with pytest.raises(GuestSetupError) as caught:
            desk.run_steps([{"type": "open", "parameters": {"path": "~/missing.txt"}}], StepLimits())
        assert str(caught.value).startswith("setup step 1 (open): opening '~/missing.txt' failed: HTTP 404")
    assert "/terminal" in [r["path"] for r in guest.recording]  # the reachability check before the steps
    upload = next(r for r in guest.recording if r["path"] == "/setup/upload")
    assert upload["request"]["file_path"] == "/home/user/Documents/report.txt"


def test_the_getters_read_the_guest_through_its_server(guest, tmp_path) -> None:
    (guest.home / "result.txt").write_text("42\n")
    with open_guest(guest, tmp_path) as desk:
        env = desk.task_env()
        copy = env.host_path("/home/user/result.txt")
        assert copy.read_text() == "42\n" and str(copy).startswith(str(env.scratch))
        assert not env.host_path("~/never-made.txt").exists()
        with pytest.raises(PathEscape):
            env.host_path("/home/user/../../etc/shadow")
        done = env.run("echo $HOME", shell=True)
        assert done.returncode == 0 and done.stdout.strip() == str(guest.home)
        assert env.accessibility_tree().startswith("<desktop-frame")
        scratch = env.scratch
    assert not scratch.exists()  # the fetched copies go with the desktop
    files = [r for r in guest.recording if r["path"] == "/file"]
    assert [r["status"] for r in files] == [200, 404, 404, 404]  # a missing file is asked three times, as OSWorld does


def test_png_from_the_guest_is_decoded_with_a_pixel_limit() -> None:
    from PIL import Image

    from conway.desktops.guest_screen import decode_screenshot

    buf = io.BytesIO()
    Image.new("RGB", (9000, 9000)).save(buf, "PNG")
    with pytest.raises(CaptureError):
        decode_screenshot(buf.getvalue())
    with pytest.raises(CaptureError):
        decode_screenshot(b"\x89PNG\r\n\x1a\nnot really")
    _ = json  # the stand-in's recording is JSON-able
