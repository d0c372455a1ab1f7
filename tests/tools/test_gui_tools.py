"""The GUI tool on a real X display (Xvfb), verified by the application itself.

Every action goes through the same pipeline a model-driven step uses: take a
screenshot, resize it as the model family would, express the target in the
model's coordinates, map back with `conway.geometry`, run the action; the
Tk probe app's log then says what really happened.
"""

from __future__ import annotations

import json
import os

import pytest
from helpers.desktop_fixtures import App, XServer, find_color_box, run_python, wait_until, xdotool

from conway.actions import Click, DoubleClick, Drag, Hotkey, Key, Move, RightClick, Scroll, TripleClick, TypeText
from conway.geometry import (
    Convention,
    ScreenGeometry,
    captured_to_model,
    input_to_captured,
    model_point_error,
    model_to_captured,
    resize_for_model,
)
from conway.imaging import observation_image
from conway.observe.screen import ScreenObserver
from conway.policies.families import get_resize_rule
from conway.protocols import FailSafeTriggered
from conway.tools.gui import GuiTool

BUTTON_RGB = (255, 0, 255)
RULE = get_resize_rule("qwen2.5-vl").with_token_cap(768)  # a smaller image than the screen: real scaling


class Pipeline:
    """Screenshot -> model space -> back to captured pixels, as a policy would do it."""

    def __init__(self, tool: GuiTool, convention: Convention = Convention.ABSOLUTE):
        self.tool = tool
        self.convention = convention
        self.observer = ScreenObserver()
        self.screen: ScreenGeometry | None = None

    def look(self):
        obs = self.observer.observe()
        sent, sent_size = resize_for_model(observation_image(obs), RULE)
        assert sent.size == sent_size and sent_size != obs.captured_size
        self.screen = obs.geometry  # what the toolbox hands the tool with each action decided on this look
        return obs, sent, sent_size

    def model_point(self, obs, sent_size, ix: int, iy: int) -> tuple[float, float]:
        """Where a model would point for the input point (ix, iy), rounded as a model writes it."""
        cx, cy = input_to_captured(ix, iy, obs.geometry)
        mx, my = captured_to_model(cx, cy, self.convention, sent_size, obs.captured_size)
        if self.convention is Convention.RELATIVE:
            mx, my = round(mx, 3), round(my, 3)
        else:
            mx, my = round(mx), round(my)
        assert model_point_error(mx, my, self.convention, sent_size, obs.captured_size) is None
        return mx, my

    def target(self, widget: dict[str, int]) -> tuple[float, float]:
        """Captured-pixel action coordinates for a widget's centre, via model space."""
        obs, _sent, sent_size = self.look()
        mx, my = self.model_point(obs, sent_size, widget["cx"], widget["cy"])
        return model_to_captured(mx, my, self.convention, sent_size, obs.captured_size)

    def close(self) -> None:
        self.observer.close()


@pytest.fixture
def gui(desktop: XServer):
    tool = GuiTool(pause_s=0.01)
    ok, reason = tool.availability()
    assert ok, reason
    yield tool
    tool.close()


@pytest.fixture
def pipe(gui: GuiTool):
    p = Pipeline(gui)
    yield p
    p.close()


def inside(widget: dict[str, int], x: int, y: int, slack: int = 2) -> bool:
    return (widget["x"] - slack <= x < widget["x"] + widget["w"] + slack
            and widget["y"] - slack <= y < widget["y"] + widget["h"] + slack)


def run_ok(tool: GuiTool, action, screen: ScreenGeometry | None = None) -> dict:
    result = tool.run(action, screen)
    assert result.ok, result.error
    return result.data


# --- every action, verified by the app ------------------------------------------


@pytest.mark.desktop
def test_click_found_by_colour_in_the_resized_image(gui: GuiTool, pipe: Pipeline, tk_app: App) -> None:
    obs, sent, sent_size = pipe.look()
    box = find_color_box(sent, BUTTON_RGB)
    assert box is not None, "the magenta button is not in the model's image"
    mx, my = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2  # the model's answer, in sent pixels
    x, y = model_to_captured(mx, my, Convention.ABSOLUTE, sent_size, obs.captured_size)
    mark = tk_app.log.mark()
    data = run_ok(gui, Click(x=x, y=y), pipe.screen)
    assert inside(tk_app.widgets["button"], *data["input"])
    tk_app.log.wait_for(mark, lambda e: e["event"] == "click", what="the button click")


