"""Record the journal behind tests/experience/test_export_golden.py (run once; the output is committed).

    .venv/bin/python tests/data/export/record_journal.py

A real loop run: the generic policy (real prompt building, parser and
coordinate mapping) talks HTTP to the scripted fake server of
tests/fixtures/scripted_server.py, over a synthetic 640x400 screen whose
frames are archived under screenshots/. GUI tools are off (no desktop), so
clicks come back as errors, which is what a journal records then. The fake
clock makes timestamps fixed. Writes tests/data/export/home/{journal,screenshots,labels.jsonl}.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from fixtures.scripted_server import Reply, ScriptedFakeServer  # noqa: E402

from conway.config import load_config  # noqa: E402
from conway.experience.labels import Label, append_labels, labels_path  # noqa: E402
from conway.loop.control import SimulatedClock  # noqa: E402
from conway.observe.synthetic import SyntheticObserver  # noqa: E402
from conway.session.app import RunRequest, run_agent  # noqa: E402
from conway.store.home import Home, init_home  # noqa: E402
from conway.tools.registry import build_toolbox  # noqa: E402

ANSWERS = [
    {"thought": "The OK button is at the centre.", "action": {"type": "click", "x": 322, "y": 196}},
    {"thought": "Type the name.", "action": {"type": "type", "text": "hello"}},
    {"thought": "Open the context menu.", "action": {"type": "right_click", "x": 10, "y": 380}},
    {"thought": "Open the file.", "action": {"type": "double_click", "x": 600, "y": 30}},
    {"thought": "Scroll down a bit.", "action": {"type": "scroll", "dy": -3, "x": 300, "y": 200}},
    {"thought": "Confirm.", "action": {"type": "key", "key": "enter"}},
    {"thought": "Done with this subgoal.", "action": {"type": "finish", "status": "DONE", "message": "clicked OK"}},
]


class ArchivingObserver(SyntheticObserver):
    """The synthetic screen, archived like the screen observer does (path relative to the home)."""

    def __init__(self, home: Home):
        super().__init__(label_for_step=lambda step: f"frame {step}")
        self.home = home

    def observe(self):
        obs = super().observe()
        rel = f"screenshots/step-{self._step:03d}.png"
        (self.home.root / rel).write_bytes(obs.png)
        obs.screenshot_path = rel
        return obs


def main() -> None:
    from conway.store.provenance import harness_revision
    harness_revision()  # read (and cached) before the old recording is deleted, which would make the tree dirty
    root = HERE / "home"
    if root.exists():
        shutil.rmtree(root)
    home = Home(root)
    init_home(home)
    replies = [Reply.text(json.dumps(a)) for a in ANSWERS]
    with ScriptedFakeServer(models=["fake-vlm"], replies=replies) as server:
        cfg = load_config(home.config, ["policy=generic", f"policy.endpoint={server.base_url}",
                                        "policy.structured_output=none", "observe.source=synthetic",
                                        f"agent.max_steps={len(ANSWERS)}", "journal.fsync=none"])
        toolbox = build_toolbox(cfg.tools, home.scratch, gui=False)
        run_agent(home, cfg, RunRequest(single_session=False, policy=None, observer=ArchivingObserver(home),
                                        toolbox=toolbox, clock=SimulatedClock()), say=lambda _s: None)
    session = json.loads(next(home.journal_dir.glob("*.jsonl")).read_text().splitlines()[0])["session"]
    append_labels(labels_path(root), [
        Label(session=session, step=1, source="review", verdict="correct", ts=1_000_100.0),
        Label(session=session, step=3, source="review", verdict="wrong", ts=1_000_101.0,
              corrected_action={"type": "right_click", "x": 20, "y": 370}, note="the menu is a bit higher"),
    ])
    for name in ("constitution.md", "goals.md", "config.yaml", "memory.md", "memory.previous.md", "state.json",
                 "state.previous.json", "instance.lock", "control.json"):
        (root / name).unlink(missing_ok=True)
    shutil.rmtree(root / "scratch", ignore_errors=True)
    shutil.rmtree(root / "skills", ignore_errors=True)
    print(f"recorded session {session} in {root}")


if __name__ == "__main__":
    main()
