"""grounding-check from live applications: real GTK and Tk windows under Xvfb, a private AT-SPI bus.

The suite's apps log where their own toolkit put each widget (``--log``);
the harvested boxes must agree with that, also for a window at an offset and
for a capture scaled 2x with a non-zero monitor origin (a crop-and-scale
stand-in for a HiDPI monitor, at the screen-grab seam). Scoring uses an
in-process scripted policy that answers from the harvested boxes; nothing is
ever clicked.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.desktop_fixtures import APPS, AppLog, XServer, start_app, wait_until

from conway.actions import Click
from conway.cli.main import main
from conway.config import load_config
from conway.evals.grounding.cases import summarize
from conway.evals.grounding.check import GroundingSuite
from conway.evals.grounding.live import grab_screen, harvest_desktop, harvest_suite
from conway.evals.report_render import render_report
from conway.evals.runner import run_cases
from conway.geometry import ScreenGeometry
from conway.protocols import (
    Decision,
    Policy,
)

REPO = Path(__file__).resolve().parents[2]
SUITE_APPS = REPO / "evals" / "grounding" / "apps"
pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def _atspi_missing() -> str | None:
    if not sys.platform.startswith("linux"):
        return "AT-SPI is Linux only"
    if shutil.which("dbus-run-session") is None:
        return "dbus-run-session not installed (apt-get install dbus-x11)"
    probe = ("import gi; gi.require_version('Atspi', '2.0'); gi.require_version('Gtk', '3.0'); "
             "from gi.repository import Atspi, Gtk")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return f"AT-SPI / GTK for Python missing (see scripts/test.sh): {proc.stderr.strip()[-200:]}"
    return None


@pytest.fixture
def a11y(desktop: XServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A private D-Bus session (AT-SPI activates on it) for this test; everything it started is stopped."""
    missing = _atspi_missing()
    if missing:
        if os.environ.get("CONWAY_REQUIRE_DESKTOP"):
            pytest.fail(missing)
        pytest.skip(missing)
    import psutil

    addr = tmp_path / "bus-address"
    env = {k: v for k, v in os.environ.items() if k not in ("DBUS_SESSION_BUS_ADDRESS", "NO_AT_BRIDGE")}
    session = subprocess.Popen(["dbus-run-session", "--", "sh", "-c",
                                f'printf %s "$DBUS_SESSION_BUS_ADDRESS" > {addr}; exec sleep 900'],
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        address = wait_until(lambda: addr.exists() and addr.read_text(), what="the bus address")
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        monkeypatch.delenv("NO_AT_BRIDGE", raising=False)
        yield desktop
    finally:
        try:
            family = psutil.Process(session.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        for p in family:
            try:
                p.terminate()
            except psutil.NoSuchProcess:
                pass
        session.send_signal(signal.SIGTERM)
        try:
            session.wait(timeout=10)
        except subprocess.TimeoutExpired:
            session.kill()
            session.wait()
        psutil.wait_procs(family, timeout=5)


def _suite(tmp_path: Path, apps: list[dict], **extra) -> Path:
    data = {"format": "conway-grounding-suite/1", "name": "test", "per_screen": 100, "settle_s": 0.3,
            "apps": apps, **extra}
    path = tmp_path / "suite.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def _app(name: str, script: str, log: Path, x: int, y: int, **extra) -> dict:
    return {"name": name, "command": ["{python}", str(SUITE_APPS / script), "--x", str(x), "--y", str(y),
                                      "--log", str(log)], **extra}


def _logged(log: Path) -> list[dict]:
    ready = [e for e in AppLog(log).events() if e["event"] == "ready"]
    assert ready, f"{log.name} logged no geometry"
    return ready[-1]["widgets"]


def _check_against_log(cases, widgets, geometry: ScreenGeometry, tol: float) -> int:
    """Every harvested case whose widget the app logged has the app's box, mapped to the capture."""
    sx = geometry.captured_w / geometry.logical_w
    sy = geometry.captured_h / geometry.logical_h
    matched = 0
    for c in cases:
        same = [w for w in widgets if w["name"] == c.meta["name"] and w["role"] == c.type]
        if not same:
            continue
        x, y, w, h = same[0]["bounds"]
        want = ((x - geometry.origin_x) * sx, (y - geometry.origin_y) * sy,
                (x + w - geometry.origin_x) * sx, (y + h - geometry.origin_y) * sy)
        assert c.box == pytest.approx(want, abs=tol), (c.case_id, c.box, want)
        matched += 1
    return matched


def test_harvested_boxes_match_each_apps_own_geometry(a11y: XServer, tmp_path: Path):
    logs = {n: tmp_path / f"{n}.jsonl" for n in ("chooser", "editor", "form")}
    suite = _suite(tmp_path, [_app("chooser", "gtk_file_chooser.py", logs["chooser"], 0, 0),
                              _app("editor", "gtk_text_editor.py", logs["editor"], 310, 140),  # moved window
                              _app("form", "tk_form.py", logs["form"], 420, 90, targets="app-report")])
    said: list[str] = []
    harvest = harvest_suite(str(suite), tmp_path / "shots", seed=0, say=said.append)
    geometry = ScreenGeometry(0, 0, 1280, 800, 1280, 800)
    by_screen = {s: [c for c in harvest.cases if c.split == s] for s in ("chooser", "editor", "form")}
    assert _check_against_log(by_screen["chooser"], _logged(logs["chooser"]), geometry, 1) >= 2  # Open, Cancel
    assert _check_against_log(by_screen["editor"], _logged(logs["editor"]), geometry, 1) >= 10
    assert _check_against_log(by_screen["form"], _logged(logs["form"]), geometry, 0) == len(by_screen["form"]) == 17
    editor = {c.meta["name"]: c for c in by_screen["editor"]}
    assert editor["Save"].box[0] >= 310 and editor["Save"].instruction == "Click the 'Save' button."
    assert {"File", "Wrap lines", "Font size", "Search", "Insert mode"} <= set(editor)
    assert "Delete account" not in {c.meta["name"] for c in by_screen["form"]}  # disabled
    chooser = {c.meta["name"] for c in by_screen["chooser"]}
    assert {"meeting-notes.txt", "Open", "Cancel"} <= chooser
    for info in harvest.screens:
        assert info["occlusion"] == "checked (X11 stacking order)"
        assert Path(info["image"]).is_file() and info["captured_size"] == [1280, 800]
    assert harvest.screens[2]["dropped"] == {"disabled": 1}
    assert any(line.startswith("form: 17 target(s) kept") for line in said)
    # seeded: the same suite gives the same cases
    again = harvest_suite(str(suite), tmp_path / "shots2", seed=0, say=lambda _: None)
    assert [(c.case_id, c.box) for c in again.cases] == [(c.case_id, c.box) for c in harvest.cases]


def _scaled_grab(region: tuple[int, int, int, int], scale: int):
    """The real screen cropped to `region` and scaled: a HiDPI monitor with a non-zero origin."""
    def grab():
        from PIL import Image

        image, _ = grab_screen()
        x, y, w, h = region
        crop = image.crop((x, y, x + w, y + h)).resize((w * scale, h * scale), Image.Resampling.NEAREST)
        return crop, ScreenGeometry(x, y, w * scale, h * scale, w, h)
    return grab


def test_a_2x_capture_with_an_origin_maps_boxes(a11y: XServer, tmp_path: Path):
    log = tmp_path / "editor.jsonl"
    suite = _suite(tmp_path, [_app("editor", "gtk_text_editor.py", log, 300, 120)])
    region = (100, 50, 1000, 700)
    harvest = harvest_suite(str(suite), tmp_path / "shots", grab=_scaled_grab(region, 2), seed=0,
                            say=lambda _: None)
    geometry = ScreenGeometry(100, 50, 2000, 1400, 1000, 700)
    assert _check_against_log(harvest.cases, _logged(log), geometry, 2) >= 8
    info = harvest.screens[0]
    assert info["captured_size"] == [2000, 1400] and info["origin"] == [100, 50]
    # the window runs past the region's right edge (300 + 900 > 1100): those targets are off screen
    assert info["dropped"].get("off screen", 0) >= 1
    from PIL import Image

    with Image.open(info["image"]) as img:
        assert img.size == (2000, 1400)


class BoxPolicy(Policy):
    """Scripted: answers each case's harvested box centre plus an offset, in screenshot pixels."""

    def __init__(self, cases, offset=(0.0, 0.0)):
        self.cases = {c.index: c for c in cases}
        self.offset = offset
        self.model_id = "scripted-box"

    def decide(self, ctx):
        case = self.cases[ctx.observation.meta["grounding_case"]]
        assert ctx.observation.captured_size == case.size and case.instruction in ctx.text()
        cx, cy = case.centre
        return Decision(raw_text="scripted", actions=[Click(x=cx + self.offset[0], y=cy + self.offset[1])],
                        model_id=self.model_id)


def test_box_centre_scores_100_and_a_20px_offset_the_expected_fraction(a11y: XServer, tmp_path: Path):
    suite = _suite(tmp_path, [_app("editor", "gtk_text_editor.py", tmp_path / "e.jsonl", 40, 40),
                              _app("form", "tk_form.py", tmp_path / "f.jsonl", 40, 40, targets="app-report")])
    harvest = harvest_suite(str(suite), tmp_path / "shots", seed=0, say=lambda _: None)
    cases = harvest.cases
    for i, c in enumerate(cases):
        c.index = i
    cfg = load_config(None, ["policy=mock"])
    records, wall = run_cases(GroundingSuite(cfg), BoxPolicy(cases), cases, progress=False)
    s = summarize(records, wall)
    assert s["hits"] == len(cases) >= 25 and s["hit_rate"] == 1.0 and s["errors"] == 0
    assert sum(g["n"] for g in s["by_size"].values()) == len(cases) and set(s["by_source"]) == {"editor", "form"}
    records, wall = run_cases(GroundingSuite(cfg), BoxPolicy(cases, offset=(20.0, 0.0)), cases, parallel=3,
                             progress=False)
    s = summarize(records, wall)
    want = sum(1 for c in cases if (c.box[2] - c.box[0]) / 2 >= 20)
    assert 0 < want < len(cases)
    assert s["hits"] == want and s["misses"] == len(cases) - want
    assert s["pattern"]["mean_offset_px"] == [20.0, 0.0]
    assert all(r["distance_px"] == pytest.approx(20.0) for r in records)


def test_the_command_from_a_suite_and_its_report(a11y: XServer, tmp_path: Path, capsys):
    suite = _suite(tmp_path, [_app("form", "tk_form.py", tmp_path / "f.jsonl", 40, 40, targets="app-report")],
                   per_screen=6)
    out = tmp_path / "live.json"
    code = main(["grounding-check", "--apps", str(suite), "--mock", "--output", str(out), "--quiet",
                 "--sheet", str(tmp_path / "sheet.png")])
    printed = capsys.readouterr().out
    assert code == 2, printed
    data = json.loads(out.read_text())
    assert data["kind"] == "grounding-check" and data["parameters"]["source"] == "apps"
    assert data["parameters"]["per_screen"] == 6 and len(data["cases"]) == 6
    assert len({c["type"] for c in data["cases"]}) >= 5  # roles balanced: six targets, six different roles
    shot = Path(data["parameters"]["screens"][0]["image"])
    assert shot.parent == tmp_path / "live.images" and shot.is_file()
    assert all(c["image"]["path"] == str(shot) for c in data["cases"])
    assert "form: 6 target(s) kept" in printed
    assert "split / type" in render_report(out)
    out2 = tmp_path / "live2.json"
    assert main(["grounding-check", "--apps", str(suite), "--mock", "--output", str(out2), "--quiet",
                 "--seed", "0"]) == 2  # the same seed again: the same targets
    assert [c["id"] for c in json.loads(out2.read_text())["cases"]] == [c["id"] for c in data["cases"]]


def test_desktop_mode_leaves_out_covered_widgets(a11y: XServer, tmp_path: Path):
    editor = subprocess.Popen([sys.executable, str(SUITE_APPS / "gtk_text_editor.py"), "--x", "0", "--y", "0",
                               "--log", str(tmp_path / "e.jsonl")], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cover = None
    try:
        wait_until(lambda: AppLog(tmp_path / "e.jsonl").events(), timeout=30, what="the editor")
        # a Tk window over the editor's right half: its widgets there are covered
        cover = start_app(APPS / "tk_probe_app.py", tmp_path / "tk.jsonl", args=["--x", "600", "--y", "0"],
                          env={**os.environ})
        time.sleep(0.5)
        harvest = harvest_desktop(tmp_path / "shots", seed=0, say=lambda _: None)
    finally:
        if cover is not None:
            cover.stop()
        editor.terminate()
        editor.wait(timeout=10)
    names = {c.meta["name"] for c in harvest.cases}
    assert {"New", "Open", "Save", "File"} <= names  # left of the cover
    # the Tk window covers x 600..1360, y 0..560: the search field, and the text area in part
    assert "Search" not in names and "Document text" not in names
    assert "Insert mode" in names  # right, but below the cover (y > 560)
    assert harvest.screens[0]["dropped"].get("covered by another window", 0) >= 2
    assert {c.source for c in harvest.cases} == {"gtk_text_editor.py"}


def test_setup_mistakes_are_one_clear_line(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch):
    out = str(tmp_path / "o.json")
    cases = [(["--apps", str(tmp_path / "none.yaml")], "grounding suite"),
             (["--apps", str(_suite(tmp_path, [{"name": "x", "command": ["true"], "colour": "red"}]))],
              "apps.0.colour: Extra inputs are not permitted")]
    (tmp_path / "bad.yaml").write_text("format: something-else\n")
    cases.append((["--apps", str(tmp_path / "bad.yaml")], "is not a grounding suite"))
    for args, want in cases:
        assert main(["grounding-check", "--mock", *args, "--output", out]) == 1
        err = capsys.readouterr().err
        assert want in err and "Traceback" not in err and err.count("\n") == 1, err
    monkeypatch.delenv("DISPLAY", raising=False)
    ok_suite = _suite(tmp_path, [{"name": "x", "command": ["true"]}])
    assert main(["grounding-check", "--mock", "--apps", str(ok_suite), "--output", out]) == 1
    assert "live grounding cases need a screen: DISPLAY is not set" in capsys.readouterr().err


def test_an_app_that_dies_is_named(a11y: XServer, tmp_path: Path, capsys):
    suite = _suite(tmp_path, [{"name": "crasher", "command": ["{python}", "-c", "import sys; sys.stderr.write('boom\\n');"
                                                                                "sys.exit(3)"]}])
    assert main(["grounding-check", "--mock", "--apps", str(suite), "--output", str(tmp_path / "o.json")]) == 1
    err = capsys.readouterr().err
    assert "crasher exited with code 3: boom" in err
    assert not (tmp_path / "o.images").exists() and not (tmp_path / "o.json").exists()


def test_apps_without_a_session_bus_are_refused_before_any_app_starts(desktop: XServer, tmp_path: Path, capsys,
                                                                      monkeypatch: pytest.MonkeyPatch):
    """Like --desktop: the bus is checked first (no 30 s wait that blames the app), with dbus-run-session named."""
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # no bus socket there
    started = tmp_path / "started"
    suite = _suite(tmp_path, [{"name": "app", "command": ["{python}", "-c",
                                                          f"open({str(started)!r}, 'w'); import time; time.sleep(60)"]}])
    assert main(["grounding-check", "--mock", "--apps", str(suite), "--output", str(tmp_path / "o.json")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "D-Bus session bus" in err and "dbus-run-session --" in err, err
    assert not started.exists() and not (tmp_path / "o.json").exists()
