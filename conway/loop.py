"""The continuous cycle: control → goals → observe → context → decide → validate → intent → act → record.

The loop is deliberately boring. Everything it needs comes in through
`LoopParts`; every wait is sliced so pause and stop stay responsive; every
side effect is preceded by a fsynced intent; an uncertain outcome is never
replayed and ends the run.
"""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from .actions import GUI_TYPES, ActionProblem, Finish, Wait, _Action, describe_action_space
from .cancel import Cancel, DecisionAborted, run_cancellable, watching
from .config import ConwayConfig
from .context import RecentSteps, StepNote, build_parts, resolve_budget
from .home import Home
from .journal import Journal, make_event
from .memory import Memory
from .protocols import (ContextPart, Decision, DecisionContext, DispatchUncertain, FailSafeTriggered, Observation,
                        Observer, Policy, PolicyError, RateLimited, ToolResult, decision_problem_cause,
                        describe_causes)
from .provenance import harness_revision, prompt_record
from .ratelimit import rate_limit_wait
from .state import StateStore, read_control, remove_leftover_temps
from .tools.bounded import cut_text
from .tools.registry import Toolbox


GOALS_JOURNAL_MAX_CHARS = 20_000
"""The goals / task text is journaled (when it changes) up to this size, for exports' instruction."""


class Clock:
    """Wall time, monotonic time and sleep; tests inject a fake that advances instantly."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class StopRun(Exception):
    """Ends the run; carries the reason recorded in state and journal."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def backoff_delay(start: float, cap: float, count: int) -> float:
    """start, 2·start, 4·start … capped: the count-th wait (count ≥ 1), for any count."""
    doublings = max(0, count - 1)
    if start >= cap or doublings >= math.log2(cap / start):
        return cap  # decided before computing 2**n, which overflows a float past n = 1023
    return start * 2.0 ** doublings


@dataclass
class LoopParts:
    home: Home
    config: ConwayConfig
    policy: Policy
    observer: Observer
    toolbox: Toolbox
    journal: Journal
    session: str
    clock: Clock = field(default_factory=Clock)
    single_session: bool = False
    """`start`: a finish ends the session. `run`: finish is recorded and the loop carries on."""
    dry_run: bool = False
    """Plan without dispatching (observe mode, `start` without --execute)."""
    say: Callable[[str], None] = print
    task: str | None = None
    """A single-session task shown to the model as the goal."""


@dataclass
class RunOutcome:
    reason: str
    steps: int
    finish: dict[str, Any] | None = None
    """The model's last finish (its own word, never a verified success)."""
    valid_decisions: int = 0
    """Decisions that held at least one valid action."""
    model_errors: dict[str, int] = field(default_factory=dict)
    """Steps without a valid decision, counted by cause (`HTTP 500`, `timeout`, `cut off` …)."""
    failed: bool = False
    """The run ended by a crash or a full disk, not by a budget, a stop or a finish (the CLI exits 1)."""
    journal: str | None = None
    """The journal file holding the last events (named in the CLI's one-line error)."""

    @property
    def no_valid_decision(self) -> str | None:
        """"no valid decision in N steps: …" when the model never produced a valid action, else None."""
        if self.valid_decisions or not self.model_errors:
            return None
        return f"no valid decision in {self.steps} step(s): {describe_causes(self.model_errors)}"


def disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


