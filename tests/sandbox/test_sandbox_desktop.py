"""The disposable desktop for real: bubblewrap, a private Xvfb, a private D-Bus with AT-SPI, lxterminal."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import psutil
import pytest
from helpers.desktop_fixtures import APPS, AppLog, need, require, wait_until, xdotool
from lxml import etree

from conway.observe.accessibility import snapshot
from conway.sandbox.desktop import TERMINAL, DisposableDesktop
from conway.sandbox.environment import BubblewrapEnvironment
from conway.sandbox.setup import SetupError, SetupLimits, run_setup
from conway.tasks.env import CommandResult, PathEscape, TaskEnv
from conway.tasks.getters import GETTERS
from conway.tasks.metrics import METRICS

GETTERS_AND_METRICS = {**GETTERS, **METRICS}

pytestmark = pytest.mark.desktop
REAL_HOME = Path(os.path.expanduser("~")).resolve()


@pytest.fixture
def desk(open_desk: Callable[..., DisposableDesktop]) -> DisposableDesktop:
    return open_desk("t1")


def test_it_is_a_task_env_and_says_where_its_display_is(desk: DisposableDesktop) -> None:
    assert isinstance(desk, TaskEnv)
    # this side gets the display only: the desktop's buses are inside its box (docs/desktop.md#the-box)
    assert desk.env() == {"DISPLAY": desk.display}


def test_writes_land_in_the_disposable_home_and_are_gone_after_close(tmp_path: Path) -> None:
    require(BubblewrapEnvironment.for_workdir(Path("/")).problem() is None, "bubblewrap unusable")
    with DisposableDesktop("t2", root_parent=tmp_path) as d:
        r = d.run("echo data > ~/a.txt; echo more > /home/user/b.txt; echo $HOME; ls -A /root 2>/dev/null; "
                  f"test -e {REAL_HOME}/.pyenv || echo real-home-hidden", shell=True)
        assert r == CommandResult(0, "/home/user\nreal-home-hidden\n", "")
        assert d.host_path("~/a.txt").read_text() == "data\n"
        assert d.host_path("b.txt").read_text() == d.host_path("/home/user/b.txt").read_text() == "more\n"
        assert d.run(["cat", "a.txt"]).stdout == "data\n"  # commands start in the home
        root = d.root
    assert root is not None and not root.exists()
    assert not list(tmp_path.iterdir())


def test_keep_leaves_the_root_and_says_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require(BubblewrapEnvironment.for_workdir(Path("/")).problem() is None, "bubblewrap unusable")
    with DisposableDesktop("t3", root_parent=tmp_path, keep=True) as d:
        d.run("echo kept > ~/k.txt", shell=True)
        root = d.root
    assert root is not None and (root / "home" / "k.txt").read_text() == "kept\n"
    assert f"kept the task's desktop root: {root}" in capsys.readouterr().err
    shutil.rmtree(root)


def test_paths_leaving_the_home_are_refused(desk: DisposableDesktop) -> None:
    (desk.home / "docs").mkdir()
    (desk.home / "docs" / "in.txt").write_text("x")
    (desk.home / "inside").symlink_to("docs/in.txt")
    (desk.home / "out").symlink_to("/etc/passwd")
    (desk.home / "up").symlink_to("../../..")
    # a copy of what the task sees there, made with no link followed on this side
    assert desk.host_path("inside").read_text() == "x" and desk.host_path("inside") != desk.home / "docs" / "in.txt"
    assert desk.host_path("~/docs/../docs/in.txt").read_text() == "x"
    for bad in ("../x", "~/../../etc/passwd", "/etc/passwd", "/home/other/x", "~root/x", "out", "up/etc/passwd",
                "/home/user/docs/../../user2/x", ""):
        with pytest.raises(PathEscape):
            desk.host_path(bad)


def test_a_hanging_setup_command_is_killed_at_its_bound(desk: DisposableDesktop) -> None:
    start = time.monotonic()
    with pytest.raises(SetupError) as err:
        run_setup([{"type": "execute", "parameters": {"command": ["sleep", "61.37"]}}], desk,
                  SetupLimits(command_timeout_s=1))
    assert time.monotonic() - start < 4
    assert str(err.value) == ("setup step 1 (execute): ['sleep', '61.37'] did not finish within 1 s "
                              "(killed with its process group)")
    assert not any(p.info["cmdline"] == ["sleep", "61.37"] for p in psutil.process_iter(["cmdline"]))


def test_an_app_that_never_opens_a_window_is_reported(desk: DisposableDesktop) -> None:
    with pytest.raises(SetupError, match=r"^setup step 1 \(launch\): the application never opened its window "
                                         r"\(launched \['sleep', '30'\]; waited 1 s\)$"):
        run_setup([{"type": "launch", "parameters": {"command": ["sleep", "30"]}}], desk,
                  SetupLimits(window_wait_s=1))


def _atspi_ready() -> None:
    probe = "import gi; gi.require_version('Atspi', '2.0'); from gi.repository import Atspi"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    require(done.returncode == 0, "PyGObject with Atspi missing (pip install 'PyGObject<3.51'; apt gir1.2-atspi-2.0)")


def test_the_observer_reads_a_gtk_app_on_the_private_display(desk: DisposableDesktop) -> None:
    _atspi_ready()
    system_gi = subprocess.run(["/usr/bin/python3", "-c", "import gi"], capture_output=True).returncode == 0
    require(system_gi, "python3-gi not installed (apt-get install python3-gi gir1.2-gtk-3.0)")
    shutil.copy(APPS / "gtk_probe_app.py", desk.home / "gtk_probe_app.py")  # the repo is not in the sandbox
    desk.write_file("gtk.jsonl", b"")  # written as the box's user, who appends to it
    desk.spawn(["/usr/bin/python3", "gtk_probe_app.py", "/home/user/gtk.jsonl"])
    log = AppLog(desk.home / "gtk.jsonl")
    wait_until(lambda: any(e["event"] == "ready" for e in log.events()), timeout=30, what="the GTK app")

    def tree():
        snap = snapshot(helper_prefix=desk.helper_argv("_atspi_snapshot.py"), timeout_s=10)  # read inside the box
        return snap if snap.ok and '"Save draft"' in (snap.text or "") else None
    snap = wait_until(tree, timeout=30, interval=0.3, what="the GTK app in the accessibility tree")
    assert 'frame "Conway GTK probe"' in snap.text


def test_accessibility_tree_is_osworlds_xml_of_a_real_gtk_window(desk: DisposableDesktop) -> None:
    _atspi_ready()
    system_gi = subprocess.run(["/usr/bin/python3", "-c", "import gi"], capture_output=True).returncode == 0
    require(system_gi, "python3-gi not installed (apt-get install python3-gi gir1.2-gtk-3.0)")
    shutil.copy(APPS / "gtk_probe_app.py", desk.home / "gtk_probe_app.py")
    desk.write_file("gtk.jsonl", b"")  # written as the box's user, who appends to it
    desk.spawn(["/usr/bin/python3", "gtk_probe_app.py", "/home/user/gtk.jsonl"])
    log = AppLog(desk.home / "gtk.jsonl")
    wait_until(lambda: any(e["event"] == "ready" for e in log.events()), timeout=30, what="the GTK app")
    xml = wait_until(lambda: (t := desk.accessibility_tree()) and 'name="Save draft"' in t and t, timeout=30,
                     interval=0.5, what="the GTK app's buttons in the accessibility tree")
    root = etree.fromstring(xml.encode())
    ns = {"st": "https://accessibility.ubuntu.example.org/ns/state",
          "cp": "https://accessibility.ubuntu.example.org/ns/component"}
    assert root.tag == "desktop-frame"
    frame = root.xpath("application/frame[@name='Conway GTK probe']")
    assert len(frame) == 1 and frame[0].get(f"{{{ns['st']}}}showing") == "true"
    button = frame[0].xpath(".//push-button[@name='Save draft']")[0]
    assert button.get(f"{{{ns['cp']}}}screencoord", "").startswith("(") and button.get(f"{{{ns['cp']}}}size")
    assert frame[0].xpath(".//check-box[@name='Remember me']")
    assert [e.text for e in frame[0].xpath(".//text[@st:editable='true']", namespaces=ns)] == ["hello"]
    # and the metric reads it as OSWorld's does, with CSS selectors and XPath
    check = GETTERS_AND_METRICS["check_accessibility_tree"]
    rules = [{"selectors": ['frame[name="Conway GTK probe"] push-button[name="Discard"]']},
             {"xpath": "//text[@st:editable='true']", "text": "hello", "exact": True}]
    assert check(GETTERS_AND_METRICS["accessibility_tree"](desk, {}), rules) == 1.0
    assert check(xml, [{"selectors": ['push-button[name="Publish"]']}]) == 0.0


def test_accessibility_tree_shows_thunderbird_to_osworlds_rules(desk: DisposableDesktop) -> None:
    """thunderbird/15c3b339's rule on a real Thunderbird: its first-run account form, the address typed in."""
    _atspi_ready()
    need("thunderbird", "thunderbird")
    run_setup([{"type": "launch", "parameters": {"command": ["/usr/bin/thunderbird"]}}], desk,
              SetupLimits(window_wait_s=90))
    check = GETTERS_AND_METRICS["check_accessibility_tree"]
    form = [{"selectors": ['application[name=Thunderbird] [attr|id="autoConfigEmailForm"] entry[attr|id="email"]']}]
    xml = wait_until(lambda: (t := desk.accessibility_tree()) and check(t, form) == 1.0 and t, timeout=90,
                     interval=1.0, what="Thunderbird's account form in the accessibility tree")
    typed_rule = [{"xpath": "//application[@name='Thunderbird']//*[contains(text(), 'anonym-x2024@outlook.com') "
                            "or contains(@name, 'anonym-x2024@outlook.com')]"}]
    assert check(xml, typed_rule) == 0.0
    entry = etree.fromstring(xml.encode()).xpath("//entry[@attr:id='email']", namespaces={
        "attr": "https://accessibility.ubuntu.example.org/ns/attributes"})[0]
    x, y = (int(v) for v in entry.get("{https://accessibility.ubuntu.example.org/ns/component}screencoord")
            .strip("()").split(", "))
    xdotool(desk.display, "mousemove", str(x + 20), str(y + 15))
    xdotool(desk.display, "click", "1")
    xdotool(desk.display, "type", "--delay", "30", "anonym-x2024@outlook.com")
    wait_until(lambda: check(desk.accessibility_tree() or "<none/>", typed_rule) == 1.0, timeout=30, interval=1.0,
               what="the typed address in Thunderbird's accessibility tree")


