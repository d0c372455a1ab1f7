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
from conway.tasks.getters import GETTERS

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
                          "chrome_open_tabs", "close_window", "chrome_close_tabs", "update_browse_history"}


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
    # kept as OSWorld's controller keeps them, in the task's cache folder: here that folder is in the task's home
    assert (desk.home / ".task-cache" / "cmd.out").read_text() == "out\n"
    assert (desk.home / ".task-cache" / "cmd.err").read_text() == "err\n"
    kept = GETTERS["cache_file"](desk, {"path": "cmd.out"}, {"cmd.out"})  # a copy read with no link followed
    assert Path(kept).read_text() == "out\n" and Path(kept) != desk.home / ".task-cache" / "cmd.out"
    assert desk.cache_dir is not None and not (desk.cache_dir / "task-1").exists()  # the user's cache untouched
    assert (desk.home / "n").read_text() == "3\n"  # retried until its output said 3


def test_a_step_output_named_outside_the_tasks_folder_is_refused(desk: DisposableDesktop, tmp_path: Path) -> None:
    """`stdout` / `stderr` come from the task file: an absolute path or `..` must not write a host file (OSWorld's
    controller writes `os.path.join(cache, name)`, which is the name itself when it is absolute)."""
    victim = tmp_path / "victim.txt"
    assert desk.cache_dir is not None
    for name in (str(victim), "../../victim.txt", "../" * 12 + str(victim).lstrip("/"),
                 f"../{desk.cache_dir.name}/task-1/planted"):
        with pytest.raises(SetupError, match=r"^setup step 1 \(execute\): .* is outside the task's cache folder"):
            run_setup([{"type": "execute", "parameters": {"command": ["echo", "planted"], "stdout": name}}], desk,
                      FAST)
    assert not victim.exists() and not (desk.cache_dir / "task-1").exists()