class Loop:
    def __init__(self, parts: LoopParts):
        self.p = parts
        cfg = parts.config
        self.cfg = cfg
        self.state_store = StateStore(parts.home.state, parts.home.state_previous)
        self.memory = Memory(parts.home.memory, parts.home.memory_previous,
                             cfg.memory.max_chars, cfg.memory.keep_chars)
        self.state: dict[str, Any] = {}
        self.step = 0
        self.decisions = 0
        self.revision = harness_revision()
        """Decisions the model made (what --max-steps counts); `step` also counts cycles without one."""
        self.started_mono = parts.clock.monotonic()
        self.latest: str | None = None
        self.recent = RecentSteps(cfg.context.recent_steps)
        self.memory_view: str | None = None
        """memory.md as shown to the model: refreshed when the recent-steps window slides (the steps since are
        in the window), when memory is compacted or edited by someone else, so the prompt only grows between."""
        self.idle_count = 0
        self.error_count = 0
        self.last_change_key: str | None = None
        self.repeats: dict[str, tuple[str, int]] = {}  # family -> (action key, times in a row)
        self.signal_stop: str | None = None
        self._cancel: Cancel | None = None
        self.last_finish: dict[str, Any] | None = None
        self.valid_decisions = 0
        self.model_errors: dict[str, int] = {}
        self.screen_problem: str | None = None
        self._state_dirty = False  # state changed in memory only (a cleared pending copy): written at the next write
        self._action_spaces: dict[tuple[str, ...], str] = {}

    # -- journal & state ------------------------------------------------------

    def record(self, kind: str, payload: dict[str, Any]) -> None:
        self.p.journal.append(make_event(self.p.session, self.step, kind, payload, now=self.p.clock.time()))

    def save_state(self, durable: bool = True, **changes: Any) -> None:
        self.state.update(changes, updated_at=self.p.clock.time())
        self.state_store.save(self.state, durable=durable)
        self._saved_at = self.p.clock.monotonic()
        self._state_dirty = False

    def save_pending(self, pending: dict[str, Any] | None) -> None:
        """The pending action's copy for `status`: state.json alone, not fsynced (the journal is the authority).

        Setting it is written before dispatch. Clearing it waits for the next state write (the next
        intent, the progress write, any wait, the end): the journaled result already resolves it for
        `status`, `preflight` and recovery, and a side effect every cycle then costs one write, not two.
        """
        self.state.update(pending=pending, updated_at=self.p.clock.time())
        if pending is None:
            self._state_dirty = True
            return
        self.state_store.save_current(self.state)
        self._state_dirty = False

    def save_progress(self) -> None:
        """Refresh the step shown by `status` at most once a second (not needed for safety)."""
        if self.p.clock.monotonic() - getattr(self, "_saved_at", 0.0) >= 1.0:
            self.save_state(durable=False, step=self.step)
        else:
            self.state["step"] = self.step

    # -- start-up -------------------------------------------------------------

    def recover(self) -> None:
        """Read prior state; turn a pending intent into an `uncertain` record (never replayed)."""
        leftovers = remove_leftover_temps(self.p.home.root)
        if leftovers:
            self.record("recovery", {"what": "temp files", "detail": "removed temp files a killed run left: "
                                     + ", ".join(leftovers)})
        prior, note = self.state_store.load()
        if note:
            self.record("recovery", {"what": "state", "detail": note})
            self.say(f"recovered: {note}")
        if self.p.journal.torn_on_open:
            self.record("recovery", {"what": "journal", "detail": f"torn last line in {self.p.journal.torn_on_open} skipped"})
        pending = prior.get("pending") if isinstance(prior, dict) else None
        verdict, journaled = self._journal_verdict()
        if verdict == "pending":
            pending = journaled
        elif verdict == "resolved" and pending:
            self.record("recovery", {"what": "pending", "detail": "the pending action's outcome is in the journal; "
                                     "state.json's copy had not been cleared yet"})
            pending = None
        if pending:
            self.record("uncertain", {"action": pending.get("action"),
                                      "from_session": pending.get("session") or prior.get("session"),
                                      "intent_step": pending.get("step"),
                                      "detail": "a previous run stopped while dispatching this action; "
                                                "it may or may not have happened and is not replayed"})
            self.latest = (f"UNCERTAIN: the previous run stopped while doing {pending.get('summary', 'an action')}; "
                           "it may or may not have happened. Look at the screen before acting again.")
        self.state = {"session": self.p.session, "status": "running", "pid": os.getpid(), "step": 0,
                      "started_at": self.p.clock.time(), "pending": None, "stop_reason": None,
                      "model_id": getattr(self.p.policy, "model_id", "?"), "config_digest": self.cfg.digest(),
                      "mode": "session" if self.p.single_session else "continuous", "dry_run": self.p.dry_run}
        self.save_state()

    def _journal_verdict(self) -> tuple[str, dict[str, Any] | None]:
        """Was the journal's last intent followed by its outcome? (`journal.intent_verdict`)"""
        from .journal import intent_verdict
        return intent_verdict(self.p.home.journal_dir)

    # -- waiting and control --------------------------------------------------

    def check_control(self) -> None:
        if self.signal_stop:
            raise StopRun(self.signal_stop)
        request = read_control(self.p.home.control, self.p.session)
        if request == "stop":
            self.record("control", {"request": "stop"})
            raise StopRun("stop requested")
        if request == "pause" and self.state.get("status") != "paused":
            self.record("control", {"request": "pause"})
            self.save_state(status="paused")
            self.say("paused; `conway resume` continues")
            while read_control(self.p.home.control, self.p.session) == "pause":
                if self.signal_stop:
                    raise StopRun(self.signal_stop)
                self.p.clock.sleep(self.cfg.agent.control_poll_s)
            if read_control(self.p.home.control, self.p.session) == "stop":
                self.record("control", {"request": "stop"})
                raise StopRun("stop requested")
            self.record("control", {"request": "resume"})
            self.save_state(status="running")
            self.say("resumed")

    def wait(self, seconds: float) -> None:
        """Sleep in short slices, checking control (and the time budget) between them.

        Budgets come first: a wait after the last allowed decision, or one that would outlast
        max-seconds, ends the run at once instead of sleeping towards an end already reached.
        """
        spent = self.budget_spent_by(seconds)
        if spent:
            raise StopRun(spent)
        if self._state_dirty:  # what waited for the next write goes out before a sleep
            self.save_state(durable=False)
        end = self.p.clock.monotonic() + seconds
        while True:
            self.check_control()
            self.check_budget()
            left = end - self.p.clock.monotonic()
            if left <= 0:
                return
            self.p.clock.sleep(min(self.cfg.agent.control_poll_s, left))

    def budget_spent_by(self, seconds: float) -> str | None:
        """Why a wait of `seconds` now would only sleep towards an end already decided (else None)."""
        a = self.cfg.agent
        if seconds <= 0:
            return None
        if a.max_steps is not None and self.decisions >= a.max_steps:
            return f"max-steps budget ({a.max_steps}) reached"
        if a.max_seconds is not None and self.p.clock.monotonic() + seconds - self.started_mono >= a.max_seconds:
            return f"max-seconds budget ({a.max_seconds:g} s) reached (a {seconds:g} s wait would outlast it)"
        return None

    def check_budget(self) -> None:
        a = self.cfg.agent
        if a.max_seconds is not None and self.p.clock.monotonic() - self.started_mono >= a.max_seconds:
            raise StopRun(f"max-seconds budget ({a.max_seconds:g} s) reached")

    # -- the cycle ------------------------------------------------------------

    def run(self) -> RunOutcome:
        self._install_signals()
        reason = "ended"
        failed = False
        try:
            self.recover()
            self.record("session", {"event": "start", "model_id": self.state["model_id"],
                                    "harness_revision": self.revision,
                                    "config_digest": self.state["config_digest"], "mode": self.state["mode"],
                                    "dry_run": self.p.dry_run, "tools": self.p.toolbox.available_types()})
            for found in self.p.toolbox.findings():  # MCP servers and skills: what started, what was left out
                self.record("session", {"event": "tools", **found})
                self.say(found["summary"])
            while True:
                self.check_control()
                self.check_budget()
                if self.cfg.agent.max_steps is not None and self.decisions >= self.cfg.agent.max_steps:
                    raise StopRun(f"max-steps budget ({self.cfg.agent.max_steps}) reached")
                self.step += 1
                self.save_progress()
                self.cycle()
        except StopRun as stop:
            reason = stop.reason
        except KeyboardInterrupt:
            reason = "interrupted (Ctrl+C)"
        except Exception as exc:  # noqa: BLE001 - a crash ends the run on the record, never as "ended"
            failed = True
            if disk_full(exc):
                self.p.journal.release_reserve()  # room for the last events and state.json
                reason = f"disk full: {exc.strerror}" + (f" ({exc.filename})" if exc.filename else "")
            else:
                reason = f"crashed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            self._try(lambda: self.record("error", {
                "stage": "loop", "error": reason, "exception": type(exc).__name__,
                "traceback": "".join(traceback.format_exception(exc))[-4000:]}))
        finally:
            self._restore_signals()
            outcome = RunOutcome(reason=reason, steps=self.step, finish=self.last_finish, failed=failed,
                                 valid_decisions=self.valid_decisions, model_errors=dict(self.model_errors))
            self._try(lambda: self.record("session", {
                "event": "end", "reason": reason, "steps": self.step, "valid_decisions": self.valid_decisions,
                "model_errors": outcome.model_errors}))
            self._save_final(reason)
            self._try(lambda: self.p.say(f"stopped after {self.step} step(s): {reason}"
                                         + (f"; {outcome.no_valid_decision}" if outcome.no_valid_decision else "")))
        path = self.p.journal.path
        outcome.journal = str(path) if path else None
        return outcome

    def _try(self, write: Callable[[], None]) -> bool:
        """A write on the way out: a full disk or a gone terminal must not hide why the run ended."""
        try:
            write()
            return True
        except OSError:
            return False

    def _save_final(self, reason: str) -> None:
        self.state.update(status="stopped", stop_reason=reason, pid=None, updated_at=self.p.clock.time())
        try:
            self.state_store.save(self.state)
        except OSError as exc:
            if not disk_full(exc):
                raise
            self.state_store.save_in_place(self.state)  # no room for a new file: reuse the current one's

    def cycle(self) -> None:
        goals = self._read(self.p.home.goals, "(no goals.md: write current work there)")
        if self.p.task:
            goals = f"Task for this session:\n{self.p.task}\n\nStanding goals:\n{goals}"
        if goals != getattr(self, "_journaled_goals", None):  # exports carry the instruction the model saw
            self._journaled_goals = goals
            self.record("session", {"event": "goals", "text": goals[:GOALS_JOURNAL_MAX_CHARS],
                                    "chars": len(goals)})
        try:
            obs = self.p.observer.observe()
        except Exception as exc:  # no screen: decide without an image; direct tools still run
            if disk_full(exc):
                raise  # no room for screenshots: stop rather than retry forever
            obs = self.screenless(exc)
        else:
            if self.screen_problem is not None:
                self.say("the screen is available again: screenshots and GUI actions are back")
                self.screen_problem = None
        changed = obs.change_key != self.last_change_key
        if changed:
            self.repeats.pop("gui", None)  # GUI repetition counters reset on a changed screen
        self.last_change_key = obs.change_key
        self.p.toolbox.note_observation(obs)
        self.record("observation", obs.record())

        ctx = self.build_context(goals, obs)
        try:
            decision = self.decide(ctx)
        except DecisionAborted as exc:  # a stop arrived and the request was abandoned: nothing to dispatch
            self.record("decision", {"raw_text": None, "actions": [], "model_id": getattr(self.p.policy, "model_id", "?"),
                                     "discarded": True, "aborted": True, "detail": str(exc),
                                     "dry_run": self.p.dry_run})
            self.check_control()
            raise StopRun(self.signal_stop or "stop requested") from None
        except RateLimited as exc:  # counts toward recovery backoff; the wait is bounded (conway/ratelimit.py)
            self.error_count += 1
            self.model_errors[exc.cause] = self.model_errors.get(exc.cause, 0) + 1
            a = self.cfg.agent
            earned = max(0, self.error_count - a.errors_before_backoff + 1)
            backoff = backoff_delay(a.recovery_backoff_start_s, a.recovery_backoff_max_s, earned) if earned else 0.0
            delay, why = rate_limit_wait(exc.retry_after, backoff, a.recovery_backoff_max_s, exc.source)
            self.record("error", {"stage": "decide", "error": str(exc), "rate_limited": True, "consecutive":
                                  self.error_count, "retry_after_s": exc.retry_after, "wait_s": delay, "why": why,
                                  "cause": exc.cause, "context": self.context_record(ctx)})
            self.say(f"rate limited by the model server: waiting {delay:g} s ({why})")
            self.wait(delay)
            return
        except PolicyError as exc:
            self.pre_dispatch_error(f"model request failed: {exc}", cause=exc.cause,
                                    context=self.context_record(ctx))
            return
        self.decisions += 1  # --max-steps counts answers the model gave, not rate limits or failed requests
        decision.meta.update(prompt_record(ctx.parts), harness_revision=self.revision)  # provenance per step
        # a stop that arrived during inference: the decision is discarded, never dispatched
        if self.signal_stop or read_control(self.p.home.control, self.p.session) == "stop":
            self.record("decision", {**decision.record(), "discarded": True, "dry_run": self.p.dry_run,
                                     "context": self.context_record(ctx)})
            self.check_control()
        self.record("decision", {**decision.record(), "dry_run": self.p.dry_run, "context": self.context_record(ctx)})
        self.act(decision, obs, changed)

    def decide(self, ctx: DecisionContext) -> Decision:
        """Ask the policy while watching for a stop (a signal or `conway stop`), which aborts the decision."""
        token = self._cancel = Cancel()
        try:
            return run_cancellable(lambda: self.p.policy.decide(ctx), token, self._stop_requested,
                                   self.cfg.agent.control_poll_s)
        finally:
            self._cancel = None

    def _run_tool(self, action: _Action) -> ToolResult:
        """Dispatch; a stop meanwhile ends a long tool (a shell command) early, its outcome recorded."""
        token = self._cancel = Cancel()
        try:
            with watching(token, self._stop_requested, self.cfg.agent.control_poll_s):
                return self.p.toolbox.run(action)
        finally:
            self._cancel = None

    def _stop_requested(self) -> str | None:
        if self.signal_stop:
            return self.signal_stop
        return "stop requested" if read_control(self.p.home.control, self.p.session) == "stop" else None

    def screenless(self, exc: Exception) -> Observation:
        """An observation without an image when the screen cannot be captured (said once, journaled)."""
        reason = str(exc) or type(exc).__name__
        if reason != self.screen_problem:
            self.say(f"screen unavailable: {reason}; deciding without a screenshot, GUI actions left out, "
                     "direct tools still run")
            self.screen_problem = reason
        return Observation(png=None, captured_size=(0, 0), source="none", content_hash="", change_key="no-screen",
                           meta={"screen_unavailable": reason})

    def build_context(self, goals: str, obs: Observation) -> DecisionContext:
        types = self.p.toolbox.available_types()
        if obs.png is None and getattr(obs, "image", None) is None:
            types = [t for t in types if t not in GUI_TYPES]  # nothing to point at
        key = tuple(types)
        if key not in self._action_spaces:  # the same text every cycle while the tools stay the same
            cap = self.cfg.agent.model_wait_cap_s
            self._action_spaces[key] = (describe_action_space(types)
                                        + f"\nA wait lasts at most {cap:g} s (longer requests are cut).")
        action_space = self._action_spaces[key] + self.p.toolbox.describe()  # + MCP tools, skill names
        captured = tuple(obs.captured_size) if obs.png is not None or getattr(obs, "image", None) is not None \
            else None
        fit = getattr(self.p.policy, "text_budget", None)
        fitted = fit(captured, types) if fit is not None else None
        budget = resolve_budget(self.cfg.context.budget_tokens, fitted.text_tokens if fitted else None)
        chars_per_token = self.cfg.context.chars_per_token
        if fitted is not None:
            chars_per_token = min(chars_per_token, fitted.chars_per_token)
        parts, dropped = build_parts(
            constitution=self._read(self.p.home.constitution, "(no constitution.md)"),
            goals=goals, memory=self._memory_text(), action_space=action_space,
            latest=self.latest, recent=self.recent.notes, budget_tokens=budget,
            chars_per_token=chars_per_token, accessibility=obs.accessibility)
        if captured is None:
            parts.append(ContextPart("screen", f"No screenshot this step: {obs.meta.get('screen_unavailable')}. "
                                               "GUI actions are not available; use the direct tools."))
        info: dict[str, Any] = {"budget_tokens": budget, "chars_per_token": round(chars_per_token, 3)}
        if fitted is not None:
            info.update({k: v for k, v in fitted.record().items() if k not in info})
        elif self.cfg.context.budget_tokens is None:
            info["window_source"] = "unknown (the model does not say): the default budget"
        return DecisionContext(parts=parts, observation=obs, step=self.step, action_types=types, dropped=dropped,
                               budget=info)

    @staticmethod
    def context_record(ctx: DecisionContext) -> dict[str, Any]:
        """What the journal keeps about one decision's prompt: its budget and what was left out."""
        return {**ctx.budget, "dropped": list(ctx.dropped), "action_types": list(ctx.action_types)}

    def act(self, decision: Decision, obs: Observation, changed: bool) -> None:
        checked = [self.p.toolbox.check(a) if isinstance(a, _Action) else a for a in decision.actions]
        problems = [a for a in checked if isinstance(a, ActionProblem)]
        actions = [a for a in checked if isinstance(a, _Action)]
        if problems or not actions:
            msg = "; ".join(p.message for p in problems) or "the model proposed no action"
            cause = decision_problem_cause(decision)
            self.pre_dispatch_error(msg if cause == "cut off" else f"{cause}: {msg}", cause=cause)
            return
        self.error_count = 0
        self.valid_decisions += 1
        for action in actions:
            self.check_control()
            if isinstance(action, Wait):
                self.idle(action, changed)
            elif isinstance(action, Finish):
                self.finish(action)
            else:
                self.idle_count = 0
                self.dispatch(action)

    # -- the parts of act -----------------------------------------------------

    def idle(self, action: Wait, changed: bool) -> None:
        """Wait as asked (capped at agent.max_model_wait_s) or by the idle backoff; record what was waited."""
        self.idle_count = 1 if changed else self.idle_count + 1
        a = self.cfg.agent
        cap = a.model_wait_cap_s
        asked = action.seconds or 0.0
        delay = max(min(asked, cap), backoff_delay(a.idle_backoff_start_s, a.idle_backoff_max_s, self.idle_count))
        started = self.p.clock.monotonic()
        ended_by = None
        try:
            self.wait(delay)
        except StopRun as stop:
            ended_by = stop.reason
            raise
        finally:  # written after the wait: the time actually waited, also when a stop cut it short
            waited = round(self.p.clock.monotonic() - started, 3)
            outcome = f"waited {waited:g} s" + (f" of {delay:g} s ({ended_by})" if ended_by else "") + \
                (f" (asked {asked:g} s, capped at {cap:g} s)" if asked > cap else "")
            self.note(action, outcome)
            self.record("result", {"action": action.model_dump(), "ok": True, "idle_wait_s": waited,
                                   "planned_wait_s": delay, **({"capped_at_s": cap} if asked > cap else {}),
                                   **({"ended_by": ended_by} if ended_by else {}), "dry_run": self.p.dry_run})

    def finish(self, action: Finish) -> None:
        self.last_finish = action.model_dump()
        self.record("finish", {**action.model_dump(), "declared_by": "model",
                               "note": "the model's own report; not a verified success"})
        self.note(action, "recorded (the model's own report)")
        self.say(f"model reports {action.status}: {action.message}")
        if self.p.single_session:
            raise StopRun(f"finish {action.status}")

    def dispatch(self, action: _Action) -> None:
        key = json.dumps(action.model_dump(), sort_keys=True)
        family = action.family
        last, times = self.repeats.get(family, (None, 0))
        times = times + 1 if last == key else 1
        if action.side_effect and times > self.cfg.agent.repetition_limit:
            msg = (f"suppressed: {action.summary()} was already done {times - 1} times in a row; "
                   "do something else or wait")
            self.record("suppressed", {"action": action.model_dump(), "times": times - 1})
            self.note(action, msg)
            return
        self.repeats[family] = (key, times)
        if self.p.dry_run:
            self.record("result", {"action": action.model_dump(), "dry_run": True, "ok": None,
                                   "detail": "planned only; not dispatched"})
            self.note(action, "planned only (dry run)")
            return
        if action.side_effect:
            self.record("intent", {"action": action.model_dump(), "summary": action.summary()})
            # the fsynced intent above is what recovery trusts; this copy is for `status`
            self.save_pending({"step": self.step, "action": action.model_dump(), "summary": action.summary(),
                               "at": self.p.clock.time()})
        try:
            result = self._run_tool(action)
        except FailSafeTriggered as exc:
            self._uncertain_end(action, f"fail-safe triggered: {exc}", "fail-safe triggered (pointer in a screen corner)")
        except DispatchUncertain as exc:
            self._uncertain_end(action, str(exc), "uncertain side-effect failure")
        except Exception as exc:  # noqa: BLE001 - any surprise during a side effect is uncertain
            if action.side_effect:
                self._uncertain_end(action, f"{type(exc).__name__}: {exc}", "uncertain side-effect failure")
            result = ToolResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        self.record("result" if result.ok else "error", {"action": action.model_dump(), **result.record()})
        if action.side_effect:  # recovery finds the journaled result if this write is lost
            self.save_pending(None)
        self.note(action, "ok" if result.ok else f"failed: {result.error}")
        shown = cut_text(result.text(), self.cfg.context.result_max_chars)[0]
        self.latest = f"{action.summary()} → {shown}"
        feedback = getattr(self.p.policy, "feedback", None)
        if feedback:
            feedback({"step": self.step, "action": action.model_dump(), **result.record()})

    def _uncertain_end(self, action: _Action, detail: str, reason: str) -> None:
        self.record("uncertain", {"action": action.model_dump(), "detail": detail})
        self.save_state(pending=None)  # recorded once; a restart must not record it again
        raise StopRun(reason)

    def pre_dispatch_error(self, message: str, cause: str = "model error",
                           context: dict[str, Any] | None = None) -> None:
        self.error_count += 1
        self.model_errors[cause] = self.model_errors.get(cause, 0) + 1
        a = self.cfg.agent
        delay = 0.0
        if self.error_count >= a.errors_before_backoff:
            delay = backoff_delay(a.recovery_backoff_start_s, a.recovery_backoff_max_s,
                                  self.error_count - a.errors_before_backoff + 1)
        spent = self.budget_spent_by(delay) if delay else None
        self.record("error", {"stage": "pre-dispatch", "error": message, "cause": cause,
                              "consecutive": self.error_count, "backoff_s": 0.0 if spent else delay,
                              **({"context": context} if context else {})})
        self.latest = f"ERROR: {message}"
        if self.recent.add(StepNote(self.step, "(no action)", f"error: {message[:200]}")):
            self.memory_view = None
        self.say(f"step {self.step}: {message}" + (f" (retrying in {delay:g} s)" if delay and not spent else ""))
        if delay:
            self.wait(delay)

    def note(self, action: _Action, outcome: str) -> None:
        slid = self.recent.add(StepNote(self.step, action.summary(), outcome))
        self.latest = f"{action.summary()} → {outcome}"
        compacted = self.memory.add(f"- step {self.step}: {action.summary()[:200]} → {outcome[:200]}")
        if compacted:
            self.record("recovery", {"what": "memory", "detail": compacted})
        if slid or compacted:
            self.memory_view = None
        self.say(f"step {self.step}: {action.summary()[:120]} → {outcome[:120]}")

    # -- helpers --------------------------------------------------------------

    def _memory_text(self) -> str:
        if self.memory_view is None or self.memory.edited_elsewhere():
            self.memory_view = self.memory.read()
        return self.memory_view

    def say(self, text: str) -> None:
        self.p.say(text)

    @staticmethod
    def _read(path, default: str) -> str:
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return default
        except OSError as exc:  # replaced by a folder while running, unreadable …: say so, carry on
            return f"(cannot read {path.name}: {exc.strerror})"

    def _install_signals(self) -> None:
        self._old_handlers = {}

        def handler(signum, frame):  # cooperative: the current step finishes its bookkeeping
            if self.signal_stop and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self.signal_stop = "interrupted (Ctrl+C)" if signum == signal.SIGINT else "terminated (SIGTERM)"
            if self._cancel is not None:  # a decision in flight: abort it now rather than at the next poll
                self._cancel.set(self.signal_stop)

        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old_handlers[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread (tests drive the loop from threads)
            self._old_handlers = {}

    def _restore_signals(self) -> None:
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)

