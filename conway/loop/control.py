"""What holds or ends a run from outside the cycle: stop and pause requests, signals, budgets, sliced waits.

The loop asks `Control` whether it may go on (`check`, `check_budget`), to
wait while staying responsive (`wait`: short slices, control checked between
them), and to run a decision or a tool while watching for a stop (`cancellable`,
`watched`). SIGINT and SIGTERM are cooperative: they set `signal_stop` and abort
the work in flight; a second Ctrl+C raises KeyboardInterrupt.
"""

from __future__ import annotations

import contextlib
import math
import signal
import time
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from conway.cancel import Cancel, Watcher, Worker, run_cancellable, watching
from conway.config import AgentConfig
from conway.loop.ending import RunEnd, StopRun
from conway.store.state import ReadIfChanged, read_control

T = TypeVar("T")


class Clock:
    """Wall time, monotonic time and sleep; tests inject a fake that advances instantly."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class SimulatedClock(Clock):
    """Time moves only when the loop sleeps, and every sleep is recorded: a scripted run (the viewer's
    recorded session, the loop's tests) finishes at once and its waits can be read back."""

    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.sleeps: list[float] = []
        self.on_sleep: Callable[[float], None] | None = None

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(self.now)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Until the loop takes signals over (start-up: the policy, MCP servers starting), SIGTERM interrupts
    like Ctrl+C (once), so what was already started is stopped on the way out instead of left running."""
    raised = []

    def handler(signum, frame):
        if not raised:
            raised.append(signum)
            raise KeyboardInterrupt("terminated (SIGTERM)")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: the caller handles signals
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def backoff_delay(start: float, cap: float, count: int) -> float:
    """start, 2·start, 4·start … capped: the count-th wait (count ≥ 1), for any count."""
    doublings = max(0, count - 1)
    if start >= cap or doublings >= math.log2(cap / start):
        return cap  # decided before computing 2**n, which overflows a float past n = 1023
    return start * 2.0 ** doublings


class Control:
    """One run's stop/pause requests (control.json for this session), signals, budgets and waits.

    `record(kind, payload)` journals control events, `set_status(status)` writes state.json,
    `say` prints, `before_sleep` flushes what waited for the next state write, `decisions` counts the
    model's answers so far (what --max-steps counts).
    """

    def __init__(self, control_path: Path, session: str, clock: Clock, agent: AgentConfig, *,
                 record: Callable[[str, dict[str, Any]], None], set_status: Callable[[str], None],
                 say: Callable[[str], None], before_sleep: Callable[[], None], decisions: Callable[[], int]):
        self.path = control_path
        self.session = session
        self.clock = clock
        self.agent = agent
        self.record = record
        self.set_status = set_status
        self.say = say
        self.before_sleep = before_sleep
        self.decisions = decisions
        self.started = clock.monotonic()
        self.signal_stop: str | None = None
        self._signal_end = RunEnd.INTERRUPTED  # which signal set signal_stop
        self._cancel: Cancel | None = None
        self._old_handlers: dict[int, Any] = {}
        self._worker = Worker()  # the decisions' thread, one for the whole run
        self._watcher = Watcher(agent.control_poll_s)  # watches an abortable decision run on the loop's thread
        self._requests = ReadIfChanged(control_path, lambda path: read_control(path, session), None)
        self.takeover: Any = None
        """`conway.loop.takeover.Takeover` (set by the loop): records what a person does while taken over."""
        self.handed_back: str | None = None
        """What the person did during the last takeover (the loop shows it to the next decision), until taken."""

    # -- requests -------------------------------------------------------------

    def request(self) -> str | None:
        """This session's control request (control.json is parsed again only when it changed)."""
        return self._requests.get()

    def holds(self) -> bool:
        """A stop or a pause is pending: an answer decided before it must not be dispatched after it."""
        return bool(self.signal_stop) or self.request() in ("stop", "pause", "takeover")

    def pending_stop(self) -> StopRun | None:
        """The stop the run should end by now (a signal or `conway stop`), else None."""
        if self.signal_stop:
            return StopRun(self.signal_stop, self._signal_end)
        return StopRun("stop requested", RunEnd.STOP_REQUESTED) if self.request() == "stop" else None

    def stop_requested(self) -> str | None:
        """Why the run should stop now (a signal or `conway stop`), else None."""
        stop = self.pending_stop()
        return stop.reason if stop else None

    def check(self) -> bool:
        """Raise StopRun on a stop; on a pause, hold here (polling) until resume or stop: then True (held)."""
        if self.signal_stop:
            raise StopRun(self.signal_stop, self._signal_end)
        request = self.request()
        if request == "stop":
            self.record("control", {"request": "stop"})
            raise StopRun("stop requested", RunEnd.STOP_REQUESTED)
        if request == "takeover":
            return self._taken_over()
        if request == "pause":
            self.record("control", {"request": "pause"})
            self.set_status("paused")
            self.say("paused; `conway resume` continues")
            while self.request() == "pause":
                if self.signal_stop:
                    raise StopRun(self.signal_stop, self._signal_end)
                self.clock.sleep(self.agent.control_poll_s)
            if self.request() == "stop":
                self.record("control", {"request": "stop"})
                raise StopRun("stop requested", RunEnd.STOP_REQUESTED)
            self.record("control", {"request": "resume"})
            self.set_status("running")
            self.say("resumed")
            return True
        return False

    def _taken_over(self) -> bool:
        """Held while a person acts (`conway takeover`), their input recorded, until `conway handback` or a stop."""
        self.record("control", {"request": "takeover"})
        hooks = self.takeover
        if hooks is not None:
            hooks.begin()  # recording before the status says so: input after `conway takeover` returns is kept
        self.set_status("taken over")
        self.say("taken over: the agent holds while a person acts; `conway handback` gives it back")
        try:
            while self.request() == "takeover":
                if self.signal_stop:
                    raise StopRun(self.signal_stop, self._signal_end)
                # --max-seconds bounds the hold too: `conway record` starts taken over, and with nobody at the
                # screen no cycle would ever come round to check the budget
                self.check_budget()
                if hooks is not None:
                    hooks.poll()
                self.clock.sleep(self.agent.control_poll_s)
        finally:
            done = hooks.end() if hooks is not None else None
        self.handed_back = done
        if self.request() == "stop":
            self.record("control", {"request": "stop"})
            raise StopRun("stop requested", RunEnd.STOP_REQUESTED)
        self.record("control", {"request": "handback", "human_actions": len(getattr(hooks, "actions", []) or []),
                                "told": done})
        self.set_status("running")
        self.say("handed back: the agent goes on from a fresh observation")
        return True

    # -- budgets --------------------------------------------------------------

    def check_budget(self, steps: bool = False) -> None:
        """Raise StopRun once max-seconds is spent, or (with `steps`, before a cycle) max-steps."""
        a = self.agent
        if a.max_seconds is not None and self.clock.monotonic() - self.started >= a.max_seconds:
            raise StopRun(f"max-seconds budget ({a.max_seconds:g} s) reached", RunEnd.MAX_SECONDS)
        if steps and a.max_steps is not None and self.decisions() >= a.max_steps:
            raise StopRun(f"max-steps budget ({a.max_steps}) reached", RunEnd.MAX_STEPS)

    def seconds_left(self) -> float | None:
        """What is left of --max-seconds (None: no such budget)."""
        a = self.agent
        return None if a.max_seconds is None else a.max_seconds - (self.clock.monotonic() - self.started)

    def budget_spent_by(self, seconds: float) -> StopRun | None:
        """The end a wait of `seconds` now would only sleep towards, already decided (else None)."""
        a = self.agent
        if seconds <= 0:
            return None
        if a.max_steps is not None and self.decisions() >= a.max_steps:
            return StopRun(f"max-steps budget ({a.max_steps}) reached", RunEnd.MAX_STEPS)
        if a.max_seconds is not None and self.clock.monotonic() + seconds - self.started >= a.max_seconds:
            return StopRun(f"max-seconds budget ({a.max_seconds:g} s) reached (a {seconds:g} s wait would outlast "
                           "it)", RunEnd.MAX_SECONDS)
        return None

    # -- backoff --------------------------------------------------------------

    def recovery_delay(self, errors: int) -> float:
        """The wait after `errors` consecutive errors before dispatch: none until errors_before_backoff,
        then 5, 10, 20 … s up to the cap."""
        a = self.agent
        if errors < a.errors_before_backoff:
            return 0.0
        return backoff_delay(a.recovery_backoff_start_s, a.recovery_backoff_max_s, errors - a.errors_before_backoff + 1)

    def idle_delay(self, idles: int) -> float:
        """The wait of the `idles`-th idle cycle in a row on an unchanged screen: 2, 4, 8 … s up to the cap."""
        return backoff_delay(self.agent.idle_backoff_start_s, self.agent.idle_backoff_max_s, idles)

    # -- waiting --------------------------------------------------------------

    def wait(self, seconds: float) -> None:
        """Sleep in short slices, checking control (and the time budget) between them.

        Budgets come first: a wait after the last allowed decision, or one that would outlast
        max-seconds, ends the run at once instead of sleeping towards an end already reached.
        """
        spent = self.budget_spent_by(seconds)
        if spent:
            raise spent
        self.before_sleep()
        end = self.clock.monotonic() + seconds
        while True:
            self.check()
            self.check_budget()
            left = end - self.clock.monotonic()
            if left <= 0:
                return
            self.clock.sleep(min(self.agent.control_poll_s, left))

    def idle_wait(self, asked: float, idles: int, done: Callable[[str, dict[str, Any]], None]) -> None:
        """The model's wait: as asked (capped at agent.max_model_wait_s) or the `idles`-th idle backoff, the
        longer; then `done(outcome, record)` with the time actually waited, also when a stop cut it short."""
        cap = self.agent.model_wait_cap_s
        delay = max(min(asked, cap), self.idle_delay(idles))
        started, ended_by = self.clock.monotonic(), None
        try:
            self.wait(delay)
        except StopRun as stop:
            ended_by = stop.reason
            raise
        finally:
            waited = round(self.clock.monotonic() - started, 3)
            capped = asked > cap
            done(f"waited {waited:g} s" + (f" of {delay:g} s ({ended_by})" if ended_by else "")
                 + (f" (asked {asked:g} s, capped at {cap:g} s)" if capped else ""),
                 {"idle_wait_s": waited, "planned_wait_s": delay, **({"capped_at_s": cap} if capped else {}),
                  **({"ended_by": ended_by} if ended_by else {})})

    def cancellable(self, fn: Callable[[], T], within_s: float | None = None, abortable: bool = False) -> T:
        """Run a decision while watching for a stop, which aborts it (DecisionAborted). `within_s`: a deadline
        (wall time) that aborts it the same way; `pending_stop` tells the two apart. `abortable` (the policy
        returns soon once aborted: `Policy.abortable`): it runs on this thread, watched; otherwise on the run's
        worker thread, abandoned if it is not back within a grace after the stop."""
        token = self._cancel = Cancel()
        end = None if within_s is None else time.monotonic() + within_s

        def why() -> str | None:
            stop = self.stop_requested()
            if stop is None and end is not None and time.monotonic() >= end:
                return f"timed out after {within_s:g} s"
            return stop
        try:
            if abortable:
                return self._watcher.run(fn, token, why)
            return run_cancellable(fn, token, why, self.agent.control_poll_s, worker=self._worker)
        finally:
            self._cancel = None

    def watched(self, fn: Callable[[], T], cancellable: bool) -> T:
        """Run a tool. A `cancellable` one (a shell command) is watched and a stop meanwhile ends it early; any
        other runs as it is (it is short: a stop or a signal takes effect as soon as it returns)."""
        if not cancellable:
            return fn()
        token = self._cancel = Cancel()
        try:
            with watching(token, self.stop_requested, self.agent.control_poll_s):
                return fn()
        finally:
            self._cancel = None

    # -- signals --------------------------------------------------------------

    def start(self) -> None:
        """The run begins: SIGINT and SIGTERM become cooperative stops."""
        def handler(signum, frame):  # cooperative: the current step finishes its bookkeeping
            if self.signal_stop and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self._signal_end = RunEnd.INTERRUPTED if signum == signal.SIGINT else RunEnd.TERMINATED  # read with it
            self.signal_stop = "interrupted (Ctrl+C)" if signum == signal.SIGINT else "terminated (SIGTERM)"
            if self._cancel is not None:  # work in flight: abort it now rather than at the next poll
                self._cancel.set(self.signal_stop)

        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old_handlers[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread (tests drive the loop from threads)
            self._old_handlers = {}

    def close(self) -> None:
        """The run ends: the previous signal handlers come back and the decisions' thread ends."""
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._worker.close()
        self._watcher.close()
