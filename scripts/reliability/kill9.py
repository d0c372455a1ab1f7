"""kill -9 at random points of real `conway run` processes on one home, each restarted.

Every run gets its own mock script whose side-effecting actions carry tokens
unique to that run (`R<run>S<step>`): `append_file` into scratch/effects/append.log
and a `shell` command that sleeps, appends to scratch/effects/shell.log and sleeps
again (so a kill can land before or after the effect). A replayed action would
write its token twice; an effect with no intent, or a result claiming success
with no effect, would show too.

Kill points are aimed round-robin at five phases and then classified from the
evidence (the killed run's last journal event and whether the effect exists):

    start-up   lock taken → session start (recovery, state write, torn-line isolation)
    decide     an observation journaled, the mock "thinking" (a random sleep in decide)
    intent     an intent journaled, kill at once (fsync, pending state write, tool start)
    dispatch   a shell intent journaled, kill 0-40 ms later (before or after its effect)
    result     a side effect's result journaled, kill at once (state, memory, next cycle)

After each kill, before the restart: state.json exists (once any run wrote it),
state.json / state.previous.json parse, `conway status` does not say "never run" nor
report a NUL run inside the journal's data (the zeroed tail ends a file; a kill leaves no gap).
After the next run got past start-up: temp files left by the kill are gone
(temp files as a kill inside an atomic write leaves them are also planted
after the first kill and before the last run, so the clean-up is exercised
every time, not only when a kill happens to land inside a write).
At the end (one more clean run): every intent closed by exactly one result,
error or `uncertain`; no effect twice; no effect without its intent; no
successful result without its effect; no temp files; no traceback from any run.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import Check, ProofResult, Violations, child_env, conway_argv

PHASES = ("start-up", "decide", "intent", "dispatch", "result")
OBSERVED = ("start-up", "decide", "intent written, effect not done", "effect done, result not written",
            "after the result")
TOKEN = re.compile(r"R(\d+)S(\d+)")
STEPS_PER_RUN = 80
DECIDE_SLEEP_S = (0.0, 0.03)
TRIGGER_TIMEOUT_S = 20.0
CLEAN_RUN_TIMEOUT_S = 120.0


def run_script(run: int, rng: random.Random, steps: int = STEPS_PER_RUN) -> list[dict[str, Any]]:
    """Mock decisions for one run: appends, shell appends and reads, every token unique to this run."""
    out = []
    for i in range(steps):
        token = f"R{run}S{i}"
        sleep = round(rng.uniform(*DECIDE_SLEEP_S), 4)
        kind = i % 3
        if kind == 0:
            action = {"type": "append_file", "path": "effects/append.log", "text": token + "\n"}
        elif kind == 1:
            action = {"type": "shell",
                      "command": f"sleep 0.01; printf '%s\\n' {token} >> effects/shell.log; sleep 0.02"}
        else:
            action = {"type": "read_file", "path": "effects/append.log"}
        out.append({"sleep": sleep, "thought": f"step {i} of run {run}", "action": action})
    return out


class JournalFollower:
    """Events appended to the journal after the moment it was made, across rotated files."""

    def __init__(self, folder: Path):
        from conway.store.journal import journal_files, text_size

        self._files = journal_files
        self.folder = folder
        files = journal_files(folder)
        self.path: Path | None = files[-1] if files else None
        self.offset = text_size(self.path) if self.path else 0
        self.partial = b""
        self.events: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        new: list[dict[str, Any]] = []
        while True:
            files = self._files(self.folder)
            if not files:
                return new
            if self.path is None or self.path not in files:
                self.path, self.offset, self.partial = files[0], 0, b""
            try:
                with open(self.path, "rb") as fh:
                    fh.seek(self.offset)
                    data = fh.read()
            except FileNotFoundError:
                self.path = None
                continue
            data = data[:len(data.rstrip(b"\0"))]  # the file being written ends in zeros: its data stops there
            self.offset += len(data)
            lines = (self.partial + data.replace(b"\0", b"\n")).split(b"\n")  # a NUL run inside: skipped
            self.partial = lines.pop()
            for raw in lines:
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(ev, dict):
                    new.append(ev)
            later = [f for f in files if f.name > self.path.name]
            if not later:
                break
            self.path, self.offset, self.partial = later[0], 0, b""
        self.events.extend(new)
        return new


@dataclass
class KillRecord:
    index: int
    target: str
    observed: str = ""
    delay_ms: float = 0.0
    last_event: str | None = None
    note: str = ""


@dataclass
class State:
    home: Path
    rng: random.Random
    v: Violations = field(default_factory=Violations)
    kills: list[KillRecord] = field(default_factory=list)
    state_written: bool = False
    lock_to_start: list[float] = field(default_factory=list)
    pending_temp: list[str] = field(default_factory=list)
    """Temp files seen after the last kill; the next start-up must remove them."""
    reported_temp: set[str] = field(default_factory=set)
    """Each leftover is reported once, by the first start-up that should have removed it."""
    logs: list[Path] = field(default_factory=list)
    self_exits: int = 0
    planted: int = 0
    kills_leaving_temp: int = 0
    """Kills after which a temp file was there (how often the clean-up at start-up was exercised)."""


def temp_files(home: Path) -> list[str]:
    """Leftover atomic-write temp files anywhere in the home (names relative to it)."""
    found = []
    for p in home.rglob("*"):
        if p.is_file() and (p.name.endswith(".tmp") or p.name.startswith(".tmp-")) and "effects" not in p.parts:
            found.append(str(p.relative_to(home)))
    return sorted(found)


def _plant_temp(st: State, tag: str) -> None:
    """Leave temp files exactly as a kill inside an atomic write would (the next start must remove them)."""
    for name, body in (("state.json", '{"session": "half-writ'), ("memory.md", "- step 1: half a li")):
        path = st.home / f".{name}.planted{tag}.tmp"
        path.write_text(body, encoding="utf-8")
        st.pending_temp.append(path.name)
        st.planted += 1


def _effect_tokens(home: Path) -> dict[str, list[str]]:
    """token -> the effect files it appears in (once per appearance); torn lines under ''."""
    seen: dict[str, list[str]] = {}
    for name in ("append.log", "shell.log"):
        path = home / "scratch" / "effects" / name
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if TOKEN.fullmatch(line.strip()):
                seen.setdefault(line.strip(), []).append(name)
            elif line.strip():
                seen.setdefault("", []).append(f"{name}: {line[:40]!r}")
    return seen


def _token_of(action: dict[str, Any] | None) -> str | None:
    if not isinstance(action, dict) or action.get("type") not in ("append_file", "shell"):
        return None
    m = TOKEN.search(str(action.get("text") or action.get("command") or ""))
    return m.group(0) if m else None


def _parses(path: Path) -> str | None:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _classify(events: list[dict[str, Any]], home: Path) -> tuple[str, str | None]:
    """Where the kill landed, from the killed run's journal events and the effect files."""
    started = [i for i, e in enumerate(events) if e.get("kind") == "session"
               and (e.get("payload") or {}).get("event") == "start"]
    if not started:
        return "start-up", None
    last = events[-1]
    kind = last.get("kind")
    action = (last.get("payload") or {}).get("action")
    if kind == "intent":
        token = _token_of(action)
        return ("effect done, result not written" if token and token in _effect_tokens(home)
                else "intent written, effect not done"), kind
    if kind in ("result", "error") and _token_of(action):
        return "after the result", kind
    return "decide", kind