def test_a_step_output_never_follows_a_link_the_desktop_swaps_in(desk: DisposableDesktop, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A process on the desktop may replace the output's folder by a symlink to a host folder at any moment: one
    left there is refused by the look through the sandbox's view, and one swapped in just after that look (a
    real desktop process would race for it; here the swap is made at that instant) is not followed either."""
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = desk.home / ".task-cache"
    folder.symlink_to(outside)
    step = [{"type": "command", "parameters": {"command": ["echo", "planted"], "stdout": "x.out"}}]
    with pytest.raises(SetupError, match=r"is outside what this sandbox shows"):
        run_setup(step, desk, FAST)
    folder.unlink()
    import conway.sandbox.desktop as desktop_module
    looked = desktop_module.resolve

    def swap_after_looking(binds, guest, **kw):  # the look through the view, then the desktop's swap
        where = looked(binds, guest, **kw)
        if guest.endswith("x.out"):
            folder.mkdir(exist_ok=True)
            folder.rmdir()
            folder.symlink_to(outside)
        return where
    monkeypatch.setattr(desktop_module, "resolve", swap_after_looking)
    with pytest.raises(SetupError, match=r"x.out: a link on the way \(links in the task's home are not followed"):
        run_setup(step, desk, FAST)
    assert list(outside.iterdir()) == []


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
    # as a task run calls it: OSWorld's setup goes on when wmctrl finds no window, and the note says so
    notes: list[str] = []
    run_setup([{"type": "activate_window", "parameters": {"window_name": "no-such-window"}},
               {"type": "execute", "parameters": {"command": "echo went-on > ~/after.txt", "shell": True}}], desk,
              SetupLimits(window_wait_s=0.5, notes=notes))
    assert notes == ["activate_window: no window whose title contains 'no-such-window' (waited 0.5 s); the setup "
                     "went on, as OSWorld's does"]
    assert (desk.home / "after.txt").read_text() == "went-on\n"


def _focused(d: DisposableDesktop) -> str:
    import subprocess
    done = subprocess.run(["xdotool", "getwindowfocus", "getwindowname"], env={**os.environ, "DISPLAY": d.display},
                          capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


def test_activate_window_finds_what_osworlds_vm_calls_google_chrome(desk: DisposableDesktop) -> None:
    """OSWorld's step is `wmctrl -a NAME`: any case, part of the title. Its VM's Chrome is Chromium here, so
    "Google Chrome" (27 chrome tasks' setup) finds the window titled "… - Chromium"."""
    run_setup([{"type": "launch", "parameters": {"command": ["xmessage", "-title", "New Tab - Chromium", "a"]}},
               {"type": "launch", "parameters": {"command": ["xmessage", "-title", "conway-other", "b"]}},
               {"type": "activate_window", "parameters": {"window_name": "conway-other"}}], desk, FAST)
    wait_until(lambda: _focused(desk) == "conway-other", timeout=20, interval=0.2, what="conway-other focused")
    run_setup([{"type": "activate_window", "parameters": {"window_name": "Google Chrome"}}], desk, FAST)
    wait_until(lambda: _focused(desk) == "New Tab - Chromium", timeout=20, interval=0.2,
               what="the Chromium window focused")
    run_setup([{"type": "activate_window", "parameters": {"window_name": "CONWAY-OTHER"}}], desk, FAST)
    wait_until(lambda: _focused(desk) == "conway-other", timeout=20, interval=0.2, what="found in another case")


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


def test_close_window_closes_it_as_its_close_button_would(desk: DisposableDesktop) -> None:
    run_setup([{"type": "launch", "parameters": {"command": "xmessage -title conway-bye bye"}},
               {"type": "close_window", "parameters": {"window_name": "conway-bye", "strict": True}}], desk, FAST)
    wait_until(lambda: "conway-bye" not in _titles(desk), timeout=15, what="the window to close")
    with pytest.raises(SetupError, match=r"^setup step 1 \(close_window\): no window 'conway-bye' to close$"):
        run_setup([{"type": "close_window", "parameters": {"window_name": "conway-bye"}}], desk, FAST)


def test_chrome_close_tabs_closes_the_tab_at_the_url(desk: DisposableDesktop) -> None:
    require(shutil.which("chromium") is not None, "chromium not installed (apt-get install chromium)")
    from conway.tasks import devtools
    for name in ("a", "b"):
        (desk.home / f"{name}.html").write_text(f"<title>conway-{name}</title>")
    run_setup([{"type": "launch", "parameters": {"command": [
        "chromium", "--no-sandbox", "--no-first-run", "--disable-gpu", "--password-store=basic",
        "--remote-debugging-port=9222", "file:///home/user/a.html", "file:///home/user/b.html"]}}],
        desk, SetupLimits(window_wait_s=60))
    def urls() -> list[str]:
        try:
            return sorted(t["url"] for t in devtools.page_targets(desk))
        except devtools.DevToolsError:  # not listening yet
            return []
    wait_until(lambda: len(urls()) == 2, timeout=60, what="both tabs")
    run_setup([{"type": "chrome_close_tabs", "parameters": {"urls_to_close": ["file:///home/user/a.html"]}}],
              desk, FAST)
    wait_until(lambda: urls() == ["file:///home/user/b.html"], timeout=30, what="the tab at a.html to close")


def test_update_browse_history_adds_visits_to_the_profile(desk: DisposableDesktop) -> None:
    import sqlite3

    from conway.tasks.cache import HISTORY_FILE, cloud_path
    step = [{"type": "update_browse_history", "parameters": {"history": [
        {"url": "https://example.org/a", "title": "A", "visit_time_from_now_in_seconds": 3600}]}}]
    with pytest.raises(SetupError, match=r"the empty history database .* is not in the local cache"):
        run_setup(step, desk)
    assert desk.cache_dir is not None
    empty = cloud_path(desk.cache_dir, desk.task_id, HISTORY_FILE)
    empty.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(empty) as db:  # the two tables of Chromium's History the step writes, as OSWorld's file has
        db.execute("CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER, "
                   "typed_count INTEGER, last_visit_time INTEGER, hidden INTEGER)")
        db.execute("CREATE TABLE visits (id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER, from_visit "
                   "INTEGER, transition INTEGER, segment_id INTEGER, visit_duration INTEGER)")
    run_setup(step, desk)
    with sqlite3.connect(desk.home / ".config" / "google-chrome" / "Default" / "History") as db:
        rows = db.execute("SELECT u.url, u.title, v.transition, v.visit_time FROM urls u JOIN visits v ON "
                          "v.url = u.id").fetchall()
    assert [(u, t, tr) for u, t, tr, _ in rows] == [("https://example.org/a", "A", 805306368)]
    hours = (time.time() + 11644473600 - rows[0][3] / 1e6) / 3600  # Chromium counts µs since 1601
    assert 0.9 < hours < 1.1


@pytest.mark.parametrize("steps,message", [
    ([{"type": "upload_file", "parameters": {}}], "setup step 1 (upload_file): unknown setup step type 'upload_file' "
     "(known: activate_window, chrome_close_tabs, chrome_open_tabs, close_window, command, download, execute, launch, "
     "open, sleep, update_browse_history)"),
    ({"type": "sleep"}, "setup steps must be a list, not dict"),
    (["sleep"], "setup step 1: each step is an object with a \"type\" (got 'sleep')"),
    ([{"type": "sleep", "parameters": [1]}], "setup step 1 (sleep): \"parameters\" must be an object"),
    ([{"type": "launch", "parameters": {}}], "setup step 1 (launch): parameter 'command' is missing or not a str or list"),
    ([{"type": "launch", "parameters": {"command": "no-such-program --flag"}}],
     "setup step 1 (launch): no-such-program is not installed (not on the desktop's PATH)"),
    ([{"type": "download", "parameters": {"files": ["x"]}}],
     "setup step 1 (download): each file is an object with \"url\" and \"path\" (got 'x')"),
    ([{"type": "command", "parameters": {"command": ["true"], "stdout": "../../out.txt"}}],  # never beside the cache
     "setup step 1 (command): ../../out.txt is outside the task's cache folder (a name there is relative to it)"),
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


def test_the_stand_in_opens_the_desktops_own_terminal_on_ctrl_alt_t() -> None:
    """The sandbox's PyAutoGUI is not importable here (it needs the desktop's DISPLAY): its constant is read."""
    from conway.sandbox.desktop import TERMINAL

    source = (Path(__file__).resolve().parents[2] / "conway" / "sandbox" / "_guest_pyautogui.py").read_text()
    assert f'TERMINAL = "{TERMINAL}"' in source


def test_apt_get_in_a_setup_succeeds_for_packages_already_here_and_installs_nothing(desk: DisposableDesktop) -> None:
    """OSWorld's chrome 6766f2b8: `sudo apt-get update -y && sudo apt-get install unzip -y && unzip …`. The
    sandbox has no network: the desktop's apt-get (a stand-in) lets the chain go on when the package is here."""
    run_setup([{"type": "execute", "parameters": {
        "command": "echo pw | sudo -S apt-get update -y && echo pw | sudo -S apt-get install bubblewrap -y && "
                   "echo went-on > ~/chain.txt", "shell": True}}], desk, FAST)
    assert (desk.home / "chain.txt").read_text() == "went-on\n"
    done = desk.run("apt-get install -y conway-no-such-package", timeout_s=30)
    assert done.returncode == 100 and "conway-no-such-package not installed here" in done.stderr
    # multi_apps e1fc0df3's postconfig runs `apt list --installed` and looks for a JDK in it, as apt prints it
    listed = desk.run("apt list --installed", timeout_s=30)
    assert listed.returncode == 0 and "bubblewrap/now [installed]" in listed.stdout.splitlines()
    assert desk.run("apt list", timeout_s=30).returncode == 100


def test_the_box_says_whether_a_launched_program_ended_and_how(desk: DisposableDesktop) -> None:
    """What a launch's window wait asks of the box: a program that ended in error will show no window, so the
    step starts it again rather than waiting it out (`LAUNCH_TRIES`)."""
    running = desk.spawn(["sleep", "60"])
    broken = desk.spawn(["sh", "-c", "echo \"Error: Can't open display\" >&2; exit 3"])
    assert isinstance(running, int) and isinstance(broken, int)
    wait_until(lambda: desk.spawned_exit(broken) == 3, timeout=20, interval=0.2, what="the broken program's status")
    assert desk.spawned_exit(running) is None
    assert desk.last_words[broken] == "Error: Can't open display"  # what it said last, for the error
    with pytest.raises(SetupError, match=r"ended with status 3 before showing a window, 3 times"):
        run_setup([{"type": "launch", "parameters": {"command": ["sh", "-c", "exit 3"]}}], desk, FAST)
    # the step's error quotes the program's last words: one printable line, its end only
    noisy = "printf 'x%.0s' $(seq 1 5000) >&2; printf '\\033[31mno display\\n\\tat all\\n' >&2; exit 4"
    with pytest.raises(SetupError) as failed:
        run_setup([{"type": "launch", "parameters": {"command": ["sh", "-c", noisy]}}], desk, FAST)
    said = str(failed.value).split("it said: ", 1)[1]
    assert said.endswith("[31mno display at all)") and said.startswith("…x") and len(said) <= 203
    assert "\x1b" not in said and "\n" not in said


def test_a_box_answering_with_a_huge_stderr_costs_the_host_only_its_end() -> None:
    """`exited` answers come from inside the box: a hostile one may send a line as long as the reader takes; the
    host reads only its end, folded to one printable line."""
    from conway.sandbox.desktop import LAST_WORDS_CHARS, last_words

    said = last_words("\x00" * (64 << 20) + "a\tb\x1b[2Jc\n")
    assert said == "a b [2Jc" and len(last_words("y" * 10_000)) == LAST_WORDS_CHARS + 1
