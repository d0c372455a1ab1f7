"""The mock policy: a script of decisions, genuinely offline.

A script is a YAML list (or JSON lines) of steps. Each step is a mapping with
any of:

    action: {type: wait}            one action (the normalized schema)
    actions: [{...}, {...}]         several actions, dispatched in order
    raw: "free text"                model output to parse (malformed on purpose)
    error: "server exploded"        a transient model failure (recovery backoff)
    rate_limit: 7                   the server says: retry after 7 s
    sleep: 0.5                      block inside `decide` this long (stop-during-inference)
    click_color: "#ff00ff"          click the centre of the pixels of this colour in the screenshot
    thought: "why"                  recorded with the decision

When the script runs out the policy keeps answering `wait` (or starts over
with `repeat: true` at the top level of a mapping-form script).
"""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from conway.actions import ActionProblem, Wait, parse_action
from conway.errors import UserError
from conway.protocols import Decision, DecisionContext, Policy, PolicyError, RateLimited

MODEL_ID = "conway-mock"
FEEDBACK_KEEP = 32
"""Tool results the mock keeps (it never reads them; tests look at the latest)."""


class MockStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: dict[str, Any] | None = None
    actions: list[dict[str, Any]] | None = None
    raw: str | None = None
    error: str | None = None
    rate_limit: float | None = Field(default=None, ge=0)
    sleep: float | None = Field(default=None, ge=0)
    click_color: str | None = Field(default=None, pattern=r"^#[0-9a-fA-F]{6}$")
    thought: str | None = None


class MockScript(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: list[MockStep]
    repeat: bool = False


def default_script() -> MockScript:
    """A short demo: look around, write a note in scratch/, read it back, report DONE."""
    return MockScript(steps=[
        MockStep(thought="Nothing to do on screen yet; wait.", action={"type": "wait"}),
        MockStep(thought="Record what I see.",
                 action={"type": "append_file", "path": "notes.md",
                         "text": "Conway mock: a synthetic desktop with one window.\n"}),
        MockStep(thought="Check the note landed.", action={"type": "read_file", "path": "notes.md"}),
        MockStep(thought="The note is there.", action={"type": "finish", "status": "DONE",
                                                      "message": "wrote and read back scratch/notes.md"}),
    ])


def load_script(path: str | Path) -> MockScript:
    """Load a YAML list / mapping or a JSONL file; any problem is a UserError naming the file."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"mock script {p} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read mock script {p}: {exc}") from None
    try:
        if p.suffix == ".jsonl":
            data: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise UserError(f"mock script {p} does not parse: {str(exc).splitlines()[0]}") from None
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict):
        raise UserError(f"mock script {p} must be a list of steps (or a mapping with `steps:`)")
    try:
        return MockScript.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise UserError(f"mock script {p} is malformed at {where}: {first['msg']}") from None


class MockPolicy(Policy):
    def __init__(self, script: MockScript | None = None, sleep=time.sleep,
                 wait_scale: Callable[[], float] | None = None):
        self.script = script or default_script()
        self.wait_scale = wait_scale
        """When given, a scripted `wait` of N seconds becomes N × wait_scale(): a script stands in for a model that
        would look until the screen is ready, so on a loaded machine it waits as much longer as the task runner's
        window waits do (the runner passes the machine's load factor; None keeps the script's seconds)."""
        self.model_id = MODEL_ID
        self._index = 0
        self._sleep = sleep
        self.abortable = not any(step.sleep for step in self.script.steps)
        """`Policy.abortable`: nothing in a script blocks but a `sleep` step, which ignores a stop as a stalled
        model would (read once: the loop asks every cycle)."""
        self.feedback_records: deque[dict[str, Any]] = deque(maxlen=FEEDBACK_KEEP)
        """The latest tool results (bounded: a run of any length keeps only these)."""
        self.last_context: DecisionContext | None = None
        """The context of the latest decision (what a real model would have been shown)."""

    def restarted(self) -> MockPolicy:
        """The same script from its first step: a new task starts the script afresh, never at the previous
        task's position (which left every later task "script finished; idling" until its time ran out)."""
        return MockPolicy(self.script, sleep=self._sleep, wait_scale=self.wait_scale)

    def _next(self) -> MockStep | None:
        steps = self.script.steps
        if self._index >= len(steps):
            if not self.script.repeat or not steps:
                return None
            self._index = 0
        step = steps[self._index]
        self._index += 1
        return step

    def decide(self, context: DecisionContext) -> Decision:
        started = time.perf_counter()
        self.last_context = context
        step = self._next()
        if step is None:
            step = MockStep(thought="script finished; idling", action={"type": "wait"})
        if step.sleep:
            self._sleep(step.sleep)
        if step.error is not None:
            raise PolicyError(step.error)
        if step.rate_limit is not None:
            raise RateLimited("mock server rate limit", retry_after=step.rate_limit)
        if step.click_color is not None:
            action = click_on_color(context.observation, step.click_color)
            return Decision(raw_text=f"click_color {step.click_color}", actions=[action], model_id=self.model_id,
                            thought=step.thought, latency_s=time.perf_counter() - started)
        if step.raw is not None:
            raw = step.raw
            actions = _parse_raw(raw)
        else:
            items = step.actions if step.actions is not None else ([step.action] if step.action else [])
            raw = json.dumps(items[0] if len(items) == 1 else items)
            actions = [self._scaled(parse_action(a)) for a in items] or [Wait()]
        return Decision(raw_text=raw, actions=actions, model_id=self.model_id, thought=step.thought,
                        latency_s=time.perf_counter() - started)

    def _scaled(self, action: Any) -> Any:
        if self.wait_scale is None or not isinstance(action, Wait) or not action.seconds:
            return action
        return Wait(seconds=min(3600.0, action.seconds * max(1.0, self.wait_scale())))

    def feedback(self, record: dict[str, Any]) -> None:
        self.feedback_records.append(record)


def _parse_raw(raw: str) -> list:
    try:
        data = json.loads(raw)
    except ValueError:
        return [ActionProblem(message="model output is not a JSON action", raw=raw[:200])]
    items = data if isinstance(data, list) else [data]
    return [parse_action(i) for i in items] or [ActionProblem(message="no action in model output", raw=raw)]


def click_on_color(observation, color: str, tolerance: int = 24):
    """A scripted 'look': the centre of the pixels near `color` in the screenshot (captured pixels)."""
    import io

    import numpy as np
    from PIL import Image

    from conway.actions import Click

    if not observation.png:
        return ActionProblem(message="the observation has no image to look at")
    rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    pixels = np.asarray(Image.open(io.BytesIO(observation.png)).convert("RGB")).astype(np.int16)
    ys, xs = np.nonzero(np.abs(pixels - rgb).max(axis=2) <= tolerance)
    if len(xs) == 0:
        return ActionProblem(message=f"no pixels of colour {color} in the screenshot")
    return Click(x=float(xs.min() + xs.max()) / 2, y=float(ys.min() + ys.max()) / 2)