@pytest.mark.desktop
@pytest.mark.parametrize("convention", [Convention.ABSOLUTE, Convention.RELATIVE, Convention.RELATIVE1000])
def test_click_each_convention(gui: GuiTool, convention: Convention, tk_app: App) -> None:
    pipe = Pipeline(gui, convention)
    try:
        x, y = pipe.target(tk_app.widgets["button"])
    finally:
        pipe.close()
    mark = tk_app.log.mark()
    run_ok(gui, Click(x=x, y=y), pipe.screen)
    tk_app.log.wait_for(mark, lambda e: e["event"] == "click", what=f"a click ({convention})")


@pytest.mark.desktop
def test_double_triple_and_right_click(gui: GuiTool, pipe: Pipeline, tk_app: App) -> None:
    x, y = pipe.target(tk_app.widgets["dbl"])
    mark = tk_app.log.mark()
    run_ok(gui, DoubleClick(x=x, y=y), pipe.screen)
    tk_app.log.wait_for(mark, lambda e: e["event"] == "double", what="a double click")
    # a right click elsewhere in between also ends Tk's multi-click sequence
    mark = tk_app.log.mark()
    rx, ry = pipe.target(tk_app.widgets["ctx"])
    run_ok(gui, RightClick(x=rx, y=ry), pipe.screen)
    tk_app.log.wait_for(mark, lambda e: e["event"] == "right", what="a right click")
    assert not tk_app.log.since(mark, "click")
    mark = tk_app.log.mark()
    run_ok(gui, TripleClick(x=x, y=y), pipe.screen)
    tk_app.log.wait_for(mark, lambda e: e["event"] == "triple", what="a triple click")


@pytest.mark.desktop
def test_drag_start_and_end(gui: GuiTool, pipe: Pipeline, tk_app: App) -> None:
    area = tk_app.widgets["drag"]
    start = {"cx": area["x"] + 40, "cy": area["y"] + 40}
    end = {"cx": area["x"] + area["w"] - 50, "cy": area["y"] + area["h"] - 30}
    x, y = pipe.target(start)
    tx, ty = pipe.target(end)
    mark = tk_app.log.mark()
    data = run_ok(gui, Drag(x=x, y=y, to_x=tx, to_y=ty), pipe.screen)
    s = tk_app.log.wait_for(mark, lambda e: e["event"] == "drag_start", what="the drag start")
    e = tk_app.log.wait_for(mark, lambda e: e["event"] == "drag_end", what="the drag end")
    assert abs(s["x"] - start["cx"]) <= 2 and abs(s["y"] - start["cy"]) <= 2, (s, start)
    assert abs(e["x"] - end["cx"]) <= 2 and abs(e["y"] - end["cy"]) <= 2, (e, end)
    assert [s["x"], s["y"]] == data["input"] and [e["x"], e["y"]] == data["input_to"]
    assert e["motions"] >= 1


def _type_into_entry(gui: GuiTool, pipe: Pipeline, app: App, text: str, replace: bool = False) -> dict:
    x, y = pipe.target(app.widgets["entry"])
    mark = app.log.mark()
    # focus follows the pointer (no window manager): clicking the entry puts it there;
    # a triple click also selects what is there, so the typed text replaces it
    run_ok(gui, TripleClick(x=x, y=y) if replace else Click(x=x, y=y), pipe.screen)
    data = run_ok(gui, TypeText(text=text), pipe.screen)
    app.log.wait_for(mark, lambda e: e["event"] == "text" and e["value"] == text, timeout=15,
                     what=f"the entry to read {text!r}")
    return data


@pytest.mark.desktop
def test_type_ascii_exactly(gui: GuiTool, pipe: Pipeline, tk_app: App) -> None:
    data = _type_into_entry(gui, pipe, tk_app, "Hello World 0123456789")
    assert data["via"] == "pyautogui"  # the fast path
    text = "Hello, World! ~`|{}[]:;\"'<>?/\\ 0123456789 +-=_*&^%$#@"
    # pyautogui guesses Shift from a US layout; characters the keymap disagrees
    # with (Xvfb puts "<" on the ISO key) must still arrive exactly
    _type_into_entry(gui, pipe, tk_app, text, replace=True)


@pytest.mark.desktop
def test_type_non_ascii_exactly(gui: GuiTool, pipe: Pipeline, tk_app: App) -> None:
    text = "héllo – ünïcode ✓"
    data = _type_into_entry(gui, pipe, tk_app, text)
    assert data["via"] == "pyautogui+xdotool"


