"""A recorded session for the viewer's tests and the docs' screenshot: a real loop run, offline.

The mock policy (a script of decisions, some with hostile text) drives the
real loop over a synthetic 640x400 screen whose frames are archived under
the home's screenshots/ like the screen observer does. GUI actions go to a
recording desktop tool at the Tool protocol boundary (no display needed),
so they come back ok; one model failure and one unparseable answer make
errors. A fake clock keeps the timestamps fixed.
"""

from __future__ import annotations

import json
from pathlib import Path

from conway.actions import GUI_TYPES, _Action
from conway.config import load_config
from conway.geometry import ScreenGeometry
from conway.loop.control import SimulatedClock
from conway.observe.synthetic import SyntheticObserver
from conway.protocols import DispatchUncertain, Tool, ToolResult
from conway.session.app import RunRequest, run_agent
from conway.store.home import Home, init_home
from conway.tools.registry import Toolbox, build_toolbox

INJECTED = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
WINDOW_TITLE = 'Editor <img src=y onerror="window.__pwned = 3">'
"""An application name as the accessibility snapshot would report it, hostile."""
UNCERTAIN_TEXT = "make it uncertain"
"""Typing this makes the recording desktop fail halfway (DispatchUncertain)."""
SIZE = (640, 400)
SCRIPT = [
    {"thought": "The Save button is in the middle of the dialog.", "action": {"type": "click", "x": 320, "y": 200}},
    {"thought": f"Type the file name. {INJECTED}", "action": {"type": "type", "text": "notes.txt"}},
    {"thought": "Move the slider to the right.", "action": {"type": "drag", "x": 200, "y": 300, "to_x": 420, "to_y": 300}},
    {"thought": "Scroll the list down.", "action": {"type": "scroll", "dy": -5, "x": 320, "y": 220}},
    {"raw": "I would like to click on the button, I think."},
    {"error": "model server exploded"},
    {"thought": "Save with the keyboard.", "action": {"type": "hotkey", "keys": ["ctrl", "s"]}},
    {"thought": "Open the context menu of the file.", "action": {"type": "right_click", "x": 600, "y": 380}},
    {"thought": "Wait for the save to finish.", "action": {"type": "wait", "seconds": 1}},
    {"thought": "The file is saved.", "action": {"type": "finish", "status": "DONE", "message": "saved notes.txt"}},
]
CLICK_STEP = 1
"""The step whose click at (320, 200) the tests look for on the image."""


class RecordingDesktop(Tool):
    """Accepts every GUI action and says it was done (the desktop is not the point of these tests)."""

    name = "desktop"
    action_types = GUI_TYPES

    def availability(self) -> tuple[bool, str]:
        return True, "recording desktop (tests)"

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        if getattr(action, "text", None) == UNCERTAIN_TEXT:
            raise DispatchUncertain("the keyboard went away halfway through")
        return ToolResult(ok=True, output=f"did {action.summary()}")


class ArchivingObserver(SyntheticObserver):
    def __init__(self, home: Home, first: int = 0, still: bool = False, title: str = WINDOW_TITLE):
        super().__init__(size=SIZE, label_for_step=lambda step: "window: editor" if still else
                         f"window: editor (frame {first + step + 1})")
        self.home = home
        self.first = first
        self.title = title
        """Frames already in screenshots/ (a second session in the same home numbers on)."""

    def observe(self):  # type: ignore[no-untyped-def]
        obs = super().observe()
        rel = f"screenshots/step-{self.first + self._step:03d}.png"
        (self.home.root / rel).write_bytes(obs.png)
        obs.screenshot_path = rel
        obs.meta["accessibility"] = f"ok: 12 nodes of {self.title!r} in 3 ms"  # as the screen observer words it
        return obs


def record_session(root: Path, script: list[dict] | None = None, dry_run: bool = False, still: bool = False,
                   title: str = WINDOW_TITLE) -> str:
    """Run the loop over the script into the home at `root` (a second call adds a session); returns its id.

    `still`: the screen never changes (so repeating an action gets it suppressed); `title`: the
    application name the observer reports (hostile by default).
    """
    script = script or SCRIPT
    home = Home(root)
    init_home(home)
    path = root / "mock-script.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in script), encoding="utf-8")
    decisions = sum(1 for s in script if "error" not in s and "rate_limit" not in s)  # what --max-steps counts
    cfg = load_config(home.config, ["policy=mock", f"policy.mock_script={path}", "observe.source=synthetic",
                                    f"agent.max_steps={decisions}", "journal.fsync=none"])
    toolbox = Toolbox([RecordingDesktop(), *build_toolbox(cfg.tools, home.scratch, gui=False).tools])
    observer = ArchivingObserver(home, first=len(list((root / "screenshots").glob("*.png"))), still=still,
                                 title=title)
    outcome, session = run_agent(home, cfg, RunRequest(single_session=False, dry_run=dry_run, observer=observer,
                                                       toolbox=toolbox, clock=SimulatedClock()), say=lambda _s: None)
    return session
