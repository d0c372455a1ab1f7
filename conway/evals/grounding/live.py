"""Live-application cases: start a suite's apps (or take the desktop as it is), screenshot, harvest targets.

For each app of the suite: start it, wait until its targets appear and
settle (two identical harvests after ``settle_s``), take the screenshot,
harvest again, stop the app. Targets come from the accessibility tree
(AT-SPI) or, for toolkits without one, from the app's own report. A target
is kept when it is a clickable role, showing, visible, enabled and named,
lies wholly on the captured screen after mapping its box from input
coordinates to screenshot pixels (HiDPI scale and monitor origin), is at
least ``min_size_px`` on each side, is not covered by another window (X11
stacking order), and its instruction names exactly one target on the
screen. At most ``per_screen`` are kept: a seeded round-robin over roles, so
no role crowds out the others. Nothing is ever clicked.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conway.errors import UserError
from conway.evals.grounding.cases import GroundingCase
from conway.evals.grounding.suite import AppSuite, SuiteApp, app_command, instruction_for, load_suite
from conway.geometry import ScreenGeometry, input_to_captured

TARGETS_ENV = "CONWAY_GROUNDING_TARGETS"
"""Where an app-report app writes its widgets (JSON: {"window": [x, y, w, h], "targets": [...]})."""

ScreenGrab = Callable[[], tuple[Any, ScreenGeometry]]
"""Returns (Pillow RGB image of the screen, its ScreenGeometry)."""


def grab_screen() -> tuple[Any, ScreenGeometry]:
    """The primary monitor, as the loop's observer captures it."""
    from conway.observe.screen import ScreenObserver

    with ScreenObserver() as so:
        cap = so.capture()
    return cap.image().copy(), cap.geometry()


# --- choosing targets ----------------------------------------------------------------------


@dataclass
class Target:
    role: str
    name: str
    box: tuple[float, float, float, float]
    """Screenshot pixels (x0, y0, x1, y1)."""
    input_box: list[int]
    """Input coordinates [x, y, w, h] as the accessibility tree (or app) reported them."""
    instruction: str


def _enabled(states: set[str]) -> bool:
    return "sensitive" in states or "enabled" in states


def select_targets(nodes: list[dict[str, Any]], geometry: ScreenGeometry, suite: AppSuite, app: SuiteApp | None, *,
                   stack: list[Any] | None, pids: set[int], seed: int, per_screen: int, screen: str
                   ) -> tuple[list[Target], dict[str, int]]:
    """The kept targets of one screen and how many were left out for each reason."""
    dropped: dict[str, int] = {}
    roles = set(suite.roles)
    found: list[Target] = []
    for n in nodes:
        role = str(n.get("role") or "")
        if role not in roles:
            continue  # not a click target at all: not counted
        kept = _node_target(n, role, geometry, suite, app, stack=stack, pids=pids)
        if isinstance(kept, str):
            dropped[kept] = dropped.get(kept, 0) + 1
        else:
            found.append(kept)
    return balanced(_unique_instructions(found, dropped), per_screen, f"{seed}:{screen}"), dropped


def _node_target(n: dict[str, Any], role: str, geometry: ScreenGeometry, suite: AppSuite, app: SuiteApp | None, *,
                 stack: list[Any] | None, pids: set[int]) -> Target | str:
    """One accessible node as a target, or why it is left out (a reason counted in the harvest's report)."""
    name = " ".join(str(n.get("name") or "").split())
    states = set(n.get("states") or [])
    b = n.get("bounds")
    why = _not_clickable(role, name, b, states)
    if why:
        return why
    x, y, w, h = (float(v) for v in b)
    x0, y0 = input_to_captured(x, y, geometry)
    x1, y1 = input_to_captured(x + w, y + h, geometry)
    if x0 < 0 or y0 < 0 or x1 > geometry.captured_w or y1 > geometry.captured_h:
        return "off screen"
    if min(x1 - x0, y1 - y0) < suite.min_size_px:
        return "too small"
    if stack is not None:
        from conway.observe.screen_targets import occlusion

        wb = n.get("window_bounds")
        owners = set(n.get("pids") or []) | ({int(n["pid"])} if n.get("pid") else set()) | pids
        covered = occlusion(stack, (x, y, w, h), owners, tuple(wb) if wb else None)
        if covered:
            return "covered by another window" if covered.startswith("covered") else "window not found"
    return Target(role=role, name=name, box=(x0, y0, x1, y1), input_box=[int(v) for v in b],
                  instruction=instruction_for(role, name, suite, app))


