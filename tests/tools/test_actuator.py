"""The loop's seam to the tools (`conway.protocols.Actuator`): what it calls, and the screen geometry that
travels from the screenshot, with each action, to the tool that maps its coordinates."""

from __future__ import annotations

import hashlib
import inspect

from conway.actions import GUI_TYPES, AppendFile, Click, Mcp, _Action
from conway.config import load_config
from conway.geometry import ScreenGeometry
from conway.loop.control import SimulatedClock
from conway.observe.synthetic import render_synthetic_png
from conway.policies.mock import MockPolicy, MockScript
from conway.protocols import Actuator, Observation, Tool, ToolResult
from conway.session.app import RunRequest, run_agent
from conway.store.home import init_home, resolve_home
from conway.store.journal import read_journal
from conway.tools.registry import Toolbox

RETINA = ScreenGeometry(0, 0, 1280, 800, 640, 400)
"""A pretend 2x HiDPI capture: 1280x800 screenshot pixels on a 640x400 input space."""
RIGHT = ScreenGeometry(1920, 0, 1280, 800, 1280, 800)
"""A monitor to the right of another one."""


class Screens:
    """An observer whose frames come from different screens; `None`: a frame without one (synthetic)."""

    def __init__(self, geometries: list[ScreenGeometry | None]):
        self.geometries = geometries
        self.step = 0

    def observe(self) -> Observation:
        geometry = self.geometries[min(self.step, len(self.geometries) - 1)]
        self.step += 1
        png = render_synthetic_png(320, 200, f"frame {self.step}")
        digest = hashlib.sha256(png).hexdigest()
        if geometry is None:
            return Observation(png=png, captured_size=(320, 200), source="synthetic", content_hash=digest,
                               change_key=digest[:16])
        return Observation(png=png, captured_size=geometry.captured_size, source="screen", content_hash=digest,
                           change_key=digest[:16], logical_size=geometry.logical_size,
                           origin=(geometry.origin_x, geometry.origin_y), geometry=geometry)

    def close(self) -> None:
        pass


class RecordingDesktop(Tool):
    """GUI actions are accepted and the geometry each one came with is kept (the desktop is not the point)."""

    name = "gui"
    action_types = GUI_TYPES

    def __init__(self) -> None:
        self.screens: list[ScreenGeometry | None] = []

    def availability(self) -> tuple[bool, str]:
        return True, "recording desktop (tests)"

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        self.screens.append(screen)
        return ToolResult(ok=True, output=f"did {action.summary()}")


def _run(toolbox, observer, steps: list[dict]):
    home = resolve_home(None)
    init_home(home)
    cfg = load_config(home.config, [f"agent.max_steps={len(steps)}", "agent.repetition_limit=100"])
    policy = MockPolicy(MockScript.model_validate({"steps": steps}))
    outcome, session = run_agent(home, cfg, RunRequest(single_session=False, policy=policy, observer=observer,
                                                       toolbox=toolbox, clock=SimulatedClock()), say=lambda _s: None)
    return outcome, [e for e in read_journal(home.journal_dir).events if e["session"] == session]


CLICK = {"action": {"type": "click", "x": 100, "y": 50}}


def test_each_action_carries_the_geometry_of_the_screenshot_it_was_decided_on():
    desktop = RecordingDesktop()
    screens = Screens([RETINA, RIGHT, None, RETINA])
    outcome, events = _run(Toolbox([desktop]), screens, [CLICK, CLICK, CLICK, CLICK])
    assert outcome.reason == "max-steps budget (4) reached"
    assert desktop.screens == [RETINA, RIGHT, None, RETINA]  # no screen: the tool falls back to its own
    observed = [e["payload"] for e in events if e["kind"] == "observation"]
    assert observed[0]["logical_size"] == [640, 400] and observed[1]["origin"] == [1920, 0]


def test_a_toolbox_hands_the_geometry_to_the_tool_that_runs_the_action():
    desktop = RecordingDesktop()
    box = Toolbox([desktop])
    assert box.run(Click(x=1, y=2), RETINA).ok and box.run(Click(x=1, y=2)).ok
    assert desktop.screens == [RETINA, None]


def test_a_tool_without_the_optional_members_gets_their_defaults():
    class Minimal(Tool):
        name = "files"
        action_types = frozenset({"append_file"})

        def availability(self) -> tuple[bool, str]:
            return True, "ok"

        def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
            return ToolResult(ok=True)

    box = Toolbox([Minimal()])
    action = AppendFile(path="a", text="b")
    assert box.check(action) is action and box.describe() == "" and box.findings() == []
    box.close()
    assert "append_file" in box.available_types() and "read_file" not in box.available_types()
    problem = box.check(Mcp(server="s", tool="t", arguments={}))  # nothing runs MCP here: refused before intent
    assert getattr(problem, "message", "").startswith("no MCP server is configured")


class PlainActuator:
    """Not a Toolbox: only the members `Actuator` declares, so the loop can use nothing else."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, ScreenGeometry | None]] = []
        self.closed = False

    def available_types(self) -> list[str]:
        return ["read_file", "wait", "finish"]

    def describe(self) -> str:
        return ""

    def findings(self) -> list[dict]:
        return [{"tool": "plain", "summary": "a plain actuator: nothing to start"}]

    def check(self, action: _Action):
        return action

    def cancellable(self, action: _Action) -> bool:
        return False

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        self.ran.append((action.type, screen))  # type: ignore[attr-defined]
        return ToolResult(ok=True, output="read")

    def close(self) -> None:
        self.closed = True


def test_the_loop_needs_nothing_from_the_toolbox_beyond_the_actuator_protocol():
    declared = {n for n, v in vars(Actuator).items() if inspect.isfunction(v) and not n.startswith("_")}
    assert declared == {"available_types", "describe", "findings", "check", "cancellable", "run", "close"}
    assert declared <= {n for n in dir(Toolbox) if not n.startswith("_")}
    plain = PlainActuator()
    read = {"action": {"type": "read_file", "path": "notes.txt"}}
    outcome, events = _run(plain, Screens([RIGHT]), [read, read])
    assert outcome.reason == "max-steps budget (2) reached" and not outcome.failed
    assert plain.ran == [("read_file", RIGHT), ("read_file", RIGHT)] and plain.closed
    assert [e["payload"]["action"]["type"] for e in events if e["kind"] == "result"] == ["read_file", "read_file"]
    assert {"event": "tools", "tool": "plain", "summary": "a plain actuator: nothing to start"} in [
        e["payload"] for e in events if e["kind"] == "session"]
