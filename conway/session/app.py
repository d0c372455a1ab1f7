"""Wiring: config → policy, observer, tools, journal → one loop run. Also the control commands."""

from __future__ import annotations

import os
import secrets
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from conway.config import ConwayConfig
from conway.errors import UserError
from conway.loop.control import Clock, sigterm_interrupts
from conway.loop.cycle import Loop
from conway.loop.parts import LoopParts, RunOutcome
from conway.policies.factory import build_policy
from conway.policies.summariser import build_summariser
from conway.protocols import Actuator, Observer, Policy, TextModel
from conway.store.home import Home
from conway.store.journal import Journal, open_intent, tail_events, unreadable_spans
from conway.store.state import InstanceLock, StateStore, write_control
from conway.tools.registry import build_toolbox


def new_session_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def build_observer(config: ConwayConfig, home: Home) -> Observer:
    source = config.observe.source
    if source == "auto":
        source = "synthetic" if config.policy.kind == "mock" else "screen"
    if source == "synthetic":
        from conway.imaging import ScreenshotArchive
        from conway.observe.synthetic import SyntheticObserver
        keep = config.observe.keep_screenshots  # a mock session keeps its frames as a screen session does
        return SyntheticObserver(archive=ScreenshotArchive(home.screenshots, keep=keep) if keep else None,
                                 relative_to=home.root)
    try:
        from conway.observe.screen import ScreenObserver
    except ImportError as exc:
        raise UserError(f"screen observation needs the gui extra (pip install -e '.[gui]'): {exc}") from None
    return ScreenObserver.from_config(config, home)


def workdir_for(config: ConwayConfig, home: Home) -> Path:
    path = Path(config.tools.workdir).expanduser() if config.tools.workdir else home.scratch
    if path.exists() and not path.is_dir():
        raise UserError(f"tools.workdir {path} is a file, not a directory; name a folder (or leave it unset for "
                        f"{home.scratch})")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the tools working directory {path}: {exc.strerror}") from None
    return path


def console_say(text: str) -> None:
    """print, but a closed stdout (`conway run | head`) only ends the printing, never the run."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        silence_stdout()


def silence_stdout() -> None:
    """Point stdout at /dev/null so later prints and the interpreter's final flush stay quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


@dataclass
class RunRequest:
    single_session: bool
    dry_run: bool = False
    quiet: bool = False
    task: str | None = None
    policy: Policy | None = None
    observer: Observer | None = None
    toolbox: Actuator | None = None
    clock: Clock | None = None
    shell_env: dict[str, str] | None = None
    """Variables the shell tool's commands get on top of Conway's environment (when the toolbox is built here)."""
    taken_over: bool = False
    """`conway record`: the session starts taken over (a person acts, no model decides) until hand back."""
    video: bool = False
    """`--video`: the session's screen is recorded to HOME/videos/<session>.mp4 (bounded; off by default)."""


def run_agent(home: Home, config: ConwayConfig, req: RunRequest,
              say: Callable[[str], None] = console_say) -> tuple[RunOutcome, str]:
    """Take the lock, build the parts, run the loop. Returns (outcome, session id)."""
    with sigterm_interrupts():  # a SIGTERM while starting up still stops what was started (MCP servers)
        return _run_agent(home, config, req, say)


