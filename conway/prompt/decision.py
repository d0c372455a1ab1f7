"""What one decision sees: the files of the home, the action space of the tools at hand, the latest result.

`ContextBuilder.build` reads constitution.md and memory.md (again only when they changed), describes
the action space (cached while the tools stay the same, so the prompt's prefix does too), sizes the text
budget once (`budget.context_budget`: from the model's window when the policy can say it, its `text_budget`)
and lets `budget.build_parts` lay it all out inside that budget, with the host facts (`host_facts`, refreshed
at most every few minutes). The policy fits what it is handed to the model's window, cut by the same budgeter's
rules (`conway/prompt/budget.py`), and adds what was cut to `DecisionContext.dropped`. Without a screenshot, GUI actions are left out and the prompt says so.

What an export cannot read back from the home later is journaled when it changes, as `session` events: the
goals / task text (`goals`, which the loop records) and the host facts' text (`build` records it through
`record`), so an exported step's prompt is rebuilt with what that step saw.

It also keeps what the loop tells the model about past steps: `note` / `note_error` set the
latest result, append to the recent-steps window and to memory.md's step log. memory.md is
reread only when the window slid, memory was compacted or someone else edited it: between,
the prompt only grows.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from conway.actions import GUI_TYPES, describe_action_space
from conway.config import ConwayConfig
from conway.history import TurnHistory
from conway.prompt.budget import build_parts, context_budget
from conway.prompt.host_facts import HostFacts
from conway.prompt.memory import Memory
from conway.prompt.parts import PartName, RecentSteps, StepNote
from conway.protocols import Actuator, ContextPart, DecisionContext, Observation, Policy
from conway.store.events import SessionGoals, SessionHostFacts
from conway.store.home import Home, not_text
from conway.store.state import ReadIfChanged
from conway.text.bounded import open_regular

GOALS_JOURNAL_MAX_CHARS = 20_000
"""The goals / task text is journaled (when it changes) up to this size, for exports' instruction."""


def read_text(path: Path, default: str) -> str:
    """A home file as the model sees it: missing → `default`; unreadable or not text → a line saying so."""
    try:
        with open_regular(path) as fh:  # a FIFO in its place must not block the cycle
            raw = fh.read()
    except FileNotFoundError:
        return default
    except OSError as exc:  # replaced by a folder while running, unreadable …: say so, carry on
        return f"(cannot read {path.name}: {exc.strerror})"
    problem = not_text(raw)  # `run` refuses one at the start; this is one replaced while running
    return f"({path.name} {problem}; left out)" if problem else raw.decode("utf-8")


def _home_text(path: Path, default: str) -> ReadIfChanged[str]:
    """goals.md / constitution.md, checked every cycle and read again when changed (a stat when not)."""
    return ReadIfChanged(path, lambda p: read_text(p, default), default)


def context_record(ctx: DecisionContext) -> dict[str, Any]:
    """What the journal keeps about one decision's prompt: its budget and what was left out."""
    return {**ctx.budget, "dropped": list(ctx.dropped), "action_types": list(ctx.action_types)}