@pytest.mark.desktop
def test_key_and_hotkey(gui: GuiTool, pipe: Pipeline, tk_app: App) -> None:
    x, y = pipe.target(tk_app.widgets["entry"])
    run_ok(gui, Click(x=x, y=y), pipe.screen)
    mark = tk_app.log.mark()
    run_ok(gui, Key(key="F5"), pipe.screen)
    tk_app.log.wait_for(mark, lambda e: e["event"] == "key" and e["keysym"] == "F5", what="F5")
    run_ok(gui, Key(key="Return"), pipe.screen)  # an alias
    tk_app.log.wait_for(mark, lambda e: e["event"] == "key" and e["keysym"] == "Return", what="Return")
    run_ok(gui, Hotkey(keys=["ctrl", "shift", "k"]), pipe.screen)
    ev = tk_app.log.wait_for(mark, lambda e: e["event"] == "key" and e["keysym"].lower() == "k",
                             what="ctrl+shift+k")
    assert "Control" in ev["mods"] and "Shift" in ev["mods"], ev


@pytest.mark.desktop
def test_scroll_both_axes(gui: GuiTool, pipe: Pipeline, tk_app: App) -> None:
    x, y = pipe.target(tk_app.widgets["scroll"])
    for dy, dx, want in ((2, 0, "up"), (-1, 0, "down"), (0, 3, "right"), (0, -2, "left")):
        mark = tk_app.log.mark()
        run_ok(gui, Scroll(x=x, y=y, dy=dy, dx=dx), pipe.screen)
        n = abs(dy or dx)
        wait_until(lambda: len(tk_app.log.since(mark, "scroll")) >= n, what=f"{n} scroll(s) {want}")
        assert [e["dir"] for e in tk_app.log.since(mark, "scroll")] == [want] * n


@pytest.mark.desktop
def test_move_and_hidpi_mapping(gui: GuiTool, desktop: XServer, tk_app: App) -> None:
    import pyautogui

    b = tk_app.widgets["button"]
    # a pretend 2x Retina capture of this screen: captured pixels are twice the input pixels
    w, h = desktop.size
    retina = ScreenGeometry(0, 0, 2 * w, 2 * h, w, h)
    data = run_ok(gui, Move(x=2 * b["cx"], y=2 * b["cy"]), retina)
    assert data["input"] == [b["cx"], b["cy"]]
    assert tuple(pyautogui.position()) == (b["cx"], b["cy"])
    mark = tk_app.log.mark()
    run_ok(gui, Click(x=2 * b["cx"] + 1, y=2 * b["cy"] + 1), retina)
    tk_app.log.wait_for(mark, lambda e: e["event"] == "click", what="a click at HiDPI coordinates")


# --- bad input and faults ---------------------------------------------------------


@pytest.mark.desktop
def test_coordinates_outside_the_image_are_rejected(gui: GuiTool, desktop: XServer, tk_app: App) -> None:
    screen = ScreenGeometry(0, 0, 1280, 800, 1280, 800)
    mark = tk_app.log.mark()
    r = gui.run(Click(x=1280, y=10), screen)
    assert not r.ok and "x=1280" in r.error and "1280x800" in r.error and "0 <= x < 1280" in r.error
    r = gui.run(Drag(x=10, y=10, to_x=50, to_y=900), screen)
    assert not r.ok and "y=900" in r.error and "1280x800" in r.error
    # a lone coordinate and an unknown key are refused by the action validator itself, before any dispatch
    from conway.actions import ActionProblem, parse_action
    assert isinstance(p := parse_action({"type": "scroll", "dy": 1, "x": 5}), ActionProblem) and "go together" in p.message
    assert isinstance(p := parse_action({"type": "key", "key": "definitely-not-a-key"}), ActionProblem)
    assert "unknown key" in p.message
    # a valid click afterwards is the first thing the app sees: nothing else got through
    b = tk_app.widgets["button"]
    run_ok(gui, Click(x=b["cx"], y=b["cy"]))
    tk_app.log.wait_for(mark, lambda e: e["event"] == "click", what="the sentinel click")
    assert [e["event"] for e in tk_app.log.since(mark)] == ["click"]


@pytest.mark.desktop
def test_pause_is_configurable(desktop: XServer) -> None:
    import pyautogui

    tool = GuiTool(pause_s=0.0)
    assert tool.availability()[0]
    run_ok(tool, Move(x=300, y=300))
    assert pyautogui.PAUSE == 0.0
    tool = GuiTool(pause_s=0.05)
    run_ok(tool, Move(x=310, y=300))
    assert pyautogui.PAUSE == 0.05