def _run_agent(home: Home, config: ConwayConfig, req: RunRequest, say: Callable[[str], None]) -> tuple[RunOutcome, str]:
    if not req.single_session and config.policy.deviations is None:  # `conway run`: the seed's deviations, listed
        config = config.model_copy(update={"policy": config.policy.model_copy(
            update={"deviations": config.policy.resolved_deviations(continuous=True)})})
    home.ensure_dirs()
    lock = InstanceLock(home.lock)
    session = new_session_id()
    lock.acquire(session)  # refused at once (UserError) when another agent holds this home
    journal = None
    observer = req.observer
    toolbox = req.toolbox
    policy = None
    summariser: TextModel | None = None
    try:
        policy = req.policy or build_policy(config, home)
        summariser = build_summariser(config, home, policy)  # memory's summary: the acting model unless configured
        observer = observer or build_observer(config, home)
        uses_desktop = not (config.policy.kind == "mock" and config.observe.source in ("auto", "synthetic"))
        tools, key_env = config.tools, config.memory.summariser.api_key_env
        if key_env:  # the summariser's key is kept from the shell as the model's is, whatever shell_env_keep says
            tools = tools.model_copy(update={"shell_env_drop": [*tools.shell_env_drop, key_env],
                                             "shell_env_keep": [n for n in tools.shell_env_keep if n != key_env]})
        toolbox = toolbox or build_toolbox(tools, workdir_for(config, home), gui=uses_desktop,
                                           home_root=home.root, skills=config.skills,
                                           api_key_env=config.policy.api_key_env, shell_env=req.shell_env)
        journal = Journal(home.journal_dir, config.journal.max_file_bytes, config.journal.max_total_bytes,
                          config.journal.fsync)
        printer = (lambda _text: None) if req.quiet else say
        if not req.quiet:
            say(f"session {session} · model {policy.model_id} · home {home.root}")
            for line in policy.description:
                say(str(line))
        parts = LoopParts(home=home, config=config, policy=policy, observer=observer, toolbox=toolbox,
                          journal=journal, session=session, clock=req.clock or Clock(),
                          single_session=req.single_session, dry_run=req.dry_run, say=printer, task=req.task,
                          summariser=summariser)
        video = _go_live(home, session, observer, req, say)
        try:
            outcome = Loop(parts).run()
        finally:
            if video is not None:
                video.stop()
        return outcome, session
    finally:
        if journal:
            journal.close()
        if observer:
            observer.close()
        if toolbox:
            toolbox.close()
        if summariser is not None:
            summariser.close()  # only one of its own: the acting model's backend goes with the policy
        if policy is not None and req.policy is None:  # stops a model server Conway started for this run
            policy.close()
        lock.release()


def _go_live(home: Home, session: str, observer: Observer, req: RunRequest, say: Callable[[str], None]) -> Any:
    """live.json for the live view, the takeover a recording session starts in, the screen's video (or None)."""
    from conway.loop.takeover import display_of
    from conway.store.live import write_live

    display = display_of(observer)
    video = None
    if req.video:
        from conway.observe.video import ScreenVideo
        video = ScreenVideo.start(display, home.root / "videos" / f"{session}.mp4", say=say)
    try:
        write_live(home.root, session, os.getpid(), display,
                   video=str(video.path) if video is not None else None, recording=req.taken_over)
    except OSError:
        pass  # the live view will not list it; the run goes on
    if req.taken_over:
        write_control(home.control, session, "takeover")
    return video


# --- control commands --------------------------------------------------------


def running_session(home: Home) -> tuple[str, int]:
    """(session, pid) of the agent running on this home, or UserError saying none is.

    Both come from the lock (never from state.json, which names the previous session until the new run begins)."""
    held = InstanceLock(home.lock).held()
    if held is None:
        raise UserError(f"no Conway agent is running on {home.root}")
    pid, session = held
    if not session:
        raise UserError(f"an agent holds the lock (pid {pid}) but has not written its session yet; try again")
    return session, pid


def send_control(home: Home, request: str, wait_s: float = 10.0) -> str:
    session, pid = running_session(home)
    _check_request(home, session, request)
    write_control(home.control, session, request)
    want = {"pause": "paused", "resume": "running", "stop": "stopped", "takeover": "taken over",
            "handback": "running"}[request]
    deadline = time.monotonic() + wait_s
    store = StateStore(home.state, home.state_previous)
    while time.monotonic() < deadline:  # confirm the agent acted on it
        state, _ = store.load()
        if state.get("session") == session and state.get("status") == want:
            return f"{request} acknowledged by session {session} (pid {pid})" + _unrecorded(home, session, request)
        time.sleep(0.05)
    return f"{request} requested for session {session} (pid {pid}); the agent applies it between steps"


