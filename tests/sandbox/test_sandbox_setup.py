"""OSWorld's setup steps, each run once on a real disposable desktop, and every way a step is refused."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Callable

import pytest
from helpers.desktop_fixtures import require, wait_until

from conway.sandbox import windows
from conway.sandbox.desktop import DisposableDesktop
from conway.sandbox.environment import BubblewrapEnvironment
from conway.sandbox.setup import STEP_TYPES, SetupError, SetupLimits, run_setup
from conway.tasks.cache import download_path

pytestmark = pytest.mark.desktop
FAST = SetupLimits(window_wait_s=30, command_timeout_s=30)  # bounds a failure only: generous under load


@pytest.fixture
def desk(open_desk: Callable[..., DisposableDesktop]) -> DisposableDesktop:
    return open_desk("task-1", ("xmessage", "x11-utils"))


def _titles(d: DisposableDesktop) -> list[str]:
    import subprocess
    out = []
    for w in windows.visible_windows(d.display):
        done = subprocess.run(["xdotool", "getwindowname", str(w)], env={**os.environ, "DISPLAY": d.display},
                              capture_output=True, text=True, timeout=10)
        out.append(done.stdout.strip())
    return out


def test_the_step_types_are_osworlds() -> None:
    assert STEP_TYPES == {"launch", "open", "execute", "command", "sleep", "activate_window", "download",
                          "chrome_open_tabs"}


def test_download_copies_from_the_local_cache_and_never_the_network(desk: DisposableDesktop) -> None:
    url = "https://example.invalid/files/report.txt"
    assert desk.cache_dir is not None
    cached = download_path(desk.cache_dir, desk.task_id, url, "/home/user/Desktop/report.txt")
    step = [{"type": "download", "parameters": {"files": [{"url": url, "path": "/home/user/Desktop/report.txt"}]}}]
    with pytest.raises(SetupError) as err:
        run_setup(step, desk)
    assert str(err.value) == f"setup step 1 (download): {url} is not in the local cache (expected {cached})"
    cached.parent.mkdir(parents=True)
    cached.write_text("from the cache\n")
    run_setup(step, desk)
    assert (desk.home / "Desktop" / "report.txt").read_text() == "from the cache\n"
    escape = [{"type": "download", "parameters": {"files": [{"url": url, "path": "/etc/report.txt"}]}}]
    with pytest.raises(SetupError, match=r"^setup step 1 \(download\): /etc/report.txt is outside"):
        run_setup(escape, desk)


def test_execute_and_command_run_in_the_sandbox_and_keep_their_output(desk: DisposableDesktop) -> None:
    run_setup([{"type": "execute", "parameters": {"command": "echo {SCREEN_WIDTH}x{SCREEN_HEIGHT} > ~/size.txt",
                                                  "shell": True}},
               {"type": "command", "parameters": {"command": ["sh", "-c", "echo out; echo err >&2"],
                                                  "stdout": "cmd.out", "stderr": "cmd.err"}},
               {"type": "execute", "parameters": {"command": ["sh", "-c", "n=$(cat ~/n 2>/dev/null || echo 0); "
                                                              "echo $((n+1)) > ~/n; cat ~/n"],
                                                  "until": {"stdout": "3"}}}], desk, FAST)
    assert (desk.home / "size.txt").read_text() == "1280x800\n"
    assert desk.cache_dir is not None
    assert (desk.cache_dir / "task-1" / "cmd.out").read_text() == "out\n"
    assert (desk.cache_dir / "task-1" / "cmd.err").read_text() == "err\n"
    assert (desk.home / "n").read_text() == "3\n"  # retried until its output said 3


def test_sleep_waits_and_is_bounded(desk: DisposableDesktop) -> None:
    start = time.monotonic()
    run_setup([{"type": "sleep", "parameters": {"seconds": 0.3}}], desk)
    assert 0.3 <= time.monotonic() - start < 2
    with pytest.raises(SetupError, match=r"^setup step 1 \(sleep\): a sleep of 3600 s is longer than the 120 s"):
        run_setup([{"type": "sleep", "parameters": {"seconds": 3600}}], desk)
    with pytest.raises(SetupError, match=r"^setup step 1 \(sleep\): parameter 'seconds' must be a number"):
        run_setup([{"type": "sleep", "parameters": {"seconds": "soon"}}], desk)


def test_launch_then_activate_window(desk: DisposableDesktop) -> None:
    run_setup([{"type": "launch", "parameters": {"command": "xmessage -title conway-hello hello"}},
               {"type": "activate_window", "parameters": {"window_name": "conway-hello", "strict": True}}],
              desk, FAST)
    assert "conway-hello" in _titles(desk)
    with pytest.raises(SetupError, match=r"^setup step 1 \(activate_window\): no window whose title contains "
                                         r"'no-such-window' \(waited 0.5 s\)$"):
        run_setup([{"type": "activate_window", "parameters": {"window_name": "no-such-window"}}], desk,
                  SetupLimits(window_wait_s=0.5))


def test_open_uses_the_homes_default_application(desk: DisposableDesktop) -> None:
    # xdg-open in the sandbox picks the handler the disposable home declares for text files
    apps = desk.home / ".local" / "share" / "applications"
    apps.mkdir(parents=True)
    (apps / "conway-viewer.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Viewer\nExec=xmessage -title conway-viewer -file %f\n"
        "MimeType=text/plain;\n")
    (desk.home / ".config").mkdir(exist_ok=True)  # the desktop seeds LibreOffice's settings there
    (desk.home / ".config" / "mimeapps.list").write_text("[Default Applications]\ntext/plain=conway-viewer.desktop\n")
    (desk.home / "notes.txt").write_text("opened by the open step\n")
    run_setup([{"type": "open", "parameters": {"path": "/home/user/notes.txt"}}], desk, FAST)
    assert "conway-viewer" in _titles(desk)
    with pytest.raises(SetupError, match=r"^setup step 1 \(open\): cannot open ~/missing.txt: no such file"):
        run_setup([{"type": "open", "parameters": {"path": "~/missing.txt"}}], desk, FAST)


def test_chrome_open_tabs_opens_chromium(desk: DisposableDesktop) -> None:
    require(shutil.which("chromium") is not None, "chromium not installed (apt-get install chromium)")
    (desk.home / "page.html").write_text("<title>conway-tab</title><h1>hi</h1>")
    run_setup([{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["file:///home/user/page.html"]}}],
              desk, SetupLimits(window_wait_s=60))
    wait_until(lambda: any("conway-tab" in t for t in _titles(desk)), timeout=30, what="the tab's title")


@pytest.mark.parametrize("steps,message", [
    ([{"type": "upload_file", "parameters": {}}], "setup step 1 (upload_file): unknown setup step type 'upload_file' "
     "(known: activate_window, chrome_open_tabs, command, download, execute, launch, open, sleep)"),
    ({"type": "sleep"}, "setup steps must be a list, not dict"),
    (["sleep"], "setup step 1: each step is an object with a \"type\" (got 'sleep')"),
    ([{"type": "sleep", "parameters": [1]}], "setup step 1 (sleep): \"parameters\" must be an object"),
    ([{"type": "launch", "parameters": {}}], "setup step 1 (launch): parameter 'command' is missing or not a str or list"),
    ([{"type": "launch", "parameters": {"command": "no-such-program --flag"}}],
     "setup step 1 (launch): no-such-program is not installed (not on the desktop's PATH)"),
    ([{"type": "download", "parameters": {"files": ["x"]}}],
     "setup step 1 (download): each file is an object with \"url\" and \"path\" (got 'x')"),
])
def test_bad_steps_are_one_line_each(desk: DisposableDesktop, steps: object, message: str) -> None:
    with pytest.raises(SetupError) as err:
        run_setup(steps, desk)
    assert str(err.value) == message


def test_download_without_a_cache_names_the_url(tmp_path: Path) -> None:
    require(BubblewrapEnvironment.for_workdir(Path("/")).problem() is None, "bubblewrap unusable")
    with DisposableDesktop("task-2") as d:
        with pytest.raises(SetupError, match=r"^setup step 1 \(download\): https://x.invalid/a needs a local cache"):
            run_setup([{"type": "download", "parameters": {"files": [{"url": "https://x.invalid/a",
                                                                      "path": "a"}]}}], d)
