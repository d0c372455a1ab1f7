"""The home: the configuration loads, constitution.md is there, recovery state, the tools' working directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from conway.config import ConwayConfig
from conway.errors import UserError
from conway.readiness.checks import Check
from conway.store.home import Home
from conway.store.journal import journal_files, open_intent, text_size
from conway.store.state import InstanceLock, StateStore


def configuration_check(load_config: Callable[[], ConwayConfig]) -> tuple[Check, ConwayConfig | None]:
    """The configuration composes and validates (the same message `conway run` would stop with)."""
    try:
        config = load_config()
    except UserError as exc:
        return Check("configuration", "fail", str(exc)), None
    return Check("configuration", "ok", f"valid (digest {config.digest()[:12]})"), config


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


def home_layout_check(home: Home) -> Check:
    """Conway's files are files and its folders folders (`run` refuses a goals.md folder with this message)."""
    try:
        home.check_layout()
    except UserError as exc:
        return Check("home layout", "fail", str(exc))
    return Check("home layout", "ok", f"{home.root}: files and folders where Conway keeps them")


def recovery_checks(home: Home) -> list[Check]:
    out = []
    state, note = StateStore(home.state, home.state_previous).load()
    state = state if isinstance(state, dict) else {}
    pending = open_intent(home.journal_dir, state.get("pending"))
    if note:
        out.append(Check("recovery: state.json", "warn", note))
    if pending:
        summary, session = pending.get("summary"), pending.get("session") or state.get("session")
        out.append(Check("recovery: pending intent", "warn",
                         f"a previous run (session {session}) stopped while dispatching "
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
        size = text_size(last)  # the file a run is writing ends in zeros: its data ends at its last non-NUL byte
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
    pid = (text.split() or [""])[0]
    return pid if pid.isdigit() else None


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