def _unrecorded(home: Home, session: str, request: str) -> str:
    """For a takeover whose input cannot be recorded (a session with no screen, a display without RECORD): why,
    said to the person who asked, not only on the agent's terminal. The hold journals it before its status
    says "taken over", so it is there once the takeover is acknowledged."""
    if request != "takeover" or not home.journal_dir.exists():
        return ""
    for event in reversed(tail_events(home.journal_dir, 16)):
        payload = event.get("payload") or {}
        if event.get("session") == session and event.get("kind") == "control" and payload.get("request") == "takeover":
            if payload.get("recording") is False:
                return f"; your input is not recorded: {payload.get('detail') or 'the display cannot be recorded'}"
            return ""
    return ""


def _check_request(home: Home, session: str, request: str) -> None:
    """Refuse, in one line, a takeover of a session already taken over and a hand back of one that is not."""
    if request not in ("takeover", "handback"):
        return
    state, _ = StateStore(home.state, home.state_previous).load()
    status = state.get("status") if state.get("session") == session else "starting"
    if request == "handback" and status != "taken over":
        raise UserError(f"session {session} is not taken over (it is {status}); there is nothing to hand back")
    if request == "takeover" and status == "taken over":
        raise UserError(f"session {session} is already taken over; `conway handback` gives it back")


def status_report(home: Home) -> dict:
    state, note = StateStore(home.state, home.state_previous).load()
    holder = InstanceLock(home.lock).holder() if home.lock.exists() else None
    pid = state.get("pid")
    alive = bool(holder)
    events = tail_events(home.journal_dir, 8) if home.journal_dir.exists() else []
    step, phase = _current_step(state, events, alive)
    return {
        "home": str(home.root),
        "session": state.get("session"),
        "status": state.get("status", "never run") if alive or state.get("status") == "stopped"
        else ("not running (last run ended without a clean stop)" if state else "never run"),
        "pid": holder or pid,
        "pid_alive": alive,
        "step": step,
        "phase": phase,
        "model_id": state.get("model_id"),
        "stop_reason": state.get("stop_reason"),
        "pending_intent": open_intent(home.journal_dir, state.get("pending")),
        "state_recovery": note,
        "journal_unreadable": [str(span) for span in unreadable_spans(home.journal_dir)],
        "cost": _cost(home, state.get("session")),
        "last_events": [
            {"session": e.get("session"), "step": e.get("step"), "kind": e.get("kind"), "ts": e.get("ts"),
             "summary": _event_summary(e)} for e in events
        ],
    }


def _cost(home: Home, session: str | None) -> dict | None:
    if not session or not home.journal_dir.exists():
        return None
    from conway.experience.costs import session_cost
    return session_cost(home.journal_dir, session).record()


_PHASES = {"observation": "deciding", "decision": "acting", "intent": "acting", "error": "recovering",
           "memory": "compacting memory"}


def _current_step(state: dict, events: list[dict], alive: bool) -> tuple[int | None, str | None]:
    """The step a running agent is on: state.json's copy is refreshed at most once a second, the journal's
    newest event of the session is not (step 1 is being decided while state.json still says 0)."""
    step = state.get("step")
    if not alive:
        return step, None
    own = [e for e in events if e.get("session") == state.get("session") and isinstance(e.get("step"), int)]
    if not own:
        return step, None
    last = own[-1]
    newest = max(step or 0, last["step"])
    return newest, _PHASES.get(str(last.get("kind"))) if last["step"] == newest else None


