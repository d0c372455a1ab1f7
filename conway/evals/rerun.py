"""`conway rerun --session ID`: a recorded session's actions again, without the model, on a fresh disposable desktop.

For a session of `conway tasks run` (its home under the report's `REPORT.tasks/`), the task comes from the report's
suite and its setup steps run first; at the end its checker scores the desktop as the replay left it, beside the
score the recorded run got. Before each action the screen is compared with the one recorded before it (the change
score: the share of pixels that differ, in grey); the first step past `--threshold` is the first
divergence, written side by side (recorded | now). A session of `conway run` replays on a bare desktop, unscored.

What is replayed: every action that ran (a `result` that succeeded: the agent's and, from a takeover, the
person's `human` steps), in order; waits and finishes are not actions on the screen. After the last action, the
screen it left is compared too, as `end` (for a task, the screen kept when its session ended, `final.png`; else
the one the next decision saw). A recorded screenshot that
was rotated away is said, and its step is replayed without comparing. This tells a flaky environment (the same
actions, a different screen or score) from a flaky model. A session that saw the mock's synthetic screen is
refused in one line: no desktop reproduces it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conway.actions import Finish, Wait, _Action, parse_action
from conway.errors import ExitCode, UserError
from conway.store.home import Home
from conway.store.journal import read_journal

THRESHOLD = 0.0005
"""A step diverges when more than this share of its screen's pixels differ from the recorded screen (0.05%: 512
pixels of 1280x800, a few words of text; a blinking caret is a quarter of that)."""
SETTLE_S = 0.6
"""How long the desktop is given after an action before the next screen is looked at."""
SETTLE_LIMIT_S = 5.0
"""The longest the replay waits for the screen to settle before comparing it."""
PIXEL_DIFF = 24
"""A pixel counts as changed when its grey level moved by more than this (of 255)."""


@dataclass
class ReplayStep:
    step: int
    action: dict[str, Any]
    actor: str
    screenshot: str | None
    """The recorded screen the action was done on (relative to the home), None when none was kept."""


@dataclass
class RerunResult:
    session: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    first_divergence: dict[str, Any] | None = None
    missing: int = 0
    task: str | None = None
    score: float | None = None
    recorded_score: float | None = None


def replay_steps(home: Home, session: str) -> list[ReplayStep]:
    """The session's actions that ran, in order, each with the screenshot it was done on."""
    events = [e for e in read_journal(home.journal_dir).events if e.get("session") == session]
    if not events:
        raise UserError(f"no session {session!r} in {home.journal_dir} (conway status names the latest)")
    _refuse_synthetic(session, events)
    out: list[ReplayStep] = []
    shots: dict[int, str | None] = {}
    used: set[int] = set()
    for ev in events:
        p, step = ev.get("payload") or {}, int(ev.get("step") or 0)
        if ev.get("kind") == "observation":
            shots[step] = p.get("screenshot")
        elif ev.get("kind") == "human" and isinstance(p.get("action"), dict) and p.get("valid") is not False:
            out.append(ReplayStep(step, p["action"], "human", (p.get("observation") or {}).get("screenshot")))
        elif ev.get("kind") == "result" and p.get("ok") and not p.get("dry_run") and isinstance(p.get("action"), dict):
            action = parse_action(p["action"])
            if isinstance(action, (Wait, Finish)) or not isinstance(action, _Action):
                continue
            shot = shots.get(step) if step not in used else None  # a decision's later actions: no screen of theirs
            used.add(step)
            out.append(ReplayStep(step, p["action"], "agent", shot))
    last = max((s.step for s in out), default=-1)
    after = [(n, shot) for n, shot in shots.items() if n > last]
    if out and after:  # the screen the last action left (seen by the next decision): compared, not acted on
        out.append(ReplayStep(after[0][0], {"type": "end"}, "end", after[0][1]))
    return out


def _refuse_synthetic(session: str, events: list[dict[str, Any]]) -> None:
    """A session that saw the mock's synthetic screen cannot be compared with a desktop: every step would
    "diverge" (99.9% of the pixels), which says nothing about the environment or the model."""
    sources = {(e.get("payload") or {}).get("source") for e in events if e.get("kind") == "observation"}
    if "synthetic" in sources:
        raise UserError(f"session {session} saw a synthetic screen (the mock's offline demo, observe.source "
                        "synthetic), which no desktop reproduces: rerun compares recorded screens with a real "
                        "one, so there is nothing to compare")