def test_terminal_output_reads_what_a_command_typed_into_the_terminal_printed(desk: DisposableDesktop) -> None:
    _atspi_ready()
    require(shutil.which(TERMINAL) is not None, f"{TERMINAL} not installed (apt-get install {TERMINAL})")
    assert desk.terminal_output() is None  # no terminal open yet
    run_setup([{"type": "launch", "parameters": {"command": [TERMINAL]}},
               {"type": "activate_window", "parameters": {"window_name": "LXTerminal", "by_class": True}}],
              desk, SetupLimits(window_wait_s=20))
    typed = subprocess.run(["xdotool", "type", "--delay", "20", "echo conway-$((6*7))\n"],
                           env={**os.environ, "DISPLAY": desk.display}, capture_output=True, timeout=20)
    assert typed.returncode == 0, typed.stderr
    text = wait_until(lambda: (t := desk.terminal_output()) and "conway-42\n" in t + "\n" and t, timeout=20,
                      interval=0.3, what="the command's output in the terminal")
    assert "echo conway-$((6*7))" in text  # the typed line, then what it printed


def test_keys_typed_after_ctrl_alt_t_in_one_step_reach_the_terminal_it_opens(desk: DisposableDesktop) -> None:
    """OSWorld's os 13584542: one `execute` presses Ctrl+Alt+T, then types `stty size` and Enter. The terminal
    opens when the shortcut is pressed (GNOME's doing on the VM), so what follows is typed into it."""
    _atspi_ready()
    require(shutil.which(TERMINAL) is not None, f"{TERMINAL} not installed (apt-get install {TERMINAL})")
    code = ("import pyautogui; import time; time.sleep(0.5); pyautogui.hotkey('ctrl', 'alt', 't'); time.sleep(0.5); "
            "pyautogui.write('echo conway-$((6*7))'); time.sleep(0.5); pyautogui.press('enter')")
    run_setup([{"type": "execute", "parameters": {"command": ["python", "-c", code]}}], desk,
              SetupLimits(window_wait_s=30, command_timeout_s=120))
    text = wait_until(lambda: (t := desk.terminal_output()) and "conway-42\n" in t + "\n" and t, timeout=60,
                      interval=0.3, what="the command typed after the shortcut, run in the terminal")
    assert "echo conway-$((6*7))" in text


