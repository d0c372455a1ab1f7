"""The continuous cycle (docs/architecture.md#the-cycle): read control → reread goals → observe → build context
→ decide (a stop meanwhile: discard) → validate → write intent (fsync) → dispatch → record result.

Everything comes in through `LoopParts`. Around it: `control` (stop/pause, signals, budgets, sliced waits), `ending`,
`recovery` (start-up), `run_state` (state.json), `step_errors` (a step without a dispatch), `prompt.decision`
(what the model sees), `repetition`, `observe.fallback` (no screen). An uncertain outcome is never replayed and ends the run.
"""

from __future__ import annotations

from typing import Any

from conway.actions import ActionProblem, Finish, Wait, _Action
from conway.cancel import DecisionAborted
from conway.geometry import ScreenGeometry
from conway.loop.control import Control
from conway.loop.ending import PreDispatchError, RunEnd, StopRun
from conway.loop.memory_upkeep import MemoryUpkeep
from conway.loop.parts import LoopParts, RunOutcome
from conway.loop.recovery import start_up
from conway.loop.repetition import Repetitions
from conway.loop.run_state import RunState, best_effort, crash_report, disk_full
from conway.loop.step_errors import StepErrors
from conway.loop.takeover import Takeover
from conway.observe.fallback import ScreenFallback
from conway.prompt.decision import ContextBuilder, context_record
from conway.protocols import (
    Decision,
    DispatchUncertain,
    FailSafeTriggered,
    PolicyError,
    ToolResult,
    decision_problem_cause,
)
from conway.store import events
from conway.store.journal import make_event
from conway.store.provenance import harness_revision, prompt_record
from conway.text.bounded import cut_text


