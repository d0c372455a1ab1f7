"""A person takes over (`conway takeover`), acts, and hands back (`conway handback`).

While the session is taken over the loop holds as it does for a pause; the person's pointer and key input on the
session's display is recorded (`conway.observe.human`) and journaled as `human` events, one per action of the
schema, each at a step of its own with the screenshot of the screen it was done on (`observation`). On hand back, the next decision's
latest result says what the person did, and each action is in the recent steps marked as the person's.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from conway.actions import _Action, parse_action
from conway.protocols import Observer

HUMAN_NOTE = "done by a person (takeover)"


def display_of(observer: Observer) -> str | None:
    """The X display a screen observer looks at (its own, else $DISPLAY); None for one without a screen."""
    if not hasattr(observer, "capture"):
        return None
    return getattr(observer, "display", None) or os.environ.get("DISPLAY")


class Takeover:
    """`begin` when the hold starts, `poll` while it lasts, `end` when the person hands back (or a stop comes)."""

    def __init__(self, observer: Observer, record: Callable[..., None],
                 note: Callable[[str, str, int | None], None], say: Callable[[str], None],
                 recorder_factory: Callable[[str | None], Any] | None = None, *,
                 before: Callable[[], Any] | None = None, current_step: Callable[[], int] | None = None):
        self.observer = observer
        self.record = record
        """`record(kind, payload, step=None)`: the loop's journal writer (a step number given, or the cycle's)."""
        self.note = note
        self.say = say
        self.factory = recorder_factory
        self.before_hold = before
        """Called as the hold begins (the loop journals the goals: a person's rows carry the instruction)."""
        self.current_step = current_step
        self.high = 0
        """The last step number a person's action took: each action gets a number of its own (journal, export
        and viewer key steps by number), after the held cycle's, which keeps its own; the next cycle comes after."""
        self.recorder: Any = None
        self.actions: list[str] = []
        self.before: dict[str, Any] | None = None

    def next_step(self) -> int | None:
        if self.current_step is None:
            return None
        self.high = max(self.current_step(), self.high) + 1
        return self.high

    def begin(self) -> None:
        if self.before_hold is not None:
            self.before_hold()
        self.actions = []
        self.before = self._look()
        factory = self.factory
        if factory is None:
            from conway.observe.human import HumanRecorder
            factory = HumanRecorder
        try:
            self.recorder = factory(display_of(self.observer))
        except Exception as exc:  # RecorderUnavailable, or a display that refuses: held, input not recorded
            self.recorder = None
            self.record("control", {"request": "takeover", "recording": False, "detail": str(exc)})
            self.say(f"the person's input is not recorded: {exc}")

    def poll(self) -> None:
        if self.recorder is not None:
            self._journal(self.recorder.drain())

    def end(self) -> str:
        """Stop recording; what the person did, as the next decision's latest result."""
        if self.recorder is not None:
            self._journal(self.recorder.stop())
            self.recorder = None
        if not self.actions:
            return "A person took over while you were held and handed back; no input of theirs was recorded. " \
                   "Look at the screen afresh: it may have changed."
        done = "; ".join(self.actions)
        return f"A person took over while you were held, did {len(self.actions)} action(s) — {done} — and handed " \
               "back. Look at the screen afresh before you act."

    def _journal(self, actions: list[dict[str, Any]]) -> None:
        for raw in actions:
            raw = dict(raw)
            raw.pop("t", None)
            step = self.next_step()
            parsed = parse_action(raw)
            if not isinstance(parsed, _Action):
                self.record("human", {"action": raw, "valid": False, "detail": getattr(parsed, "message", ""),
                                      "actor": "human", "observation": self.before}, step)
                continue
            summary = parsed.summary()
            self.record("human", {"action": parsed.model_dump(exclude_none=True), "summary": summary,
                                  "actor": "human", "observation": self.before}, step)
            self.actions.append(summary)
            self.note(summary, HUMAN_NOTE, step)
            self.before = self._look()

    def _look(self) -> dict[str, Any] | None:
        try:
            return self.observer.observe().record()
        except Exception as exc:
            return {"screenshot": None, "error": f"{type(exc).__name__}: {exc}"}
