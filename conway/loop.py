"""The continuous cycle (DESIGN §2), in the order it runs:

read control → reread goals → observe → build context → decide (a stop meanwhile: discard)
→ validate → write intent (fsync) → dispatch → record result.

Everything the loop needs comes in through `LoopParts`. Stop/pause requests, signals, budgets
and sliced waits are `loop_control.Control`; start-up recovery is `recovery.recover`; repetition
suppression is `repetition.Repetitions`. An uncertain outcome is never replayed and ends the run.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable

from .actions import ActionProblem, Finish, Wait, _Action
from .cancel import DecisionAborted
from .context import RecentSteps, StepNote
from .decision_context import ContextBuilder, read_text
from .journal import make_event
from .loop_control import Clock, Control, StopRun, backoff_delay
from .loop_parts import LoopParts, RunOutcome
from .memory import Memory
from .protocols import Decision, DispatchUncertain, FailSafeTriggered, PolicyError, RateLimited, ToolResult
from .provenance import harness_revision, prompt_record
from .ratelimit import rate_limit_wait
from .recovery import recover
from .repetition import Repetitions
from .run_state import RunState, crash_reason, disk_full
from .tools.bounded import cut_text

__all__ = ["Clock", "Loop", "LoopParts", "PreDispatchError", "RunOutcome", "StopRun", "backoff_delay", "disk_full"]


class PreDispatchError(Exception):
    """Nothing can be dispatched this cycle (no observation, a failed model request, an invalid action).

    Raised inside the cycle and handled once in `Loop.run`: recorded, shown to the model, recovery backoff.
    """


class Loop:
    def __init__(self, parts: LoopParts):
        self.p = parts
        self.cfg = cfg = parts.config
        self.say = parts.say  # the one print path
        self.state = RunState(parts.home, parts.clock)
        self.memory = Memory(parts.home.memory, parts.home.memory_previous, cfg.memory.max_chars, cfg.memory.keep_chars)
        self.contexts = ContextBuilder(parts.home, cfg, parts.toolbox, self.memory)
        self.control = Control(parts.home.control, parts.session, parts.clock, cfg.agent, record=self.record,
                               set_status=lambda status: self.state.save(status=status), say=self.say,
                               before_sleep=self.state.flush)
        self.repeats = Repetitions(cfg.agent.repetition_limit)
        self.recent = RecentSteps(cfg.context.recent_steps)
        self.revision = harness_revision()
        self.step = 0
        self.decisions = 0
        """Decisions the model made (what --max-steps counts); `step` also counts cycles without one."""
        self.latest: str | None = None
        self.idle_count = 0
        self.error_count = 0
        self.last_change_key: str | None = None
        self.last_finish: dict[str, Any] | None = None

    # -- the run --------------------------------------------------------------

    def run(self) -> RunOutcome:
        self.control.install_signals()
        reason = "ended"
        failed = False
        try:
            self.start()
            while True:
                self.control.check()
                self.control.check_budget(self.decisions)
                self.step += 1
                self.state.progress(self.step)
                try:
                    self.cycle()
                except PreDispatchError as exc:
                    self.pre_dispatch_error(str(exc))
        except StopRun as stop:
            reason = stop.reason
        except KeyboardInterrupt:
            reason = "interrupted (Ctrl+C)"
        except Exception as exc:  # noqa: BLE001 - a crash ends the run on the record, never as "ended"
            failed, reason = True, crash_reason(exc)
            if disk_full(exc):
                self.p.journal.release_reserve()  # room for the last events and state.json
            error = {"stage": "loop", "error": reason, "exception": type(exc).__name__,
                     "traceback": "".join(traceback.format_exception(exc))[-4000:]}
            self._try(lambda: self.record("error", error))
        finally:
            self.control.restore_signals()
            self._try(lambda: self.record("session", {"event": "end", "reason": reason, "steps": self.step}))
            self.state.final(reason)
            self._try(lambda: self.say(f"stopped after {self.step} step(s): {reason}"))
        path = self.p.journal.path
        return RunOutcome(reason=reason, steps=self.step, finish=self.last_finish, failed=failed,
                          journal=str(path) if path else None)

    def start(self) -> None:
        """Recover what a previous run left, write the running state, record the session's start."""
        self.latest = recover(self.p.home, self.p.journal, self.state.store, self.record, self.say)
        model_id, digest = getattr(self.p.policy, "model_id", "?"), self.cfg.digest()
        mode = "session" if self.p.single_session else "continuous"
        self.state.begin(self.p.session, model_id=model_id, config_digest=digest, mode=mode, dry_run=self.p.dry_run)
        self.record("session", {"event": "start", "model_id": model_id, "harness_revision": self.revision,
                                "config_digest": digest, "mode": mode, "dry_run": self.p.dry_run,
                                "tools": self.p.toolbox.available_types()})
        for found in self.p.toolbox.findings():  # MCP servers and skills: what started, what was left out
            self.record("session", {"event": "tools", **found})
            self.say(found["summary"])

    # -- one cycle (control was read by `run`) -------------------------------

    def cycle(self) -> None:
        goals = read_text(self.p.home.goals, "(no goals.md: write current work there)")
        if self.p.task:
            goals = f"Task for this session:\n{self.p.task}\n\nStanding goals:\n{goals}"
        try:
            obs = self.p.observer.observe()
        except Exception as exc:  # a lost display is a pre-dispatch error, not a crash
            if disk_full(exc):
                raise  # no room for screenshots: stop rather than retry forever
            raise PreDispatchError(f"observation failed: {exc}") from exc
        changed = obs.change_key != self.last_change_key
        if changed:
            self.repeats.screen_changed()
        self.last_change_key = obs.change_key
        self.p.toolbox.note_observation(obs)
        self.record("observation", obs.record())

        ctx = self.contexts.build(goals, obs, self.step, self.latest, self.recent.notes)
        try:
            decision = self.control.cancellable(lambda: self.p.policy.decide(ctx))  # a stop aborts it
        except DecisionAborted as exc:  # a stop arrived and the request was abandoned: nothing to dispatch
            self.record("decision", {"raw_text": None, "actions": [], "model_id": getattr(self.p.policy, "model_id", "?"),
                                     "discarded": True, "aborted": True, "detail": str(exc), "dry_run": self.p.dry_run})
            self.control.check()
            raise StopRun(self.control.signal_stop or "stop requested") from None
        except RateLimited as exc:  # not a failed request: a bounded wait, then a fresh cycle
            self.rate_limited(exc)
            return
        except PolicyError as exc:
            raise PreDispatchError(f"model request failed: {exc}") from exc
        self.decisions += 1  # --max-steps counts answers the model gave, not rate limits or failed requests
        decision.meta.update(prompt_record(ctx.parts), harness_revision=self.revision)  # provenance per step
        if self.control.stop_requested():  # a stop that arrived during inference: discarded, never dispatched
            self.record("decision", {**decision.record(), "discarded": True, "dry_run": self.p.dry_run})
            self.control.check()
        self.record("decision", {**decision.record(), "dry_run": self.p.dry_run})
        self.act(decision, changed)

    def act(self, decision: Decision, changed: bool) -> None:
        """Validate every proposed action, then carry them out in order (`changed`: the screen changed)."""
        checked = [self.p.toolbox.check(a) if isinstance(a, _Action) else a for a in decision.actions]
        problems = [a for a in checked if isinstance(a, ActionProblem)]
        actions = [a for a in checked if isinstance(a, _Action)]
        if problems or not actions:
            raise PreDispatchError("invalid action: " + ("; ".join(p.message for p in problems)
                                                          or "the model proposed no action"))
        self.error_count = 0
        for action in actions:
            self.control.check()
            if isinstance(action, Wait):
                self.idle(action, changed)
            elif isinstance(action, Finish):
                self.finish(action)
            else:
                self.idle_count = 0
                self.dispatch(action)

    def idle(self, action: Wait, changed: bool) -> None:
        self.idle_count = 1 if changed else self.idle_count + 1
        delay = max(action.seconds or 0.0, self.control.idle_delay(self.idle_count))
        self.note(action, f"waited {delay:g} s")
        self.record("result", {"action": action.model_dump(), "ok": True, "idle_wait_s": delay,
                               "dry_run": self.p.dry_run})
        self.control.wait(delay)

    def finish(self, action: Finish) -> None:
        self.last_finish = action.model_dump()
        self.record("finish", {**action.model_dump(), "declared_by": "model",
                               "note": "the model's own report; not a verified success"})
        self.note(action, "recorded (the model's own report)")
        self.say(f"model reports {action.status}: {action.message}")
        if self.p.single_session:
            raise StopRun(f"finish {action.status}")

    def dispatch(self, action: _Action) -> None:
        """Intent (fsynced) → side effect → result; an uncertain outcome ends the run."""
        times = self.repeats.suppressed(action)
        if times is not None:
            self.record("suppressed", {"action": action.model_dump(), "times": times})
            self.note(action, f"suppressed: {action.summary()} was already done {times} times in a row; "
                              "do something else or wait")
            return
        if self.p.dry_run:
            self.record("result", {"action": action.model_dump(), "dry_run": True, "ok": None,
                                   "detail": "planned only; not dispatched"})
            self.note(action, "planned only (dry run)")
            return
        if action.side_effect:
            self.record("intent", {"action": action.model_dump(), "summary": action.summary()})
            # the fsynced intent above is what recovery trusts; this copy is for `status`
            self.state.save_pending({"step": self.step, "action": action.model_dump(), "summary": action.summary(),
                                     "at": self.p.clock.time()})
        try:
            result = self.control.watched(lambda: self.p.toolbox.run(action))  # a stop ends a long tool early
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
            self.state.save_pending(None)
        self.note(action, "ok" if result.ok else f"failed: {result.error}")
        self.latest = f"{action.summary()} → {cut_text(result.text(), self.cfg.context.result_max_chars)[0]}"
        feedback = getattr(self.p.policy, "feedback", None)
        if feedback:
            feedback({"step": self.step, "action": action.model_dump(), **result.record()})

    def _uncertain_end(self, action: _Action, detail: str, reason: str) -> None:
        self.record("uncertain", {"action": action.model_dump(), "detail": detail})
        self.state.save(pending=None)  # recorded once; a restart must not record it again
        raise StopRun(reason)

    # -- what a cycle without a dispatch records ------------------------------

    def pre_dispatch_error(self, message: str) -> None:
        """Record it, show it to the model, and back off after repeated ones (5, 10, 20 … s)."""
        self.error_count += 1
        delay = self.control.recovery_delay(self.error_count)
        self.record("error", {"stage": "pre-dispatch", "error": message, "consecutive": self.error_count,
                              "backoff_s": delay})
        self.latest = f"ERROR: {message}"
        if self.recent.add(StepNote(self.step, "(no action)", f"error: {message[:200]}")):
            self.contexts.memory_changed()
        self.say(f"step {self.step}: {message}" + (f" (retrying in {delay:g} s)" if delay else ""))
        if delay:
            self.control.wait(delay)

    def rate_limited(self, exc: RateLimited) -> None:
        """Counts toward recovery backoff; the wait is bounded (conway/ratelimit.py)."""
        self.error_count += 1
        delay, why = rate_limit_wait(exc.retry_after, self.control.recovery_delay(self.error_count),
                                     self.cfg.agent.recovery_backoff_max_s, exc.source)
        self.record("error", {"stage": "decide", "error": str(exc), "rate_limited": True, "consecutive":
                              self.error_count, "retry_after_s": exc.retry_after, "wait_s": delay, "why": why})
        self.say(f"rate limited by the model server: waiting {delay:g} s ({why})")
        self.control.wait(delay)

    def note(self, action: _Action, outcome: str) -> None:
        slid = self.recent.add(StepNote(self.step, action.summary(), outcome))
        self.latest = f"{action.summary()} → {outcome}"
        compacted = self.memory.add(f"- step {self.step}: {action.summary()[:200]} → {outcome[:200]}")
        if compacted:
            self.record("recovery", {"what": "memory", "detail": compacted})
        if slid or compacted:
            self.contexts.memory_changed()
        self.say(f"step {self.step}: {action.summary()[:120]} → {outcome[:120]}")

    # -- journal & state ------------------------------------------------------

    def record(self, kind: str, payload: dict[str, Any]) -> None:
        self.p.journal.append(make_event(self.p.session, self.step, kind, payload, now=self.p.clock.time()))

    @staticmethod
    def _try(write: Callable[[], None]) -> bool:
        """A write on the way out: a full disk or a gone terminal must not hide why the run ended."""
        try:
            write()
            return True
        except OSError:
            return False