class ContextBuilder:
    def __init__(self, home: Home, config: ConwayConfig, toolbox: Actuator, policy: Policy, memory: Memory,
                 monotonic: Callable[[], float] = time.monotonic, host_facts: HostFacts | None = None,
                 say: Callable[[str], None] = print,
                 record: Callable[[str, dict[str, Any]], None] = lambda kind, payload: None):
        self.home = home
        self.say = say
        self.record = record
        """Journals an event (the loop's `record`): the host facts' text when it changed."""
        self.cfg = config
        self.toolbox = toolbox
        self.policy = policy
        self.memory = memory
        self.recent = RecentSteps(config.context.recent_steps)
        images, turns, slide = config.policy.history_window(config.context.recent_steps)
        self.history = TurnHistory(max_images=images, max_turns=turns, slide=slide,
                                   keep_reasoning=config.policy.keeps_reasoning)
        """The model's own past turns (its answers and the screenshots sent): replayed by families trained so; after
        a restart, what the journal holds of them (`prompt/history_journal.py`)."""
        if config.policy.is_model_family:
            from conway.prompt.history_journal import journaled_turns
            self.history.restore(journaled_turns(home, config.policy.kind))
        self._task_alone = config.policy.official_layout and "goals" not in (config.policy.deviations or ())
        """A trained family's faithful request carries a session's task as its instruction, nothing else."""
        self.latest: str | None = None
        """The latest result or error: the last thing the model reads before the request and the image."""
        self.memory_view: str | None = None
        """memory.md as shown to the model: refreshed when the recent-steps window slides (the steps since are
        in the window), when memory is compacted or edited by someone else, so the prompt only grows between."""
        self._action_spaces: dict[tuple[str, ...], str] = {}
        self._goals = _home_text(home.goals, "(no goals.md: write current work there)")
        self._constitution = _home_text(home.constitution, "(no constitution.md)")
        self._journaled_goals: str | None = None
        self.host_facts = host_facts or HostFacts(config.agent, home.root, monotonic)
        """The machine's facts for the stable part, refreshed at most every agent.host_facts_refresh_s."""
        self._journaled_facts = ""  # the part is absent until its text is journaled: off, nothing is
        self._compactions = 0  # memory.md's compactions the view has seen

    def goals(self, task: str | None) -> tuple[str, dict[str, Any] | None]:
        """goals.md, checked every cycle (a single-session task first), and the journal event when it changed."""
        goals = self._goals.get()
        if task and self._task_alone:  # the official request: the task's instruction is the instruction
            goals = task
        elif task:
            goals = f"Task for this session:\n{task}\n\nStanding goals:\n{goals}"
        if goals == self._journaled_goals:
            return goals, None
        self._journaled_goals = goals
        return goals, SessionGoals(goals[:GOALS_JOURNAL_MAX_CHARS], len(goals)).to_payload()

    def note(self, step: int, action: str, outcome: str) -> None:
        """One step's outcome, for the next decisions (memory.md's step log is compacted by the loop, between cycles)."""
        self.history.commit()  # its answer was acted on: the next decisions replay it (once per decision)
        if self.recent.add(StepNote(step, action, outcome)):
            self.memory_view = None
        self.latest = f"{action} → {outcome}"
        self.memory.add(f"- step {step}: {action[:200]} → {outcome[:200]}")

    def note_human(self, step: int, action: str, outcome: str) -> None:
        """A person's action during a takeover: it joins the recent steps and memory's step log as theirs; the
        model's own history is left as it was (the person's action is never replayed as the model's answer)."""
        if self.recent.add(StepNote(step, action, outcome)):
            self.memory_view = None
        self.memory.add(f"- step {step}: {action[:200]} → {outcome[:200]}")

    def note_error(self, step: int, message: str) -> None:
        """A step without an action: the error is the latest result and joins the recent steps."""
        self.latest = f"ERROR: {message}"
        self.history.discard()  # an answer without a valid action is not replayed
        if self.recent.add(StepNote(step, "(no action)", f"error: {message[:200]}")):
            self.memory_view = None

    def build(self, goals: str, obs: Observation, step: int) -> DecisionContext:
        self.history.discard()  # an answer a stop or a pause held was never acted on
        for line in self.history.take_notes():  # journaled with the decision that learned it; said once here
            self.say(line)
        types = self.toolbox.available_types()
        screen = obs.image is not None or obs.png is not None  # in this order: a screen's PNG is encoded on demand
        if not screen:
            types = [t for t in types if t not in GUI_TYPES]  # nothing to point at
        key = tuple(types)
        if key not in self._action_spaces:  # the same text every cycle while the tools stay the same
            cap = self.cfg.agent.model_wait_cap_s
            self._action_spaces[key] = (describe_action_space(types)
                                        + f"\nA wait lasts at most {cap:g} s (longer requests are cut).")
        action_space = self._action_spaces[key]
        captured = tuple(obs.captured_size) if screen else None
        budget = context_budget(self.cfg.context.budget_tokens, self.cfg.context.chars_per_token,
                                self.policy.text_budget(captured, types))  # the model's window sizes it
        parts, dropped = build_parts(
            constitution=self._constitution.get(),
            goals=goals, memory=self._memory_text(), action_space=action_space,
            latest=self.latest, recent=self.recent.notes, budget_tokens=budget.tokens,
            chars_per_token=budget.chars_per_token, accessibility=obs.accessibility,
            tools=self.toolbox.describe(),  # MCP tools, skill names
            host_facts=self._facts(captured))
        if captured is None:
            parts.append(ContextPart(PartName.SCREEN, f"No screenshot this step: {obs.meta.get('screen_unavailable')}. "
                                               "GUI actions are not available; use the direct tools."))
        return DecisionContext(parts=parts, observation=obs, step=step, action_types=types, dropped=dropped,
                               budget=budget.record, history=self.history)

    def _facts(self, captured: tuple[int, int] | None) -> str:
        """The host facts' text for this prompt, journaled (before the decision that sees it) when it changed:
        exports rebuild the prompt with the facts in effect at each step."""
        facts = self.host_facts.text(captured)
        if facts != self._journaled_facts:
            self.record("session", SessionHostFacts(facts).to_payload())
            self._journaled_facts = facts
        return facts

    def _memory_text(self) -> str:
        if self.memory_view is None or self.memory.edited_elsewhere() or self.memory.compactions != self._compactions:
            self._compactions = self.memory.compactions
            self.memory_view = self.memory.read()
        return self.memory_view