def _not_clickable(role: str, name: str, bounds: Any, states: set[str]) -> str | None:
    """Why a node of a target role cannot be asked for by name and clicked, or None."""
    if not name:
        return "unnamed"
    if not bounds or len(bounds) != 4:
        return "no bounds"
    if not ({"showing", "visible"} <= states):
        return "not visible"
    if not _enabled(states):
        return "disabled"
    if role in ("text", "entry") and "editable" not in states:
        return "read-only text"
    return None


def _unique_instructions(found: list[Target], dropped: dict[str, int]) -> list[Target]:
    """The targets whose instruction names only them; the others are counted in `dropped` as ambiguous."""
    by_text: dict[str, list[Target]] = {}
    for t in found:
        by_text.setdefault(t.instruction, []).append(t)
    unique = []
    for ts in by_text.values():
        if len(ts) > 1:
            dropped["ambiguous (same instruction twice)"] = dropped.get("ambiguous (same instruction twice)", 0) + len(ts)
        else:
            unique.append(ts[0])
    return unique


def balanced(targets: list[Target], n: int, seed: str) -> list[Target]:
    """Up to n targets: a seeded round-robin over roles (each role's targets shuffled)."""
    rng = random.Random(f"conway-grounding-harvest:{seed}")
    groups: dict[str, list[Target]] = {}
    for t in sorted(targets, key=lambda t: (t.role, t.name, t.input_box)):
        groups.setdefault(t.role, []).append(t)
    for ts in groups.values():
        rng.shuffle(ts)
    order = sorted(groups)
    rng.shuffle(order)
    out: list[Target] = []
    while len(out) < n and any(groups.values()):
        for role in order:
            if groups[role] and len(out) < n:
                out.append(groups[role].pop())
    return sorted(out, key=lambda t: (t.box[1], t.box[0]))


# --- running the apps ---------------------------------------------------------------------


