"""A rollout as the narrator reads it: its screenshots in order, and the actions between them, from its own home.

Each step's journal records the screenshot it observed (archived in the rollout's home, `screenshots/`) and the
actions it decided (in the screenshot's pixels). The screenshots of a rollout are the steps' ones followed by
the final screen (`final.png`, taken when the session ended, what the checker looked at): step i's action lies
between screenshot i and screenshot i + 1, as between OSWorld's `step_i.png` files. A step whose screenshot
was not archived, or that dispatched nothing and decided nothing, is left out of the narrative.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conway.evals.judge.agent_s3 import pyautogui_code


@dataclass
class Trajectory:
    screenshots: list[Path] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    """The action between screenshot i and i + 1, as PyAutoGUI code."""
    problem: str | None = None

    @property
    def initial(self) -> Path | None:
        return self.screenshots[0] if self.screenshots else None

    @property
    def final(self) -> Path | None:
        return self.screenshots[-1] if self.screenshots else None


def read_trajectory(report_dir: Path, record: dict[str, Any]) -> Trajectory:
    """The rollout of `record` (a rollout set's case) read from its home beside the report."""
    from conway.errors import UserError
    from conway.experience.steps import collect_records, screenshot_file

    out = Trajectory()
    home = record.get("home")
    if not isinstance(home, str):
        out.problem = "the rollout has no home (it never ran)"
        return out
    root = report_dir / home
    try:
        steps, *_ = collect_records(root / "journal", home_root=root)
    except UserError as exc:
        out.problem = str(exc)
        return out
    steps = [s for s in steps if s.get("session") == record.get("session") and s.get("actor") != "human"]
    for s in steps:
        shot = screenshot_file(s, root)
        actions = (s.get("decision") or {}).get("actions") or []
        if shot is None or not shot.is_file() or not actions:
            continue
        out.screenshots.append(shot)
        out.codes.append(pyautogui_code(actions))
    final = (record.get("image") or {}).get("path") if isinstance(record.get("image"), dict) else None
    if final and (report_dir / final).is_file():
        out.screenshots.append(report_dir / final)
    elif out.codes:  # no final screen: the last step's action has no after to narrate
        out.codes.pop()
    return out
