"""Button-board tasks through the real loop: run them, label what was practised, score held-out runs.

    record = run_task(home, seed, index, workdir, policy_overrides, display=":5")   # app + `conway start` + check
    labels = label_practice(home, records, grid=28)  # labels.jsonl: acceptance results + hindsight targets
    summary = compare(base_records, candidate_records)  # verified success rates, Wilson 95% intervals

One task is one single session: the board app (`button_board.py app`) is started on the display with its log
in a fresh tools working directory, `conway start --task-file … --execute` runs the loop with the real GUI
tool, and Conway's own acceptance check (`button_board.py check`: the first press was the named button)
decides success. Nothing here reads the model's word: `verified` comes from the session report Conway
wrote, the target and every button's box from the app's `ready` log line.

Labels (`conway.experience.labels`, source `task-check`): every step of a practised session up to and including its
first click gets the session's verified outcome. A verified session's step is labelled correct as it was;
any other step gets a hindsight correction (`hindsight: true`): a click on the target's box, which the app
logged itself, with the box kept as `target_box`. Training can include or exclude hindsight rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.evals.stats import rate_record
from conway.store.home import Home
from scripts.demos import button_board as bb

APP = Path(bb.__file__).resolve()


def bare_home(home: Home) -> None:
    """Make a fresh home's prompt rebuildable from its journal: empty constitution and goals, no skills.

    Exported loop steps are trained on a rebuilt prompt (`conway.experience.conversation.step_context`); with nothing in
    the home beyond the task (and the host facts, which the journal records), the rebuilt prompt is the one the loop
    sent (same `prompt_sha256`).
    """
    home.constitution.write_text("", encoding="utf-8")
    home.goals.write_text("", encoding="utf-8")
    skills = home.root / "skills"
    if skills.is_dir():
        for skill in skills.iterdir():
            if skill.is_dir() and (skill / "SKILL.md").is_file():
                for f in sorted(skill.rglob("*"), reverse=True):
                    f.rmdir() if f.is_dir() else f.unlink()
                skill.rmdir()


def _wait_ready(log: Path, app: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = bb.read_ready(log)
        if ready is not None:
            return ready
        if app.poll() is not None:
            err = (app.stderr.read() if app.stderr else b"").decode(errors="replace").strip().splitlines()
            raise UserError(f"the button board did not start (exit {app.returncode}): "
                            f"{err[-1] if err else 'no message'}")
        time.sleep(0.02)
    raise UserError(f"the button board did not show within {timeout:g} s")


def run_task(home: Path, seed: int, index: int, workdir: Path, policy: list[str], *, display: str,
             count: int = 1, board: str = "small", max_steps: int = 1, max_seconds: float = 60.0,
             env: dict[str, str] | None = None, conway: list[str] | None = None) -> dict[str, Any]:
    """One task through the real loop; the record says what Conway verified (never what the model declared)."""
    workdir.mkdir(parents=True, exist_ok=False)
    log, task, report = workdir / "button-log.jsonl", workdir / "task.md", workdir / "session.json"
    log.write_text("", encoding="utf-8")
    task.write_text(bb.task_file(seed, index, count=count, board=board), encoding="utf-8")
    env = {**(env or os.environ), "DISPLAY": display}
    started = time.monotonic()
    app = subprocess.Popen([sys.executable, str(APP), "app", str(log), "--seed", str(seed), "--index", str(index),
                            "--board", board, "--count", str(count), "--x", "0", "--y", "0"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        ready = _wait_ready(log, app, 20.0)
        # `conway start --task-file` runs it through conway.session.task_run, the home passed explicitly
        cmd = [*(conway or [sys.executable, "-m", "conway.cli.main"]), "--home", str(home), "start", "--task-file",
               str(task), "--execute",
               "--max-steps", str(max_steps), "--max-seconds", str(max_seconds), "--quiet", "--output", str(report),
               f"tools.workdir={workdir}", "tools.enabled=[gui]", *policy]
        proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=max_seconds + 120)
    finally:
        app.kill()
        app.wait()
    out = proc.stdout.strip().splitlines()
    rec: dict[str, Any] = {"seed": seed, "index": index, "board": board, "count": count, "target": ready["target"],
                           "target_box": ready["buttons"][ready["target"]], "buttons": ready["buttons"],
                           "first_press": bb.first_press(log), "exit": proc.returncode, "workdir": str(workdir),
                           "seconds": round(time.monotonic() - started, 2)}
    if not report.exists():  # the session did not finish its report: a setup error, said in its last line
        rec.update(verified=False, session=None, error=out[-1] if out else f"exit {proc.returncode}")
        return rec
    data = json.loads(report.read_text(encoding="utf-8"))
    s = data.get("summary") or {}
    rec.update(verified=s.get("verified") is True, session=s.get("session"), steps=s.get("steps"),
               declared=(s.get("declared") or {}).get("status"), model_id=data.get("model_id"),
               observed=[c.get("observed") for c in data.get("cases") or []])
    return rec


# --- labels ------------------------------------------------------------------------------------------------


def snap(box: list[float], grid: int, size: tuple[int, int]) -> tuple[float, float]:
    """The centre of a `grid`-px cell of an image of `size` that lies in `box`, nearest the box's centre."""
    out = []
    for lo, hi, n in ((box[0], box[2], size[0]), (box[1], box[3], size[1])):
        centre = (lo + hi) / 2
        cands = [(c + 0.5) * grid for c in range(max(1, n // grid)) if lo <= (c + 0.5) * grid <= hi] if grid else []
        out.append(min(cands, key=lambda v: abs(v - centre)) if cands else centre)
    return out[0], out[1]


def _first_click(step: dict[str, Any]) -> dict[str, Any] | None:
    for a in (step.get("decision") or {}).get("actions") or []:
        if isinstance(a, dict) and a.get("type") in ("click", "double_click", "triple_click", "right_click"):
            return a
    return None


def practice_labels(home: Home, records: list[dict[str, Any]], grid: int = 0) -> list[Any]:
    """Labels for the practised sessions' steps (up to each session's first click), from Conway's own checks.

    A verified session's steps are correct as recorded; every other step gets a hindsight correction: a click
    on the target's box from the app's `ready` log (its cell-centre on a `grid`-px grid when grid > 0).
    """
    from conway.experience.labels import Label
    from conway.experience.steps import steps_from_events
    from conway.store.journal import read_journal

    by_session = {r["session"]: r for r in records if r.get("session")}
    labels = []
    seen: set[str] = set()
    for step in steps_from_events(read_journal(home.journal_dir).events):
        rec = by_session.get(step["session"])
        if rec is None or step["session"] in seen or step.get("observation") is None:
            continue
        box = [float(v) for v in rec["target_box"]]
        click = _first_click(step)
        if click is not None:
            seen.add(step["session"])  # later steps cannot change the first press
        captured = tuple((step.get("observation") or {}).get("captured_size") or (0, 0))
        where = f"{rec['target']!r} at {[int(v) for v in box]}"
        if rec["verified"]:
            labels.append(Label(session=step["session"], step=step["step"], source="task-check",
                                verdict="correct", success="success", target_box=box,
                                note=f"verified by the acceptance check (first press {rec['first_press']}); "
                                     f"target {where} from the board's ready log"))
            continue
        x, y = snap(box, grid, captured) if captured[0] else ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        labels.append(Label(session=step["session"], step=step["step"], source="task-check", verdict="wrong",
                            success="failure", hindsight=True, target_box=box,
                            corrected_action={"type": "click", "x": x, "y": y, "button": "left"},
                            note=f"hindsight: the acceptance check failed (first press "
                                 f"{rec['first_press'] or 'none'}); the board's ready log puts the target {where}"))
    return labels


def label_practice(home: Home, records: list[dict[str, Any]], grid: int = 0) -> list[Any]:
    """Append `practice_labels` to the home's labels.jsonl; returns them."""
    from conway.experience.labels import append_labels, labels_path

    labels = practice_labels(home, records, grid)
    append_labels(labels_path(home.root), labels)
    return labels


# --- scores ------------------------------------------------------------------------------------------------


def score(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Verified success rate of a set of task runs, with its Wilson 95% interval."""
    n, ok = len(records), sum(1 for r in records if r.get("verified"))
    out = rate_record(ok, n)
    return {"tasks": n, "verified": ok, "rate": out["hit_rate"], "ci95": out["hit_rate_ci95"],
            "errors": sum(1 for r in records if r.get("error")),
            "declared_done": sum(1 for r in records if r.get("declared") == "DONE"),
            "pressed_any": sum(1 for r in records if r.get("first_press"))}


def compare(base: list[dict[str, Any]], candidate: list[dict[str, Any]]) -> dict[str, Any]:
    """Base vs candidate on the same held-out tasks: rates, intervals, difference, whether intervals separate."""
    from conway.evals.candidates import newcombe_difference

    b, c = score(base), score(candidate)
    n = min(b["tasks"], c["tasks"])
    lo, hi = newcombe_difference(b["verified"], b["tasks"], c["verified"], c["tasks"]) if n else (-1.0, 1.0)
    return {"base": b, "candidate": c, "difference": round(c["rate"] - b["rate"], 4),
            "difference_ci95": [round(lo, 4), round(hi, 4)],
            "intervals_separated": bool(n) and c["ci95"][0] > b["ci95"][1],
            "paired": {"both": sum(1 for x, y in zip(base, candidate) if x.get("verified") and y.get("verified")),
                       "only_base": sum(1 for x, y in zip(base, candidate) if x.get("verified")
                                        and not y.get("verified")),
                       "only_candidate": sum(1 for x, y in zip(base, candidate) if y.get("verified")
                                             and not x.get("verified"))}}


def random_click_rate(records: list[dict[str, Any]], size: tuple[int, int]) -> float:
    """Expected verified rate of one uniformly random click per task (the target box's share of the screen)."""
    if not records:
        return 0.0
    area = size[0] * size[1]
    return sum((r["target_box"][2] - r["target_box"][0] + 1) * (r["target_box"][3] - r["target_box"][1] + 1) / area
               for r in records) / len(records)

