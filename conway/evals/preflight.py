"""`conway preflight [--desktop] --output FILE`: is this home and setup ready to run?

Checks, each reported with what was observed: the configuration validates;
constitution.md is there; recovery state (a pending intent in state.json, a
a lock held by a running agent, a torn journal tail); available memory; the model (endpoint
reachable and serving the configured model, or the local GGUF + mmproj
present and fitting). It never downloads anything. `--desktop` adds a
time-bounded screenshot in a subprocess; its temporary image is deleted and
never sent to a model. Without `--desktop` the report says desktop readiness
was not checked.

Exit 0 ready, 2 not ready (the failed checks are the reasons), 1 setup error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from ..config import ConwayConfig
from ..errors import UserError
from ..home import Home
from ..journal import intent_verdict, journal_files
from ..redact import redact_text
from ..state import InstanceLock, StateStore
from .readiness import Check, model_checks
from .report import Report, check_new_output, table

DESKTOP_TIMEOUT_S = 20.0

_SCREENSHOT = """\
import sys
import mss
import mss.tools
with mss.MSS() as m:
    mon = m.monitors[1]
    shot = m.grab(mon)
    mss.tools.to_png(shot.rgb, shot.size, output=sys.argv[1])
    print(shot.size.width, shot.size.height, mon["width"], mon["height"], mon["left"], mon["top"])
"""


def constitution_check(home: Home) -> Check:
    path = home.constitution
    if not path.is_file():
        return Check("constitution", "fail", f"no constitution.md in {home.root} (run `conway init`)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return Check("constitution", "fail", f"{path} is not UTF-8 text")
    except OSError as exc:
        return Check("constitution", "fail", f"cannot read {path}: {exc.strerror}")
    if not text.strip():
        return Check("constitution", "fail", f"{path} is empty")
    return Check("constitution", "ok", f"{path} ({len(text)} chars)")


def recovery_checks(home: Home) -> list[Check]:
    out = []
    state, note = StateStore(home.state, home.state_previous).load()
    pending = state.get("pending") if isinstance(state, dict) else None
    if pending and intent_verdict(home.journal_dir)[0] == "resolved":
        pending = None  # the journal has its outcome; state.json's copy is cleared lazily
    if note:
        out.append(Check("recovery: state.json", "warn", note))
    if pending:
        summary = pending.get("summary") if isinstance(pending, dict) else None
        out.append(Check("recovery: pending intent", "warn",
                         f"a previous run (session {state.get('session')}) stopped while dispatching "
                         f"{summary or 'an action'}; the next run records it as uncertain and does not replay it",
                         {"pending": pending}))
    else:
        out.append(Check("recovery: pending intent", "ok", "none"))
    holder = InstanceLock(home.lock).holder()
    if holder:  # only a lock actually held matters: the file itself stays after every run
        out.append(Check("recovery: lock", "warn", f"an agent is running on this home (pid {holder}); "
                         "run/start are refused until it stops"))
    else:
        left = _lock_pid(home.lock)
        out.append(Check("recovery: lock", "ok", "not held (no agent is running on this home)" + (
            f"; the run with pid {left} ended without releasing it (killed?)" if left else "")))
    files = journal_files(home.journal_dir) if home.journal_dir.exists() else []
    if not files:
        out.append(Check("recovery: journal tail", "ok", "no journal yet"))
    else:
        last = files[-1]
        size = last.stat().st_size
        torn = False
        if size:
            with open(last, "rb") as fh:
                fh.seek(size - 1)
                torn = fh.read(1) != b"\n"
        if torn:
            out.append(Check("recovery: journal tail", "warn", f"torn last line in {last.name} (a write was cut "
                             "off); it is isolated and skipped with a recovery event on the next run"))
        else:
            out.append(Check("recovery: journal tail", "ok", f"{last.name} ends cleanly"))
    return out


def _lock_pid(path: Path) -> str | None:
    """The pid a killed run left in the lock file (a clean run empties it)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text if text.isdigit() else None


def memory_check() -> Check:
    import psutil
    vm = psutil.virtual_memory()
    return Check("memory", "ok", f"{vm.available / 2**30:.1f} GiB available of {vm.total / 2**30:.1f} GiB",
                 {"available_bytes": vm.available, "total_bytes": vm.total})