def _spawn(st: State, run: int, script: list[dict[str, Any]], extra: list[str]) -> subprocess.Popen:
    work = st.home.parent
    script_path = work / "scripts" / f"run-{run:04d}.jsonl"
    script_path.parent.mkdir(exist_ok=True)
    script_path.write_text("".join(json.dumps(s) + "\n" for s in script), encoding="utf-8")
    log = work / "logs" / f"run-{run:04d}.log"
    log.parent.mkdir(exist_ok=True)
    st.logs.append(log)
    with open(log, "wb") as fh:
        return subprocess.Popen(conway_argv("--home", str(st.home), "run", "--quiet", "--mock-script",
                                            str(script_path), *extra),
                                stdout=fh, stderr=subprocess.STDOUT, env=child_env(), cwd=work)


def _lock_pid(home: Path) -> str:
    """The holder's pid: the lock file's first word (`pid session`)."""
    try:
        words = (home / "instance.lock").read_text().split()
    except OSError:
        return ""
    return words[0] if words else ""


def _wait_trigger(st: State, proc: subprocess.Popen, follower: JournalFollower, target: str,
                  rec: KillRecord) -> None:
    """Block until the moment to kill for `target` (or the run ended / timed out; noted)."""
    rng = st.rng
    deadline = time.monotonic() + TRIGGER_TIMEOUT_S
    lock_at = None
    started_at = None
    cycles_seen = 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            rec.note = f"run ended by itself (rc {proc.returncode}) before the kill"
            return
        now = time.monotonic()
        if lock_at is None and _lock_pid(st.home) == str(proc.pid):
            lock_at = now
            if target == "start-up":
                typical = statistics.median(st.lock_to_start) if st.lock_to_start else 0.3
                delay = rng.uniform(0.0, 1.2 * typical)
                rec.delay_ms = delay * 1000
                _sleep_watching(proc, delay)
                return
        for ev in follower.poll():
            kind = ev.get("kind")
            payload = ev.get("payload") or {}
            if kind == "session" and payload.get("event") == "start":
                started_at = time.monotonic()
                if lock_at is not None:
                    st.lock_to_start.append(started_at - lock_at)
                continue
            if started_at is None:
                continue
            if kind == "observation":
                cycles_seen += 1
                if target == "decide" and cycles_seen >= 2:
                    delay = rng.uniform(*DECIDE_SLEEP_S)
                    rec.delay_ms = delay * 1000
                    _sleep_watching(proc, delay)
                    return
            elif kind == "intent" and cycles_seen >= 2:
                atype = (payload.get("action") or {}).get("type")
                if target == "intent":
                    return
                if target == "dispatch" and atype == "shell":
                    delay = rng.uniform(0.0, 0.04)
                    rec.delay_ms = delay * 1000
                    _sleep_watching(proc, delay)
                    return
            elif kind == "result" and cycles_seen >= 2 and target == "result" and _token_of(payload.get("action")):
                return
        time.sleep(0.002)
    rec.note = f"trigger for {target} not seen within {TRIGGER_TIMEOUT_S:g} s"