@pytest.mark.desktop
def test_failsafe_raises(gui: GuiTool, desktop: XServer, tk_app: App) -> None:
    xdotool(desktop.display, "mousemove", "0", "0")
    mark = tk_app.log.mark()
    try:
        with pytest.raises(FailSafeTriggered, match="corner"):
            gui.run(Click(x=140, y=90))
        with pytest.raises(FailSafeTriggered):
            gui.run(TypeText(text="é"))  # the xdotool path is guarded too
    finally:
        xdotool(desktop.display, "mousemove", "640", "400")
    b = tk_app.widgets["button"]
    run_ok(gui, Click(x=b["cx"], y=b["cy"]))  # the sentinel: nothing arrived before it
    tk_app.log.wait_for(mark, lambda e: e["event"] == "click", what="the sentinel click")
    assert [e["event"] for e in tk_app.log.since(mark)] == ["click"]
    off = GuiTool(pause_s=0.0, failsafe=False)
    xdotool(desktop.display, "mousemove", "0", "0")
    try:
        assert off.run(Move(x=100, y=100)).ok
    finally:
        xdotool(desktop.display, "mousemove", "640", "400")


_PROBE = r"""
import json, os, sys
from conway.actions import Click, ReadFile
from conway.tools.gui import GuiTool
from conway.tools.files import FileTools
from conway.tools.registry import Toolbox
gui = GuiTool()
box = Toolbox([FileTools(os.getcwd()), gui])
ok, reason = gui.availability()
r = box.run(Click(x=10, y=10))
f = box.run(ReadFile(path="pyproject.toml"))
print(json.dumps({"ok": ok, "reason": reason, "run_ok": r.ok, "run_error": r.error,
                  "types": box.available_types(), "file_ok": f.ok}))
"""


@pytest.mark.parametrize("display", [None, ":999"])
def test_unavailable_without_a_reachable_display(display: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    if display:
        env["DISPLAY"] = display
    proc = run_python(_PROBE, env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ok"] is False
    assert out["reason"].startswith("GUI tools unavailable: ")
    if display is None:
        assert "DISPLAY is not set" in out["reason"]
    else:
        assert ":999" in out["reason"] and "unreachable" in out["reason"]
    assert out["run_ok"] is False and "GUI tools unavailable" in out["run_error"]
    assert "click" not in out["types"] and "read_file" in out["types"]
    assert out["file_ok"] is True  # direct tools unaffected


def test_unavailable_when_import_raises_systemexit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever pyautogui throws at import (here SystemExit, as without tkinter) becomes a reason."""
    import builtins
    import sys as _sys

    import conway.tools.gui as gui_mod

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "pyautogui":
            raise SystemExit(1)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(gui_mod, "display_problem", lambda display=None: None)
    monkeypatch.delitem(_sys.modules, "pyautogui", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    ok, reason = GuiTool().availability()
    assert not ok and reason.startswith("GUI tools unavailable: ") and "tkinter" in reason


_LOST = r"""
import json, os, signal, subprocess, sys, time
sys.path.insert(0, "tests")  # this script runs as its own process
from helpers.desktop_fixtures import start_xvfb
from conway.actions import Click, Move
from conway.observe.screen import CaptureError, ScreenObserver
from conway.protocols import PolicyError
from conway.tools.gui import GuiTool
server = start_xvfb(800, 600)
os.environ["DISPLAY"] = server.display
out = {}
gui = GuiTool(pause_s=0.0)
obs = ScreenObserver()
out["before"] = gui.run(Move(x=100, y=100)).ok and obs.observe().captured_size == (800, 600)
server.stop()
r = gui.run(Click(x=200, y=200))
out["lost_ok"], out["lost_error"] = r.ok, r.error
r = gui.run(Click(x=200, y=200))  # again: must not hang on the dead connection
out["lost_again_ok"] = r.ok
try:
    obs.observe(); out["capture"] = "no error"
except CaptureError as e:
    out["capture"] = str(e); out["capture_is_policy_error"] = isinstance(e, PolicyError)
# the display comes back (same number): both reconnect
n = server.display.lstrip(":")
proc = subprocess.Popen(["Xvfb", ":" + n, "-screen", "0", "640x480x24", "-nolisten", "tcp"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.time() + 10
from conway.machine.platform import display_problem
while display_problem() and time.time() < deadline:
    time.sleep(0.02)
r = gui.run(Move(x=300, y=200))
out["back_ok"], out["back_error"] = r.ok, r.error
import pyautogui
out["back_pos"] = list(pyautogui.position())
out["back_size"] = list(obs.observe().captured_size)
proc.terminate(); proc.wait()
print(json.dumps(out))
"""


@pytest.mark.desktop
def test_display_lost_mid_run_is_a_failed_result_not_a_crash(xvfb_session: XServer) -> None:
    proc = run_python(_LOST, {k: v for k, v in os.environ.items() if k != "DISPLAY"}, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["before"] is True
    assert out["lost_ok"] is False and "display lost before dispatch" in out["lost_error"], out
    assert out["lost_again_ok"] is False
    assert "unreachable" in out["capture"] and out["capture_is_policy_error"] is True
    assert out["back_ok"] is True, out
    assert out["back_pos"] == [300, 200] and out["back_size"] == [640, 480]
