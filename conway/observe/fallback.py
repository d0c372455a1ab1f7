"""Observing when the screen cannot be captured: decide without an image rather than stop (docs/architecture.md#no-screen).

`ScreenFallback` wraps an observer. A failed capture becomes an observation without an image
(`source="none"`, the reason in `meta["screen_unavailable"]`); the prompt then leaves GUI actions
out and the direct tools still run. A lost screen and its return are each said once. Errors that
must end the run instead (a full disk: no room for screenshots) are raised.
"""

from __future__ import annotations

from typing import Callable

from conway.protocols import Observation, Observer


class ScreenFallback:
    def __init__(self, observer: Observer, say: Callable[[str], None], fatal: Callable[[BaseException], bool]):
        self.observer = observer
        self.say = say
        self.fatal = fatal
        self.problem: str | None = None
        """Why the screen cannot be captured (None while it can)."""

    def observe(self) -> Observation:
        try:
            obs = self.observer.observe()
        except Exception as exc:  # no screen: decide without an image; direct tools still run
            if self.fatal(exc):
                raise
            return self.screenless(str(exc) or type(exc).__name__)
        if self.problem is not None:
            self.say("the screen is available again: screenshots and GUI actions are back")
            self.problem = None
        return obs

    def screenless(self, reason: str) -> Observation:
        if reason != self.problem:
            self.say(f"screen unavailable: {reason}; deciding without a screenshot, GUI actions left out, "
                     "direct tools still run")
            self.problem = reason
        return Observation(png=None, captured_size=(0, 0), source="none", content_hash="", change_key="no-screen",
                           meta={"screen_unavailable": reason})