def test_a_desktop_that_cannot_sandbox_says_why_and_leaves_nothing(tmp_path: Path) -> None:
    from conway.sandbox.environment import SandboxError
    desk = DisposableDesktop("t5", root_parent=tmp_path / "roots", bwrap=str(tmp_path / "no-bwrap"))
    with pytest.raises(SandboxError) as err:
        with desk:
            pass
    assert str(err.value) == f"bubblewrap is not installed ({tmp_path / 'no-bwrap'} is missing; " \
                             "Debian: apt-get install bubblewrap)"
    assert not list((tmp_path / "roots").iterdir())
    assert desk.display == "" and desk.root is None  # checked before anything started


def test_close_kills_everything_it_started(tmp_path: Path) -> None:
    require(BubblewrapEnvironment.for_workdir(Path("/")).problem() is None, "bubblewrap unusable")
    with DisposableDesktop("t4", root_parent=tmp_path) as d:
        d.spawn("sleep 300.71 & sleep 301.71", shell=True)
        wait_until(lambda: _sleeping(), timeout=10, what="the spawned sleeps")
        x_pid = _x_server(d.display)
    assert not _sleeping()
    assert x_pid is not None and not psutil.pid_exists(x_pid) or psutil.Process(x_pid).status() == "zombie"


def test_kill_ends_every_command_in_its_sandbox_and_leaves_its_folders(tmp_path: Path) -> None:
    require(BubblewrapEnvironment.for_workdir(Path("/")).problem() is None, "bubblewrap unusable")
    with DisposableDesktop("t5", root_parent=tmp_path) as d:
        d.run("echo kept > ~/a.txt", shell=True)
        assert d.environment is not None
        prep = d.environment.prepare(["sleep", "302.71"], cwd="/home/user", env={})  # as the agent's shell runs it
        cmd = subprocess.Popen(prep.argv, env=prep.env, cwd=prep.cwd, start_new_session=True)
        try:
            wait_until(lambda: _sleeping(("302.71",)), timeout=10, what="the sandboxed sleep")
            x = _x_server(d.display)
            d.kill()
            assert cmd.wait(timeout=10) in (-9, 125) and not _sleeping(("302.71",))  # its relay ended with it
            assert x is not None and not psutil.pid_exists(x) and d.lost() is None  # nothing of it is left to lose
            assert (d.home / "a.txt").read_text() == "kept\n"  # the folders stay until close
        finally:
            if cmd.poll() is None:
                cmd.kill()