def change_score(a: Any, b: Any) -> float:
    """The share of pixels that differ between two screens (Pillow images, in grey; the second brought to the
    first's size when they differ)."""
    import numpy as np

    grey_b = b.convert("L") if b.size == a.size else b.convert("L").resize(a.size)
    ga = np.asarray(a.convert("L"), dtype=np.int16)
    gb = np.asarray(grey_b, dtype=np.int16)
    return float((np.abs(ga - gb) > PIXEL_DIFF).mean())


def side_by_side(recorded: Any, now: Any, path: Path) -> None:
    from PIL import Image

    h = max(recorded.height, now.height)
    out = Image.new("RGB", (recorded.width + now.width + 8, h), (255, 0, 0))
    out.paste(recorded.convert("RGB"), (0, 0))
    out.paste(now.convert("RGB"), (recorded.width + 8, 0))
    out.save(path)


def find_task_case(home: Home, session: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(report, case) of the `tasks run` that ran this session in this home, or None (not a task's home)."""
    from conway.evals.report import load_report

    folder = home.root.resolve().parent.parent  # REPORT.tasks/NN-id/home
    if not folder.name.endswith(".tasks"):
        return None
    stem = folder.name[: -len(".tasks")]
    for report in sorted(folder.parent.glob(stem + ".*")):
        if report.is_file() and report != folder:
            try:
                data, cases = load_report(report)
            except UserError:
                continue
            case = next((c for c in cases if c.get("session") == session), None)
            if case is not None:
                return data, case
    return None


def rerun(home: Home, session: str, *, output: str | None = None, threshold: float = THRESHOLD,
          say: Callable[[str], None] = print, settings: Any = None) -> int:
    """`settings`: the `tasks` section naming the desktop provider (None: the one the task's report ran on, else
    the local desktop)."""
    if not 0 < threshold < 1:
        raise UserError(f"--threshold must be between 0 and 1 (got {threshold})")
    steps = replay_steps(home, session)
    found = find_task_case(home, session)
    final = home.root.parent / "final.png"  # a task's screen once its session ended (what its checker saw)
    if found and steps and steps[-1].actor == "end" and final.is_file():
        steps[-1].screenshot = str(final.resolve())
    task, cache = _task_of(found) if found else (None, None)
    out = Path(output).expanduser() if output else home.root / "reruns" / f"{session}-{time.strftime('%Y%m%dT%H%M%S')}"
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out} exists and is not empty; name a new folder with --output")
    out.mkdir(parents=True, exist_ok=True)
    result = RerunResult(session=session, task=task.id if task else None,
                         recorded_score=found[1].get("score") if found else None)
    say(f"rerun of {session}: {len(steps)} action(s)" + (f", task {task.id} after its setup" if task else
                                                         " on a bare desktop (not a task's session: unscored)"))
    _replay_on_desktop(home, steps, task, cache, result, out, threshold, say, _settings(settings, found))
    (out / "rerun.json").write_text(json.dumps(result.__dict__, indent=2, default=str), encoding="utf-8")
    return _verdict(result, out, say)


def _task_of(found: tuple[dict[str, Any], dict[str, Any]]) -> tuple[Any, Path | None]:
    from conway.tasks.task import load_suite

    data, case = found
    params = data.get("parameters") or {}
    suite = load_suite(params.get("suite"))
    task = next((t for t in suite.tasks if t.id == case.get("task")), None)
    if task is None:
        raise UserError(f"task {case.get('task')!r} is no longer in the suite {params.get('suite')}")
    return task, Path(params["cache"]) if params.get("cache") else None


def _settings(settings: Any, found: tuple[dict[str, Any], dict[str, Any]] | None) -> Any:
    """The desktop provider's settings: the ones given, else the provider the task's report ran on, else local."""
    from conway.config import TasksConfig

    if settings is not None:
        return settings
    ran = ((found[0].get("parameters") or {}).get("desktop") or {}) if found else {}
    if ran.get("provider"):
        return TasksConfig(desktop=ran["provider"], desktop_url=ran.get("url"), desktop_options=ran.get("options") or {})
    return TasksConfig()


def _replay_on_desktop(home: Home, steps: list[ReplayStep], task: Any, cache: Path | None, result: RerunResult,
                       out: Path, threshold: float, say: Callable[[str], None], settings: Any) -> None:
    from conway.desktops import DesktopRequest, StepLimits, open_desktop

    with open_desktop(settings, DesktopRequest(task.id if task else "rerun", cache_dir=cache)) as desk:
        limits = StepLimits(window_wait_s=10.0)  # the setup's own default window wait, as before the seam
        if task is not None:
            desk.run_steps(list(task.config), limits)
        screen, toolbox = _parts(home, desk)
        try:
            for n, st in enumerate(steps, 1):
                obs = settled(screen)
                result.steps.append(_compare(home, st, obs, n, result, out, threshold))
                if st.actor == "end":
                    break
                action = parse_action(st.action)
                done = toolbox.run(action, obs.geometry) if isinstance(action, _Action) else None
                result.steps[-1]["ok"] = bool(done and done.ok)
                time.sleep(SETTLE_S)
            if task is not None:
                from conway.tasks.evaluate import evaluate

                evaluated = evaluate(task, desk.task_env(), declared_fail=False,
                                     run_step=lambda step, env: desk.run_steps([step], limits))
                result.score = float(evaluated.score)
        finally:
            screen.close()
            toolbox.close()
    if result.missing:
        say(f"{result.missing} recorded screenshot(s) were rotated away: those steps were replayed, not compared")


def settled(screen: Any, limit_s: float = SETTLE_LIMIT_S) -> Any:
    """The screen once it stopped changing (two looks `SETTLE_S` apart agree, a blinking caret aside), or as it
    is after `limit_s`: a loaded desktop draws late, and the replay must not race it."""
    last = screen.observe()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(SETTLE_S / 2)
        now = screen.observe()
        if now.change_key == last.change_key:
            return now
        last = now
    return last


def _parts(home: Home, desk: Any) -> tuple[Any, Any]:
    """The desktop's observer (no screenshots kept: the replay compares, it does not archive) and its toolbox."""
    from conway.config import ConwayConfig

    cfg = desk.task_config(ConwayConfig.model_validate({"observe": {"keep_screenshots": 0}}))
    return desk.observer(cfg, home), desk.toolbox(cfg, home)


def _compare(home: Home, st: ReplayStep, obs: Any, n: int, result: RerunResult, out: Path,
             threshold: float) -> dict[str, Any]:
    from PIL import Image

    row: dict[str, Any] = {"n": n, "step": st.step, "actor": st.actor, "action": st.action, "change": None}
    if not st.screenshot:
        row["compared"] = "no recorded screen for this action"
        return row
    path = home.root / st.screenshot
    if not path.is_file():
        result.missing += 1
        row["compared"] = "the recorded screenshot was rotated away"
        return row
    recorded = Image.open(path)
    now = obs.image if obs.image is not None else Image.open(__import__("io").BytesIO(obs.png))
    row["change"] = round(change_score(recorded, now), 5)
    if row["change"] > threshold and result.first_divergence is None:
        pic = out / f"divergence-{n:03d}.png"
        side_by_side(recorded, now, pic)
        result.first_divergence = {"n": n, "step": st.step, "change": row["change"], "side_by_side": str(pic),
                                   "action": st.action}
    return row


def _verdict(result: RerunResult, out: Path, say: Callable[[str], None]) -> int:
    for row in result.steps:
        change = "-" if row["change"] is None else f"{row['change']:.2%}"
        say(f"  {row['n']:>3}. step {row['step']} ({row['actor']}) {row['action'].get('type')}: screen change "
            f"{change}" + (f" ({row['compared']})" if row.get("compared") else ""))
    d = result.first_divergence
    say("first divergence: " + (f"action {d['n']} (step {d['step']}), {d['change']:.2%} of the screen differs; "
                                f"side by side: {d['side_by_side']}" if d else "none"))
    say(f"wrote {out / 'rerun.json'}")
    if result.task is None:  # nothing to score: the screens are the verdict
        return ExitCode.PASSED if d is None else ExitCode.NOT_PASSED
    same = result.score == result.recorded_score
    say(f"score: {result.score:g} now, {result.recorded_score} recorded: " + ("reproduced" if same else "NOT reproduced"))
    return ExitCode.PASSED if same else ExitCode.NOT_PASSED