def _sleep_watching(proc: subprocess.Popen, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        time.sleep(min(0.002, max(0.0, end - time.monotonic())))


def _after_kill(st: State, rec: KillRecord, run_events: list[dict[str, Any]]) -> None:
    """The checks that must hold at the instant after a kill, before the restart."""
    from conway.session.app import status_report
    from conway.store.home import Home

    home = st.home
    where = f"kill {rec.index} ({rec.observed}, last event {rec.last_event})"
    reached_start = any(e.get("kind") == "session" and (e.get("payload") or {}).get("event") == "start"
                        for e in run_events)
    state = home / "state.json"
    if reached_start:  # the run wrote state.json before journaling its start
        st.state_written = True
    if st.state_written and not state.exists():
        st.v.add("state.json exists after every kill",
                 f"{where}: state.json missing; state.previous.json "
                 f"{'present' if (home / 'state.previous.json').exists() else 'absent'}; temp files {temp_files(home)}")
    if state.exists():
        st.state_written = True
    for name in ("state.json", "state.previous.json"):
        problem = _parses(home / name)
        if problem:
            st.v.add("state files parse", f"{where}: {name} does not parse: {problem}")
    try:
        report = status_report(Home(home))
    except Exception as exc:
        st.v.add("status works after every kill", f"{where}: status raised {type(exc).__name__}: {exc}")
    else:
        if st.state_written and report["status"] == "never run":
            st.v.add("status works after every kill", f"{where}: status says 'never run'")
        for span in report["journal_unreadable"]:  # a kill leaves a torn line at most, never a gap
            st.v.add("no NUL run inside the journal's data", f"{where}: {span}")
    now = temp_files(home)
    if set(now) - set(st.pending_temp) - st.reported_temp:
        st.kills_leaving_temp += 1
    if reached_start:  # this run's start-up had to clean what was there before it started
        for t in st.pending_temp:
            if (home / t).exists() and t not in st.reported_temp:
                st.reported_temp.add(t)
                st.v.add("temp files cleaned at the next start",
                         f"{t} (there before run {rec.index} started) still there after its start-up")
        st.pending_temp = now
    else:
        st.pending_temp = sorted(set(st.pending_temp) | set(now))


def _final_checks(st: State) -> dict[str, Any]:
    """Whole-journal and effect-file checks after the last clean run."""
    from conway.store.journal import read_journal

    home = st.home
    journal = read_journal(home / "journal")
    intents: dict[tuple[str, int], dict[str, Any]] = {}
    closures: dict[tuple[str, int], list[str]] = {}
    order: list[tuple[str, int]] = []
    open_keys: set[tuple[str, int]] = set()
    for ev in journal.events:
        kind, payload = ev.get("kind"), ev.get("payload") or {}
        key = (ev.get("session"), ev.get("step"))
        if kind == "intent":
            if key in intents:
                st.v.add("every intent closed exactly once", f"two intents for session {key[0]} step {key[1]}")
            intents[key] = payload
            closures[key] = []
            order.append(key)
            open_keys.add(key)
        elif kind in ("result", "error") and key in open_keys and payload.get("action") == intents[key].get("action"):
            closures[key].append(kind + ("" if payload.get("ok", True) else " (not ok)"))
            open_keys.discard(key)
        elif kind == "uncertain":
            ukey = ((payload.get("from_session"), payload.get("intent_step"))
                    if payload.get("from_session") is not None else key)
            if ukey not in closures:
                st.v.add("every intent closed exactly once",
                         f"uncertain in session {key[0]} names an unknown intent {ukey}")
                continue
            closures[ukey].append("uncertain")
            open_keys.discard(ukey)
    tokens = _effect_tokens(home)
    torn_effect = tokens.pop("", [])
    uncertain_with, uncertain_without, results_ok = 0, 0, 0
    intent_tokens = {}
    for key in order:
        got = closures[key]
        token = _token_of(intents[key].get("action"))
        if token:
            intent_tokens[token] = key
        if len(got) != 1:
            st.v.add("every intent closed exactly once",
                     f"intent session {key[0]} step {key[1]} ({intents[key].get('summary')}) closed by {got or 'nothing'}")
            continue
        if got[0] == "uncertain":
            if token and token in tokens:
                uncertain_with += 1
            else:
                uncertain_without += 1
        elif got[0] == "result":
            results_ok += 1
            if token and token not in tokens:
                st.v.add("no successful result without its effect",
                         f"session {key[0]} step {key[1]}: result ok but {token} is in no effect file")
    for token, where in tokens.items():
        if len(where) > 1:
            st.v.add("no side effect twice", f"{token} appears {len(where)} times ({', '.join(where)})")
        if token not in intent_tokens:
            st.v.add("no side effect without an intent", f"{token} in {where[0]} has no intent in the journal")
    left = temp_files(home)
    for t in left:
        st.v.add("no temp files at the end", f"{t} left after the final clean run")
    for problem_name in ("state.json", "state.previous.json"):
        problem = _parses(home / problem_name)
        if problem:
            st.v.add("state files parse", f"after the final run: {problem_name}: {problem}")
    if not (home / "state.json").exists():
        st.v.add("state.json exists after every kill", "state.json missing after the final clean run")
    for log in st.logs:
        text = log.read_text(encoding="utf-8", errors="replace")
        if "Traceback (most recent call last)" in text:
            st.v.add("no traceback from any run", f"{log.name}: {text.strip().splitlines()[-1][:200]}")
    return {"intents": len(order), "closed_by_result": results_ok,
            "closed_by_uncertain_effect_done": uncertain_with, "closed_by_uncertain_effect_not_done": uncertain_without,
            "effects": len(tokens), "torn_effect_lines": len(torn_effect),
            "torn_journal_lines": len(journal.skipped), "journal_events": len(journal.events)}


def prove(kills: int = 100, seed: int = 0, keep: Path | None = None, say=print) -> ProofResult:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="conway-kill9-"))
    home = work / "home"
    rng = random.Random(seed)
    st = State(home=home, rng=rng)
    try:
        init = subprocess.run(conway_argv("--home", str(home), "init"), env=child_env(), capture_output=True,
                              text=True, timeout=120)
        if init.returncode != 0:
            raise RuntimeError(f"conway init failed: {init.stderr.strip()[-300:]}")
        (home / "scratch" / "effects").mkdir(parents=True, exist_ok=True)
        for index in range(kills):
            target = PHASES[index % len(PHASES)]
            rec = KillRecord(index=index, target=target)
            follower = JournalFollower(home / "journal")
            proc = _spawn(st, index, run_script(index, rng), [])
            try:
                _wait_trigger(st, proc, follower, target, rec)
            finally:
                ended = proc.poll() is not None
                proc.kill()
                proc.wait()
            if ended:
                st.self_exits += 1
                st.v.add("every run killed (none exits by itself)",
                         f"run {index}: {rec.note}; log tail: {_tail(st.logs[-1])}")
            follower.poll()
            rec.observed, rec.last_event = _classify(follower.events, home)
            _after_kill(st, rec, follower.events)
            st.kills.append(rec)
            if index == 0:  # also exercise the clean-up deterministically, not only when a kill hits a write
                _plant_temp(st, "0")
            if (index + 1) % 10 == 0:
                say(f"  kill9: {index + 1}/{kills} kills")
        # the last restart runs to a clean end: it must close whatever the last kill left open
        _plant_temp(st, "final")
        follower = JournalFollower(home / "journal")
        proc = _spawn(st, kills, run_script(kills, rng, steps=3), ["--max-steps", "3"])
        try:
            rc = proc.wait(timeout=CLEAN_RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
        if rc != 0:
            st.v.add("final clean run ends with exit 0", f"rc {rc}; log tail: {_tail(st.logs[-1])}")
        follower.poll()
        final = _final_checks(st)
    finally:
        if keep is not None:
            shutil.copytree(work, keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    by_target = {p: sum(1 for k in st.kills if k.target == p) for p in PHASES}
    by_observed = {p: sum(1 for k in st.kills if k.observed == p) for p in OBSERVED}
    checks = [Check("kills", len(st.kills), f"{kills}", len(st.kills) == kills)]
    for name in ("every run killed (none exits by itself)", "state.json exists after every kill", "state files parse",
                 "status works after every kill", "no NUL run inside the journal's data",
                 "temp files cleaned at the next start",
                 "every intent closed exactly once", "no side effect twice", "no side effect without an intent",
                 "no successful result without its effect", "no temp files at the end", "no traceback from any run",
                 "final clean run ends with exit 0"):
        checks.append(st.v.zero_check(name))
    figures = {"kills": len(st.kills), "kill_points_by_target": by_target, "kill_points_observed": by_observed,
               "kills_leaving_a_temp_file": st.kills_leaving_temp, "planted_temp_files": st.planted,
               **final, "lock_to_session_start_ms_median": round(statistics.median(st.lock_to_start) * 1000, 1)
               if st.lock_to_start else None,
               "kill_log": [k.__dict__ for k in st.kills]}
    return ProofResult("kill9", {"kills": kills, "seed": seed}, figures, checks, time.monotonic() - started)


def _tail(log: Path, n: int = 300) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace").strip()[-n:].replace("\n", " | ")
    except OSError:
        return "(no log)"