def _x_server(display: str) -> int | None:
    """The pid (on this machine) of the X server of `display`, which runs inside the desktop's box."""
    for p in psutil.process_iter(["name", "cmdline"]):
        if p.info["name"] == "Xvfb" and display in (p.info["cmdline"] or []):
            return p.pid
    return None


def _sleeping(args: tuple[str, ...] = ("300.71", "301.71")) -> bool:
    return any(p.info["cmdline"] in [["sleep", a] for a in args] for p in psutil.process_iter(["cmdline"]))


def test_the_agents_own_tools_share_the_desktops_view(desk: DisposableDesktop) -> None:
    from conway.actions import AppendFile, ReadFile, Shell
    from conway.config import ToolsConfig
    from conway.tools.registry import build_toolbox
    (desk.home / "a.txt").write_text("task file\n")
    box = build_toolbox(ToolsConfig(enabled=["shell", "files"]), Path("/home/user"), gui=False,
                        environment=desk.environment)
    try:
        assert box.report["shell"][0] and box.report["files"][0], box.report
        r = box.run(Shell(command="pwd; echo $HOME $DISPLAY; cat a.txt"))
        assert r.ok and r.output.splitlines()[:3] == ["/home/user", f"/home/user {desk.display}", "task file"]
        read = box.run(ReadFile(path="~/a.txt"))
        assert read.output == "task file\n" and read.data["path"] == "/home/user/a.txt"
        wrote = box.run(AppendFile(path="/home/user/b.txt", text="by the agent\n"))
        assert wrote.ok and str(desk.home) not in wrote.output  # the model is told the path it used
        assert (desk.home / "b.txt").read_text() == "by the agent\n"
        assert not box.run(ReadFile(path=str(desk.home / "a.txt"))).ok  # the host's name for it is not shown
    finally:
        box.close()
    assert desk.run("cat b.txt").stdout == "by the agent\n"  # closing the tools left the desktop alone
    with pytest.raises(PathEscape):
        desk.run(["ls"], cwd="/root")


def test_the_bus_starts_only_the_accessibility_bus_and_dconf(desk: DisposableDesktop) -> None:
    # the bus runs what it activates outside the sandbox, so it may activate only what the desktop needs
    r = desk.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                  "org.freedesktop.DBus.ListActivatableNames"], timeout_s=10)
    assert r.returncode == 0, r
    names = set(re.findall(r'string "([^"]+)"', r.stdout))
    assert names == {"org.freedesktop.DBus", "org.a11y.Bus", "ca.desrt.dconf"} & (
        {"org.freedesktop.DBus"} | {n[:-8] for n in os.listdir("/usr/share/dbus-1/services")}), names


def test_the_box_has_its_own_sound_server_starting_below_full(desk: DisposableDesktop) -> None:
    """OSWorld's os/28cc3b7e ("turn up to the max volume") read as its checker reads it: PulseAudio answers inside
    the box (its socket in the box's runtime folder, never this machine's), the null sink starts at 40%, and a
    `pactl` the agent runs turns it up."""
    check = "pulseaudio --start\npactl list sinks | grep '^[[:space:]]Volume:' | head -n 1 | awk '{print $5}' | sed 's/%//g'"
    assert desk.run(check, shell=True, timeout_s=60).stdout == "40\n"
    assert desk.run("pactl info | grep '^Server String'", shell=True).stdout.strip() == \
        "Server String: /run/user/1000/pulse/native"
    assert desk.run(["pactl", "set-sink-volume", "@DEFAULT_SINK@", "100%"]).returncode == 0
    assert desk.run(check, shell=True, timeout_s=60).stdout == "100\n"
