"""The browser tool with a real injected opener script, and URL checks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from conway.actions import OpenBrowser
from conway.tools.browser import BrowserTool, check_url


@pytest.fixture
def opener(tmp_path: Path) -> tuple[Path, Path]:
    """A tiny opener that records the URL it was given."""
    record = tmp_path / "opened.txt"
    script = tmp_path / "opener.py"
    script.write_text(textwrap.dedent(f"""\
        import sys
        with open({str(record)!r}, "a") as f:
            f.write(sys.argv[-1] + "\\n")
        sys.exit(7 if "fail" in sys.argv[-1] else 0)
    """))
    return script, record


def test_injected_opener_receives_the_url(opener):
    script, record = opener
    tool = BrowserTool(command=[sys.executable, str(script)])
    assert tool.availability()[0]
    r = tool.run(OpenBrowser(url="https://example.org/a?b=c#d"))
    assert r.ok, r.error
    assert record.read_text() == "https://example.org/a?b=c#d\n"
    assert tool.run(OpenBrowser(url="file:///tmp/x.html")).ok


def test_opener_failure_is_reported(opener):
    script, _ = opener
    r = BrowserTool(command=[sys.executable, str(script)]).run(OpenBrowser(url="http://fail.example/"))
    assert not r.ok and "exited 7" in r.error


@pytest.mark.parametrize("url", ["javascript:alert(1)", "ftp://host/x", "mailto:a@b.c", "example.org",
                                 "-new-window", "http:///nohost", "https://a.b/x y", "file:"])
def test_bad_urls_rejected_and_opener_not_run(opener, url):
    script, record = opener
    r = BrowserTool(command=[sys.executable, str(script)]).run(OpenBrowser(url=url))
    assert not r.ok and "refused" in r.error
    assert not record.exists()


def test_a_url_that_may_not_be_opened_is_refused_before_its_intent(opener, conway_home):
    from conway.actions import ActionProblem
    from conway.config import load_config
    from conway.loop.control import SimulatedClock
    from conway.policies.mock import MockPolicy, MockScript
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home, resolve_home
    from conway.store.journal import read_journal
    from conway.tools.registry import Toolbox

    script, record = opener
    tool = BrowserTool(command=[sys.executable, str(script)])
    assert isinstance(tool.check(OpenBrowser(url=":")), ActionProblem)
    assert tool.check(OpenBrowser(url="https://example.org/")) == OpenBrowser(url="https://example.org/")
    home = resolve_home(None)
    init_home(home)
    policy = MockPolicy(MockScript.model_validate({"steps": [{"action": {"type": "open_browser", "url": ":"}}]}))
    run_agent(home, load_config(home.config, ["agent.max_steps=1"]), RunRequest(
        single_session=False, policy=policy, toolbox=Toolbox([tool]), clock=SimulatedClock()), say=lambda s: None)
    events = read_journal(home.journal_dir).events
    kinds = [e["kind"] for e in events]
    assert "intent" not in kinds and "uncertain" not in kinds and not record.exists()
    errors = [e["payload"] for e in events if e["kind"] == "error"]
    assert len(errors) == 1 and "open_browser refused ':'" in errors[0]["error"]


def test_check_url_reasons():
    assert check_url("http://localhost:8000/") is None
    assert "only http, https and file" in check_url("javascript:alert(1)")
    assert "needs a host" in check_url("https:///x")


def test_missing_opener_is_unavailable(tmp_path):
    tool = BrowserTool(command=[str(tmp_path / "no-such-opener")])
    ok, reason = tool.availability()
    assert not ok and "not found" in reason
    r = tool.run(OpenBrowser(url="https://example.org/"))
    assert not r.ok and "cannot open a browser here" in r.error


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="headless Linux semantics")
def test_headless_default_says_unavailable(tmp_path):
    # A fresh interpreter with no display, no $BROWSER and nothing on PATH: a headless host.
    code = ("from conway.tools.browser import BrowserTool; from conway.actions import OpenBrowser; "
            "t = BrowserTool(); print(t.availability()); print(t.run(OpenBrowser(url='https://x.org/')).error)")
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).parents[2])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()[:2]
    assert first.startswith("(False,") and "no browser" in first
    assert second.startswith("cannot open a browser here")


def _autolaunched(home: Path) -> list[Any]:
    """dbus-launch and dbus-daemon processes started for `home` (their environment names it)."""
    import psutil

    found = []
    for p in psutil.process_iter(["name"]):
        try:
            if p.info["name"] in ("dbus-launch", "dbus-daemon") and p.environ().get("HOME") == str(home):
                found.append(p)
        except psutil.Error:
            continue
    return found


@pytest.mark.desktop
def test_commands_with_a_display_start_no_session_bus(tmp_path):
    # Python's webbrowser lookup (xdg-settings) autolaunched a dbus-daemon that outlived Conway and wrote
    # ~/.dbus/session-bus/ into the real home, for every command run with DISPLAY set
    from helpers.desktop_fixtures import need

    from conway.machine.xvfb import start_xvfb

    need("Xvfb", "xvfb")
    home, runtime = tmp_path / "user", tmp_path / "run"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    server = start_xvfb(640, 480)
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime), DISPLAY=server.display,
               PYTHONPATH=str(Path(__file__).parents[2]))
    conway = [sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "conway")]
    try:
        for args in (["init"], ["doctor"], ["run", "--mock", "--max-steps", "1"]):
            done = subprocess.run([*conway, *args], env=env, capture_output=True, text=True, timeout=120)
            assert done.returncode in (0, 2), done.stderr  # doctor exits 2 for an extra missing
        time.sleep(0.5)  # an autolaunched daemon forks away from its launcher
        assert not (home / ".dbus").exists(), sorted(str(p) for p in (home / ".dbus").rglob("*"))
        assert _autolaunched(home) == []
    finally:
        for p in _autolaunched(home):  # a failing run's leftovers go with the test
            p.kill()
        server.stop()