def _event_summary(event: dict) -> str:
    p = event.get("payload") or {}
    if event.get("kind") == "memory":
        what = "summary requested" if p.get("event") == "request" else f"memory {p.get('outcome')}"
        return f"{what} ({p.get('model_id') or 'no model'})" + (f": {p['reason']}"[:100] if p.get("reason") else "")
    pointed = _pointed(event.get("kind"), p)
    if pointed:
        return pointed
    for key in ("summary", "error", "detail", "reason", "request", "event"):
        if p.get(key):
            return str(p[key])[:100]
    if "action" in p and isinstance(p["action"], dict):
        return str(p["action"].get("type"))
    if event.get("kind") == "decision":
        return (p.get("raw_text") or "")[:100]
    return ""


def _pointed(kind: object, p: dict) -> str | None:
    """A pointing action with each coordinate pair labelled: the model's (in the image it was sent),
    the screenshot's, and the input's (where the pointer went; they differ on HiDPI screens)."""
    from conway.geometry import captured_to_model

    action = p.get("action")
    if kind == "decision":
        acts = p.get("actions") or []
        action = acts[0] if acts and isinstance(acts[0], dict) else None
    if not isinstance(action, dict) or not isinstance(action.get("x"), (int, float)) or \
            not isinstance(action.get("y"), (int, float)):
        return None
    x, y = float(action["x"]), float(action["y"])
    text = f"{action.get('type')} at screen ({x:.0f}, {y:.0f})"
    if kind == "decision" and p.get("sent_size") and p.get("captured_size") and p.get("convention"):
        try:
            mx, my = captured_to_model(x, y, p["convention"], tuple(p["sent_size"]), tuple(p["captured_size"]))
            text = f"{action.get('type')} at model ({mx:.4g}, {my:.4g}) → screen ({x:.0f}, {y:.0f})"
        except (ValueError, TypeError, ZeroDivisionError):
            pass
    point = (p.get("data") or {}).get("input") if isinstance(p.get("data"), dict) else None
    if isinstance(point, list) and len(point) == 2:
        text += f" → input ({point[0]}, {point[1]})"
    if kind in ("result", "error") and p.get("ok") is False and p.get("error"):
        text += f": {str(p['error'])[:60]}"
    return text


def render_status(report: dict, tasks: str | None = None) -> str:
    """`conway status` for a person: one fact a line (`tasks`: the task-acceptance counts, rendered), then the last events."""
    lines = [f"home:     {report['home']}",
             f"session:  {report['session'] or '-'}",
             f"status:   {report['status']}" + (f" ({report['stop_reason']})" if report.get("stop_reason") else ""),
             f"pid:      {report['pid'] or '-'} ({'alive' if report['pid_alive'] else 'not running'})",
             f"step:     {report['step'] if report['step'] is not None else '-'}"
             + (f" ({report['phase']})" if report.get("phase") else ""),
             f"model:    {report['model_id'] or '-'}"]
    pending = report["pending_intent"]
    lines.append(f"pending:  {pending['summary'] if pending else 'none'}")
    if report["state_recovery"]:
        lines.append(f"recovery: {report['state_recovery']}")
    lines += [f"journal:  {span}" for span in report.get("journal_unreadable", [])]
    if skipped := report.get("journal_skipped"):  # as `export` says them
        lines.append(f"journal:  skipped {len(skipped)} unreadable journal line(s): {', '.join(skipped[:5])}"
                     + (", …" if len(skipped) > 5 else ""))
    if report.get("cost"):
        from conway.experience.costs import render_record
        lines.append(f"cost:     {render_record(report['cost'])}")
    if tasks:
        lines.append(f"tasks:    {tasks}")
    if report["last_events"]:
        lines.append("last events:")
        shown = report["session"]  # a heading wherever the events change session, so none passes for this one's
        for e in report["last_events"]:
            if e.get("session") != shown:
                shown = e.get("session")
                lines.append(f"  {'this session' if shown == report['session'] else 'earlier session'} {shown}:")
            lines.append(f"  {e['ts']}  step {e['step']:>4}  {e['kind']:<11} {e['summary']}")
    return "\n".join(lines)