class Loop:
    def __init__(self, parts: LoopParts):
        self.p = parts
        self.cfg = cfg = parts.config
        self.say = parts.say  # the one print path
        self.state = RunState(parts.home, parts.clock)
        self.control = Control(parts.home.control, parts.session, parts.clock, cfg.agent, record=self.record,
                               set_status=lambda status: self.state.save(status=status), say=self.say,
                               before_sleep=self.state.flush, decisions=lambda: self.decisions)
        self.control.takeover = Takeover(parts.observer, self.record,
                                         lambda summary, outcome, step: self.contexts.note_human(
                                             self.step if step is None else step, summary, outcome),
                                         self.say, parts.human_recorder, before=self.journal_goals,
                                         current_step=lambda: self.step)
        self.memory = MemoryUpkeep(parts, self.control, self.record)  # compacts between cycles, never mid-decision
        self.contexts = ContextBuilder(parts.home, cfg, parts.toolbox, parts.policy, self.memory.memory,
                                       parts.clock.monotonic, say=self.say, record=self.record)
        self.screen = ScreenFallback(parts.observer, self.say, fatal=disk_full)  # no room for screenshots: stop
        self.repeats = Repetitions(cfg.agent.repetition_limit)
        self.outcome = RunOutcome(reason="running", steps=0)  # filled in as the run goes
        self.revision = harness_revision()
        self.step = 0
        self.decisions = 0  # the model's answers (what --max-steps counts); `step` also counts cycles without one
        self.idle_count = 0
        self.errors = StepErrors(self.control, self.outcome, self.contexts, cfg.agent.max_permanent_failures,
                                 cfg.agent.recovery_backoff_max_s, self.record, self.say)
        self.last_change_key: str | None = None

    # -- the run --------------------------------------------------------------

    def run(self) -> RunOutcome:
        self.control.start()  # signals are cooperative stops until `close`
        end = StopRun("ended", RunEnd.CRASHED)  # what a BaseException passing through (SystemExit) leaves
        try:
            self.contexts.latest = start_up(self.p, self.state, self.record, self.revision)  # recovery first
            while True:
                self.control.check()
                self.memory.between_cycles()  # past memory.max_chars: a summary (a stop aborts it) or the truncation
                self.control.check_budget(steps=True)
                self.step = max(self.step, self.control.takeover.high) + 1  # past a person's steps in a takeover
                self.state.progress(self.step)
                try:
                    self.cycle()
                except PreDispatchError as exc:
                    self.errors.handle(exc, self.step)
        except StopRun as stop:
            end = stop
        except KeyboardInterrupt:
            end = StopRun("interrupted (Ctrl+C)", RunEnd.INTERRUPTED)
        except Exception as exc:
            end, error = crash_report(exc)
            if disk_full(exc):
                self.p.journal.release_reserve()  # room for the last events and state.json
            best_effort(lambda: self.record("error", error))
        finally:
            self.control.close()
            out = self.outcome.ended(end.reason, end.end, self.step)
            best_effort(lambda: self.record("session", out.end_record()))
            self.state.final(end.reason)
            best_effort(lambda: self.say(out.summary()))
        out.journal = str(self.p.journal.path) if self.p.journal.path else None
        return out

    # -- one cycle (control was read by `run`) -------------------------------

    def journal_goals(self) -> str:
        """The goals (or the task) read again; journaled when they changed: exports carry the instruction the
        model saw (and a person's steps the instruction they were given)."""
        goals, goals_event = self.contexts.goals(self.p.task)
        if goals_event:
            self.record("session", goals_event)
        return goals

    def cycle(self) -> None:
        if self.control.handed_back:  # a person acted while the run was held: the next decision is told what
            self.contexts.latest, self.control.handed_back = self.control.handed_back, None
        goals = self.journal_goals()
        obs = self.screen.observe()  # without a screen: an observation without an image
        changed = obs.change_key != self.last_change_key
        if changed:
            self.repeats.screen_changed()
        self.last_change_key = obs.change_key
        self.record("observation", obs.record())

        ctx = self.contexts.build(goals, obs, self.step)
        try:
            decision = self.control.cancellable(lambda: self.p.policy.decide(ctx), abortable=self.p.abortable)
        except DecisionAborted as exc:  # a stop arrived and the request was abandoned: nothing to dispatch
            self.record("decision", {"raw_text": None, "actions": [], "model_id": self.p.policy.model_id,
                                     "discarded": True, "aborted": True, "detail": str(exc), "dry_run": self.p.dry_run})
            self.control.check()
            raise self.control.pending_stop() or StopRun("stop requested", RunEnd.STOP_REQUESTED) from None
        except PolicyError as exc:  # a failed request or a rate limit: nothing to dispatch
            raise PreDispatchError(f"model request failed: {exc}", exc.cause, context_record(ctx), exc) from exc
        self.decisions += 1  # --max-steps counts answers the model gave, not rate limits or failed requests
        decision.meta.update(prompt_record(ctx.parts), harness_revision=self.revision)  # provenance per step
        held = self.control.holds()  # a stop or a pause came during inference: discarded, never dispatched
        self.record("decision", {**decision.record(), **({"discarded": True} if held else {}),
                                 "dry_run": self.p.dry_run, "context": context_record(ctx)})
        if held:
            self.control.check()  # a stop ends the run; after a pause the next cycle observes anew
            return
        self.act(decision, changed, obs.geometry)

    def act(self, decision: Decision, changed: bool, screen: ScreenGeometry | None) -> None:
        """Validate every proposed action, then run them in order (`screen`: the observation's, for the tools)."""
        checked = [self.p.toolbox.check(a) if isinstance(a, _Action) else a for a in decision.actions]
        problems = [a for a in checked if isinstance(a, ActionProblem)]
        actions = [a for a in checked if isinstance(a, _Action)]
        if problems or not actions:
            msg = "; ".join(p.message for p in problems) or "the model proposed no action"
            cause = decision_problem_cause(decision)
            raise PreDispatchError(msg if cause == "cut off" else f"{cause}: {msg}", cause)
        self.errors.count = 0
        self.outcome.valid_decisions += 1
        for n, action in enumerate(actions):
            if self.control.check():  # held by a pause: the screen may have changed since the decision
                return self.record("control", {"discarded_actions": [a.model_dump() for a in actions[n:]]})
            if isinstance(action, Wait):
                self.idle(action, changed)
            elif isinstance(action, Finish):
                self.finish(action)
            else:
                self.idle_count = 0
                self.dispatch(action, screen)

    def idle(self, action: Wait, changed: bool) -> None:
        """The model waits (idle backoff while the screen is unchanged); what was waited is recorded after."""
        self.idle_count = 1 if changed else self.idle_count + 1

        def done(outcome: str, waited: dict[str, Any]) -> None:
            self.note(action, outcome)
            self.record("result", {"action": action.model_dump(), "ok": True, **waited, "dry_run": self.p.dry_run})
        self.control.idle_wait(action.seconds or 0.0, self.idle_count, done)

    def finish(self, action: Finish) -> None:
        self.outcome.finish = action.model_dump()
        by = getattr(self.p.policy, "finished_by", "model")
        outcome, note = events.FINISH_NOTES.get(by, events.FINISH_NOTES["model"])
        self.record("finish", events.Finish(**self.outcome.finish, declared_by=by, note=note).to_payload())
        self.note(action, outcome)
        self.say(f"{by} reports {action.status}: {action.message}")
        if self.p.single_session:
            raise StopRun(f"finish {action.status}", RunEnd.FINISHED)

    def dispatch(self, action: _Action, screen: ScreenGeometry | None = None) -> None:
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
        dumped, summary = action.model_dump(), action.summary()  # once: actions are frozen
        if action.side_effect:  # the fsynced intent is the authority (recovery, `status`) ...
            self.record("intent", events.Intent(dumped, summary).to_payload())
        if action.side_effect and action.lengthy:  # ... and what may take a while is shown in state.json
            self.state.save_pending({"step": self.step, "action": dumped, "summary": summary,
                                     "at": self.p.clock.time()})
        try:  # the dispatch contract (`Tool.run`): ok=False had no effect; an exception may have had one
            result = self.control.watched(lambda: self.p.toolbox.run(action, screen), self.p.toolbox.cancellable(action))
        except FailSafeTriggered as exc:
            self.uncertain_end(action, f"fail-safe triggered: {exc}", "fail-safe triggered (pointer in a screen corner)",
                               RunEnd.FAIL_SAFE)
        except DispatchUncertain as exc:
            self.uncertain_end(action, str(exc), "uncertain side-effect failure", RunEnd.UNCERTAIN)
        except Exception as exc:
            if action.side_effect:
                self.uncertain_end(action, f"{type(exc).__name__}: {exc}", "uncertain side-effect failure",
                                   RunEnd.UNCERTAIN)
            result = ToolResult(ok=False, error=f"{type(exc).__name__}: {exc}")
        self.record("result" if result.ok else "error", {"action": dumped, **result.record()})
        if action.side_effect:  # recovery finds the journaled result if this write is lost
            self.state.save_pending(None)
        self.note(action, "ok" if result.ok else f"failed: {result.error}", summary)
        shown = cut_text(result.text(), self.cfg.context.result_max_chars)[0]
        self.contexts.latest = f"{summary} → {shown}"
        # Policy.feedback: every recorded result (a no-op unless the policy learns from them)
        self.p.policy.feedback({"step": self.step, "action": dumped, **result.record()})

    def uncertain_end(self, action: _Action, detail: str, reason: str, end: RunEnd) -> None:
        self.record("uncertain", {"action": action.model_dump(), "detail": detail})
        self.state.save(pending=None)  # recorded once; a restart must not record it again
        raise self.control.pending_stop() or StopRun(reason, end)  # a stop that cut it short is how it ended

    # -- what a step leaves for the next ones --------------------------------

    def note(self, action: _Action, outcome: str, summary: str | None = None) -> None:
        self.contexts.note(self.step, summary := summary or action.summary(), outcome)
        self.say(f"step {self.step}: {summary[:120]} → {outcome[:120]}")

    def record(self, kind: str, payload: dict[str, Any], step: int | None = None) -> None:
        """Journal an event at this cycle's step (or at `step`: a person's action during a takeover)."""
        self.p.journal.append(make_event(self.p.session, self.step if step is None else step, kind, payload,
                                         now=self.p.clock.time()))