class RunningApp:
    """One suite app, started in its own process group and stopped by it."""

    def __init__(self, app: SuiteApp, suite_dir: Path, workdir: Path):
        self.app = app
        self.targets_file = workdir / f"{app.name}.targets.json"
        self.log = workdir / f"{app.name}.log"
        env = {k: v for k, v in os.environ.items() if k != "NO_AT_BRIDGE"}
        env.update(app.env)
        env[TARGETS_ENV] = str(self.targets_file)
        argv = app_command(app, suite_dir)
        try:
            self.proc = subprocess.Popen(argv, cwd=str(suite_dir), env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=open(self.log, "wb"),
                                         start_new_session=True)
        except OSError as exc:
            raise UserError(f"cannot start {app.name} ({argv[0]}): {exc.strerror or exc}") from None

    def pids(self) -> set[int]:
        out = {self.proc.pid}
        try:
            import psutil

            out |= {c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)}
        except Exception:
            pass
        return out

    def problem(self) -> str | None:
        if self.proc.poll() is None:
            return None
        tail = self.log.read_text(errors="replace").strip().splitlines()[-3:] if self.log.exists() else []
        return f"{self.app.name} exited with code {self.proc.returncode}" + (f": {' | '.join(tail)}" if tail else "")

    def read_report(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.targets_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        window = data.get("window")
        return [{**t, "pid": self.proc.pid, "window_bounds": window} for t in data.get("targets") or []
                if isinstance(t, dict)]

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    self.proc.kill()
                self.proc.wait()


def _fingerprint(nodes: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((str(n.get("role")), str(n.get("name")), tuple(n.get("bounds") or ()),
                   "showing" in (n.get("states") or [])) for n in nodes)


def settled_nodes(read: Callable[[], list[dict[str, Any]]], *, settle_s: float, timeout_s: float,
                  alive: Callable[[], str | None] = lambda: None, what: str = "the app") -> list[dict[str, Any]]:
    """Poll `read` until it returns nodes, wait `settle_s`, then until two reads agree."""
    deadline = time.monotonic() + timeout_s
    nodes = read()
    while not nodes:
        problem = alive()
        if problem:
            raise UserError(problem)
        if time.monotonic() > deadline:
            raise UserError(f"no accessible target of {what} appeared within {timeout_s:g} s")
        time.sleep(0.3)
        nodes = read()
    time.sleep(settle_s)
    last = read()
    while True:
        time.sleep(0.25)
        now = read()
        if now and _fingerprint(now) == _fingerprint(last):
            return now
        if time.monotonic() > deadline + 10:
            raise UserError(f"the targets of {what} kept changing for {timeout_s + 10:g} s (not settled)")
        last = now


# --- screens -----------------------------------------------------------------------------


@dataclass
class Harvest:
    cases: list[GroundingCase]
    parameters: dict[str, Any]
    images_dir: Path | None = None
    screens: list[dict[str, Any]] = field(default_factory=list)

    def discard(self) -> None:
        if self.images_dir is not None and self.images_dir.exists():
            shutil.rmtree(self.images_dir, ignore_errors=True)


def _save_png(image: Any, path: Path) -> tuple[bytes, str]:
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    data = buf.getvalue()
    path.write_bytes(data)
    return data, hashlib.sha256(data).hexdigest()


def _screen_cases(screen: str, targets: list[Target], path: Path, digest: str, geometry: ScreenGeometry,
                  source: str) -> list[GroundingCase]:
    size = (geometry.captured_w, geometry.captured_h)
    return [GroundingCase(case_id=f"{screen}:{t.role}:{t.name}", instruction=t.instruction, box=t.box, size=size,
                          source=source, type=t.role, split=screen, load_image=(lambda p=path: p.read_bytes()),
                          image_ref={"path": str(path), "sha256": digest, "screen": screen},
                          meta={"name": t.name, "input_box": t.input_box}) for t in targets]


def _stack(enabled: bool) -> tuple[list[Any] | None, str | None]:
    if not enabled:
        return None, "not checked (turned off)"
    from conway.observe.screen_targets import window_stack

    return window_stack()


def harvest_screen(name: str, read: Callable[[], list[dict[str, Any]]], *, suite: AppSuite, app: SuiteApp | None,
                   images_dir: Path, grab: ScreenGrab, seed: int, per_screen: int, pids: set[int],
                   settle_s: float, timeout_s: float, alive: Callable[[], str | None] = lambda: None,
                   check_occlusion: bool = True) -> tuple[list[GroundingCase], dict[str, Any]]:
    settled_nodes(read, settle_s=settle_s, timeout_s=timeout_s, alive=alive, what=name)
    image, geometry = grab()
    nodes = read()  # the tree as the screenshot shows it
    stack, stack_problem = _stack(check_occlusion)
    targets, dropped = select_targets(nodes, geometry, suite, app, stack=stack, pids=pids, seed=seed,
                                      per_screen=per_screen, screen=name)
    path = images_dir / f"{name}.png"
    _, digest = _save_png(image, path)
    info = {"screen": name, "image": str(path), "sha256": digest, "captured_size": list(geometry.captured_size),
            "logical_size": list(geometry.logical_size), "origin": [geometry.origin_x, geometry.origin_y],
            "nodes": len(nodes), "kept": len(targets), "dropped": dropped,
            "occlusion": "checked (X11 stacking order)" if stack is not None else stack_problem}
    return _screen_cases(name, targets, path, digest, geometry, source=name), info


def harvest_suite(suite_path: str, images_dir: Path, *, grab: ScreenGrab = grab_screen, per_screen: int | None = None,
                  seed: int = 0, say: Callable[[str], None] = print, check_occlusion: bool = True) -> Harvest:
    """Run every app of the suite one after the other; cases of all screens, in screen order."""
    suite, suite_dir = load_suite(suite_path)
    n = per_screen or suite.per_screen
    images_dir.mkdir(parents=False, exist_ok=False)
    harvest = Harvest(cases=[], parameters={}, images_dir=images_dir)
    try:
        with tempfile.TemporaryDirectory(prefix="conway-grounding-") as tmp:
            for app in suite.apps:
                running = RunningApp(app, suite_dir, Path(tmp))
                try:
                    if app.targets == "atspi":
                        from conway.observe.screen_targets import atspi_nodes

                        def read(running: RunningApp = running) -> list[dict[str, Any]]:
                            nodes, _ = atspi_nodes(sorted(running.pids()))
                            return nodes
                    else:
                        read = running.read_report
                    cases, info = harvest_screen(app.name, read, suite=suite, app=app, images_dir=images_dir,
                                                 grab=grab, seed=seed, per_screen=n, pids=running.pids(),
                                                 settle_s=suite.settle_s if app.settle_s is None else app.settle_s,
                                                 timeout_s=app.start_timeout_s, alive=running.problem,
                                                 check_occlusion=check_occlusion)
                finally:
                    running.stop()
                info["targets_from"] = app.targets
                harvest.cases += cases
                harvest.screens.append(info)
                say(f"{app.name}: {info['kept']} target(s) kept of {info['nodes']} accessible node(s)"
                    + (f"; left out: {', '.join(f'{k} {v}' for k, v in sorted(info['dropped'].items()))}"
                       if info["dropped"] else "")
                    + ("" if stack_checked(info) else f"; occlusion NOT checked: {info['occlusion']}"))
    except BaseException:
        harvest.discard()
        raise
    harvest.parameters = {"suite": str(Path(suite_path).expanduser().resolve()), "suite_name": suite.name,
                          "per_screen": n, "screens": harvest.screens, "images": str(images_dir),
                          "harvest": "accessibility tree (AT-SPI) or app report; nothing clicked"}
    return harvest


def harvest_desktop(images_dir: Path, *, grab: ScreenGrab = grab_screen, per_screen: int | None = None,
                    seed: int = 0, say: Callable[[str], None] = print) -> Harvest:
    """The desktop as it is: every accessible application's targets on one screenshot."""
    from conway.observe.screen_targets import atspi_nodes

    suite = AppSuite(format="conway-grounding-suite/1", name="desktop", per_screen=per_screen or 24,
                  apps=[{"name": "desktop", "command": ["true"]}])
    nodes, why = atspi_nodes()
    if why:
        raise UserError(f"cannot read the desktop's accessibility tree: {why}")
    images_dir.mkdir(parents=False, exist_ok=False)
    harvest = Harvest(cases=[], parameters={}, images_dir=images_dir)
    try:
        def read() -> list[dict[str, Any]]:
            return atspi_nodes()[0]

        cases, info = harvest_screen("desktop", read, suite=suite, app=None, images_dir=images_dir, grab=grab,
                                     seed=seed, per_screen=suite.per_screen, pids=set(), settle_s=0.5, timeout_s=10)
    except BaseException:
        harvest.discard()
        raise
    for c in cases:  # on a desktop the application is the source
        c.source = next((str(n.get("app")) for n in nodes if n.get("name") == c.meta["name"]
                         and n.get("role") == c.type), "desktop")
    harvest.cases, harvest.screens = cases, [info]
    harvest.parameters = {"desktop": True, "per_screen": suite.per_screen, "screens": [info], "images": str(images_dir),
                          "harvest": "accessibility tree (AT-SPI); nothing clicked"}
    say(f"desktop: {info['kept']} target(s) kept of {info['nodes']} accessible node(s)"
        + ("" if stack_checked(info) else f"; occlusion NOT checked: {info['occlusion']}"))
    return harvest


def stack_checked(info: dict[str, Any]) -> bool:
    return str(info.get("occlusion", "")).startswith("checked")


def images_dir_for(report: Path) -> Path:
    return report.with_name(report.stem + ".images")


def harvest_for_check(out: Path, *, suite: str | None, desktop: bool, per_screen: int | None, seed: int,
                      samples: int | None, say: Callable[[str], None] = print) -> Harvest:
    """Harvest for `grounding-check` (screenshots go beside the report); UserError when nothing is usable."""
    from conway.evals.grounding.dataset import sample_cases

    images = images_dir_for(out)
    if images.exists():
        raise UserError(f"{images} (where the screenshots of a live run go) already exists; choose a new report name")
    loaded = load_suite(suite)[0] if suite else None  # a broken suite file is the first thing to say
    problem = _display_problem()
    if problem:
        raise UserError(f"live grounding cases need a screen: {problem}")
    if desktop or (loaded is not None and any(app.targets == "atspi" for app in loaded.apps)):
        problem = _accessibility_problem()  # before any app starts: without a bus every read comes back empty
        if problem:
            hint = ("; run it inside a session bus: dbus-run-session -- conway grounding-check …"
                    if "D-Bus" in problem else "")
            raise UserError(f"cannot read the accessibility tree (AT-SPI): {problem}{hint}")
    harvest = (harvest_suite(suite, images, per_screen=per_screen, seed=seed, say=say) if suite
               else harvest_desktop(images, per_screen=per_screen, seed=seed, say=say))
    if not harvest.cases:
        harvest.discard()
        raise UserError("no usable target was harvested (see the counts above); nothing to ask the model")
    harvest.cases = sample_cases(harvest.cases, samples, seed)
    harvest.parameters["samples"] = len(harvest.cases)
    return harvest


def _accessibility_problem() -> str | None:
    from conway.observe.accessibility import accessibility_problem

    return accessibility_problem()


def _display_problem() -> str | None:
    from conway.observe.screen import display_problem

    return display_problem()