def workdir_check(config: ConwayConfig, home: Home) -> Check:
    """The tools' working directory `run` uses (tools.workdir, else the home's scratch/) can be written."""
    path = Path(config.tools.workdir).expanduser() if config.tools.workdir else home.scratch
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent  # `run` creates the missing folders below the first existing one
    if not probe.is_dir():
        return Check("tools working directory", "fail", f"{path}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        return Check("tools working directory", "fail", f"{path}: {probe} is not writable")
    return Check("tools working directory", "ok", f"{path}" + ("" if path.exists() else " (created at start)"))


def desktop_check(timeout_s: float = DESKTOP_TIMEOUT_S) -> Check:
    """One screenshot in a subprocess with a deadline; the temporary image is deleted, never sent anywhere."""
    tmpdir = Path(tempfile.mkdtemp(prefix="conway-preflight-"))
    shot = tmpdir / "screen.png"
    try:
        try:
            proc = subprocess.run([sys.executable, "-c", _SCREENSHOT, str(shot)], capture_output=True, text=True,
                                  timeout=timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return Check("desktop", "fail", f"the screenshot did not finish within {timeout_s:g} s")
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]
            hint = "" if os.environ.get("DISPLAY") or not sys.platform.startswith("linux") else " (no DISPLAY set)"
            return Check("desktop", "fail", f"screenshot failed{hint}: {last}")
        if not shot.is_file() or shot.stat().st_size == 0:
            return Check("desktop", "fail", "the screenshot process produced no image")
        parts = proc.stdout.split()
        data = {}
        if len(parts) >= 6:
            w, h, lw, lh, left, top = (int(v) for v in parts[:6])
            data = {"captured_size": [w, h], "logical_size": [lw, lh], "origin": [left, top]}
            detail = f"captured {w}x{h} (input space {lw}x{lh} at {left},{top})"
        else:
            detail = "captured"
        return Check("desktop", "ok", detail + "; the temporary image was deleted and not sent to a model", data)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def preflight(home: Home, load_config: Callable[[], ConwayConfig], *, output: str, desktop: bool = False,
              argv: list[str] | None = None, say: Callable[[str], None] = print) -> int:
    started = time.time()
    out = check_new_output(output, home)
    checks: list[Check] = []
    config: ConwayConfig | None = None
    try:
        config = load_config()
        checks.append(Check("configuration", "ok", f"valid (digest {config.digest()[:12]})"))
    except UserError as exc:
        checks.append(Check("configuration", "fail", str(exc)))
    checks.append(constitution_check(home))
    checks.extend(recovery_checks(home))
    checks.append(memory_check())
    if config is not None:
        checks.extend(model_checks(config, home))
        from .extensions import mcp_checks, skills_check
        checks.append(skills_check(config, home))
        checks.extend(mcp_checks(config, home))
    else:
        checks.append(Check("model", "not_checked", "the configuration is invalid"))
    if config is not None:
        checks.append(workdir_check(config, home))
    if desktop:
        checks.append(desktop_check())
    else:
        checks.append(Check("desktop", "not_checked", "desktop readiness was not checked (add --desktop)"))
    failed = [c for c in checks if c.status == "fail"]
    code = 2 if failed else 0
    report = Report("preflight", out, argv=argv, config=config,
                    parameters={"desktop": desktop, "downloads": "never"}, started=started)
    found = [c.data["model_id"] for c in checks if c.data.get("model_id")]
    report.set_model(found[0] if found else (config.policy.model if config is not None else None))
    for c in checks:
        report.add_case(c.record())
    report.finish(status="not ready" if failed else "ready", exit_code=code,
                  summary={"ready": not failed, "failed": [c.check for c in failed],
                           "warnings": [c.check for c in checks if c.status == "warn"],
                           "desktop_checked": desktop})
    say(redact_text(table(["check", "status", "detail"], [[c.check, c.status, c.detail] for c in checks])))
    if failed:
        say(redact_text("not ready: " + "; ".join(f"{c.check}: {c.detail}" for c in failed)))
    else:
        say("ready" + ("" if desktop else " (desktop readiness not checked; add --desktop)"))
    say(f"report: {out}")
    return code
