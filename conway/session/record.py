"""`conway record`: a session with no model at all, a person acting, for demonstrations from scratch.

The session starts taken over (`RunRequest.taken_over`): the person's input on the display is recorded as
`human` steps with their screenshots, exactly as during a `conway takeover`. `conway handback` (or Ctrl+C,
`conway stop`, --max-seconds) ends it: the stand-in below is not a model, it only closes the session with a
finish once the person handed back.
"""

from __future__ import annotations

from typing import Callable

from conway.actions import Finish
from conway.config import ConwayConfig
from conway.errors import UserError
from conway.loop.parts import RunOutcome
from conway.protocols import Decision, DecisionContext, Policy
from conway.session.app import RunRequest, console_say, run_agent
from conway.store.home import Home

PERSON = "person (conway record: no model)"


class HandedBack(Policy):
    """Not a model: asked once the person handed back, it ends the recording."""

    model_id = PERSON
    abortable = True
    finished_by = "person"

    def decide(self, context: DecisionContext) -> Decision:
        return Decision(raw_text="", actions=[Finish(status="DONE", message="the person handed back: recording ended")],
                        model_id=PERSON, thought="a recording: a person acted, no model decided")


def record_session(home: Home, config: ConwayConfig, *, task: str | None, video: bool = False,
                   say: Callable[[str], None] = console_say) -> tuple[RunOutcome, str]:
    """Run the recording session on the screen; (outcome, session id)."""
    from conway.session.app import build_observer

    screen = config.model_copy(update={"observe": config.observe.model_copy(update={"source": "screen"})})
    observer = build_observer(screen, home)
    if not hasattr(observer, "capture"):
        raise UserError("conway record needs a screen (observe.source screen)")
    say("recording: act on the screen; `conway handback` (or Ctrl+C) ends the recording")
    return run_agent(home, screen, RunRequest(single_session=True, task=task, policy=HandedBack(),
                                              observer=observer, taken_over=True, video=video), say=say)
