"""Planner + grounder (`policy.planner`): a planner model proposes each step in words and code, the grounding
preset (the executor) puts each pointer action where the planner's words say.

As OSWorld's Jedi agents run (`mm_agents/jedi_7b_agent.py`, `jedi_3b_agent.py`, ljxpython/OSWorldUse b5007a93…,
the planner's prompts kept in `families/jedi/prompts/`): each step the planner is sent its system prompt (the step
number and the step budget filled in), the past steps (the newest 5 as their screenshot then `Thought:` /
`Action:`, older ones as `Observation: <caption>` instead of the screenshot), and the current screenshot with the
instruction; the screenshots go as captured, PNG, `detail: high`. Its answer's code blocks are read as the agent
reads them (`planner_codes`); a planner that gives none is asked again (up to 5 times) with the agent's line. Each
pointer call with a comment (`# the Save button` then `pyautogui.click(x=…, y=…)`) is grounded: the executor is
asked with the comment as its description and its point replaces the planner's, as the agent rewrites the call.
The rewritten code becomes Conway's actions (OpenCUA's parser, screen pixels; never run); `WAIT` / `DONE` /
`FAIL` a wait or a finish.

One Conway decision is then several model calls: the journal's decision holds each (`calls`: role, model, usage,
time, answer), and costs are counted per model from them (`conway/experience/costs.py`). GTA1's planner protocol
(OSWorld `mm_agents/gta1/`: several proposals and a judge) is `planned_gta1.py` (`policy.planner.protocol=gta1`);
either protocol takes any grounding preset as the executor.
"""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass, field
from typing import Any

from conway.geometry import Convention
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Slots, text
from conway.policies.families.jedi.adapter import FILES  # the planner's prompts are kept with Jedi's
from conway.policies.families.opencua import parse as parse_opencua
from conway.policies.images import prepare_image
from conway.prompt.layout import split_parts
from conway.protocols import Decision, DecisionContext

__all__ = ["COMMANDS", "JediPlanner", "PlannedPolicy", "grounded_calls", "planner_codes"]


COMMANDS = ("WAIT", "DONE", "FAIL")
RETRY_LINE = "You didn't generate valid actions. Please try again."
"""What the Jedi agent says to a planner whose answer held no code (`JediAgent7B.predict`)."""
MAX_RETRIES = 5
IMAGES = 5
"""Past screenshots the planner is sent (`max_image_history_length`)."""

_BLOCK = re.compile(r"```(?:\w+\s+)?(.*?)```", re.DOTALL)
_POINTER = re.compile(r"(#[^\n]*?)\n(pyautogui\.(moveTo|click|rightClick|doubleClick|middleClick|dragTo)\("
                      r"(?:x=)?(\d+)(?:,\s*|\s*,\s*y=)(\d+)(?:,\s*duration=[\d.]+)?\))")


def planner_codes(answer: str) -> list[str]:
    """The code the Jedi agent takes from a planner's answer: its pieces split at `;`, then each fenced block (a
    trailing `WAIT` / `DONE` / `FAIL` line its own code); a bare command alone."""
    joined = "\n".join(line.strip() for line in answer.split(";") if line.strip())
    if joined.strip() in COMMANDS:
        return [joined.strip()]
    codes: list[str] = []
    for block in _BLOCK.findall(joined):
        block = block.strip()
        lines = block.split("\n")
        if block in COMMANDS:
            codes.append(block)
        elif lines[-1] in COMMANDS:
            if len(lines) > 1:
                codes.append("\n".join(lines[:-1]))
            codes.append(lines[-1])
        else:
            codes.append(block)
    return codes


def grounded_calls(code: str) -> list[tuple[str, str, str]]:
    """(comment, call, function) of each pointer call in `code` that a comment line describes."""
    return [(comment.split("#")[1].strip(), call, fn) for comment, call, fn, _, _ in _POINTER.findall(code)
            if "click()" not in call.lower()]


def rewritten(call: str, x: int, y: int) -> str:
    """The call at the grounder's point, written as the agent writes it (a `duration` argument kept as it was)."""
    head, _, args = call.partition("(")
    if "duration" in args:
        return f"{head}({x}, {y}, {args.split(',')[-1]}"
    return f"{head}({x}, {y})"


def _first_line_after(label: str, answer: str) -> str:
    found = re.search(rf"{label}:\n(.*?)\n", answer, re.DOTALL)
    return found.group(1).strip() if found else ""


@dataclass
class _Past:
    image_url: str
    thought: str
    actions: list[str]
    caption: str


@dataclass
class JediPlanner:
    """The planner half of OSWorld's Jedi agents: its conversation, kept across steps."""

    max_steps: int = 15
    """`{max_steps}` in its system prompt (`JediAgent7B(max_steps=15)`)."""
    past: list[_Past] = field(default_factory=list)

    def messages(self, instruction: str, image_url: str) -> list[dict[str, Any]]:
        step = len(self.past) + 1
        system = FILES.text("planner_system.txt").replace("{current_step}", str(step)).replace(
            "{max_steps}", str(self.max_steps))
        out: list[dict[str, Any]] = [{"role": "system", "content": [text(system)]}]
        first_image = max(0, len(self.past) - IMAGES)
        for i, p in enumerate(self.past):
            if i >= first_image:
                out.append({"role": "user", "content": [_image(p.image_url)]})
            else:
                out.append({"role": "user", "content": [text(f"Observation: {p.caption}")]})
            out.append({"role": "assistant", "content": [text(f"Thought:\n{p.thought}\nAction:\n{p.actions}")]})
        user = FILES.text("planner_user.txt").replace("{instruction}", instruction)
        out.append({"role": "user", "content": [_image(image_url), text(user)]})
        return out

    def remember(self, image_url: str, answer: str, actions: list[str]) -> None:
        self.past.append(_Past(image_url, _first_line_after("Thought", answer), actions,
                               _first_line_after("Observation", answer)))


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url, "detail": "high"}}


class PlannedPolicy:
    """A planner model and a grounding preset's policy (`ModelPolicy`) deciding together."""

    abortable = False

    def __init__(self, planner: Any, executor: Any, *, max_tokens: int, temperature: float, max_steps: int = 15):
        self.planner = planner
        """The planner's `ModelPolicy` (its backend is what is used: the planner's request is the agent's)."""
        self.executor = executor
        self.max_tokens, self.temperature = max_tokens, temperature
        self.state = JediPlanner(max_steps=max_steps)
        self.model_id = planner.model_id
        self.description = [f"planner: {line}" for line in planner.description] + \
            [f"executor: {line}" for line in executor.description]

    def __getattr__(self, name: str) -> Any:  # the window, budget and output checks: the executor's
        if name in ("executor", "planner"):
            raise AttributeError(name)
        return getattr(self.executor, name)

    def close(self) -> None:
        try:
            self.executor.close()
        finally:
            self.planner.close()

    def __enter__(self) -> "PlannedPolicy":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def decide(self, context: DecisionContext) -> Decision:
        started = time.perf_counter()
        image_url = _captured_png_url(context)
        instruction = split_parts(context, "")[0]
        messages = self.state.messages(instruction, image_url)
        calls: list[dict[str, Any]] = []
        answer = self._plan(messages, calls)
        codes = planner_codes(answer)
        done = [self._ground(code, context, calls) for code in codes]
        self.state.remember(image_url, answer, done)
        actions = [a for code in done for a in _actions(code, context)]
        usage = calls[0]["usage"] if calls else {}
        return Decision(raw_text=answer, actions=actions, model_id=self.model_id,
                        thought=_first_line_after("Thought", answer) or None, usage=usage,
                        latency_s=time.perf_counter() - started,
                        meta={"policy": f"planner+{self.executor.adapter.name}", "calls": calls,
                              "codes": done})

    def _plan(self, messages: list[dict[str, Any]], calls: list[dict[str, Any]]) -> str:
        """The planner's answer; asked again with the agent's line while it holds no code."""
        answer = self._call(self.planner, "planner", messages, calls)
        for _ in range(MAX_RETRIES):
            if planner_codes(answer):
                break
            messages.append({"role": "user", "content": [text(RETRY_LINE)]})
            answer = self._call(self.planner, "planner", messages, calls)
        return answer

    def _call(self, policy: Any, role: str, messages: list[dict[str, Any]], calls: list[dict[str, Any]],
              max_tokens: int | None = None, temperature: float | None = None) -> str:
        started = time.perf_counter()
        result = policy.backend.complete(messages, mode="none", spec=StructuredSpec(),
                                         max_tokens=max_tokens or self.max_tokens,
                                         temperature=self.temperature if temperature is None else temperature,
                                         seed=policy.settings.seed)
        calls.append({"role": role, "model_id": policy.model_id, "usage": dict(result.usage or {}),
                      "latency_s": round(time.perf_counter() - started, 6), "raw_text": result.text})
        return result.text

    def _ground(self, code: str, context: DecisionContext, calls: list[dict[str, Any]]) -> str:
        """The code with each described pointer call moved to the executor's point (left as planned when the
        executor's answer holds none, as the agent leaves it)."""
        out = code
        for comment, call, _ in grounded_calls(code):
            point = self._locate(comment, context, calls)
            if point is not None:
                out = out.replace(call, rewritten(call, *point))
        return out

    def _locate(self, description: str, context: DecisionContext, calls: list[dict[str, Any]]
                ) -> tuple[int, int] | None:
        """The executor's point (screen pixels) for `description`, asked as the grounding preset asks; None when
        its answer holds none."""
        ex = self.executor
        image = prepare_image(context.observation, ex.settings.resize_rule, ex.rule, ex.settings.image_encoding)
        sent, captured = image.sent_size, image.captured_size
        system = ex.adapter.instructions(["click"], sent, ex.settings.convention)
        messages = ex.adapter.messages(Slots(system=system, task=description, tail="", image_url=image.data_url()), [])
        answer = self._call(ex, "executor", messages, calls, ex.settings.max_tokens, ex.settings.temperature)
        calls[-1]["description"] = description
        parsed = ex.adapter.parse(answer, convention=ex.settings.convention, sent_size=sent, captured_size=captured)
        point = next((a for a in parsed.actions if hasattr(a, "x")), None)
        return None if point is None else self._point(answer, (int(point.x), int(point.y)), sent, captured)

    def _point(self, answer: str, parsed: tuple[int, int], sent: Any, captured: Any) -> tuple[int, int]:
        """The executor's point as the protocol's agent takes it (here: as the grounding preset parses it)."""
        return parsed


def _captured_png_url(context: DecisionContext) -> str:
    """The screenshot as captured, PNG (the agent sends the screenshot's own bytes)."""
    from conway.geometry import NO_RESIZE

    obs = context.observation
    data = obs.png if obs.png is not None else prepare_image(obs, "none", NO_RESIZE, "png").data
    return "data:image/png;base64," + base64.b64encode(data or b"").decode()


def _actions(code: str, context: DecisionContext) -> list[Any]:
    """A step's code as Conway's actions: its commands, or its pyautogui calls read in screen pixels."""
    command = code.strip().upper()
    if command == "WAIT":
        return parse_opencua.parse("```code\ncomputer.wait()\n```", convention=Convention.SCREEN,
                                   sent_size=(1, 1), captured_size=(1, 1)).actions
    if command in ("DONE", "FAIL"):
        status = "success" if command == "DONE" else "failure"
        return parse_opencua.parse(f"```code\ncomputer.terminate(status='{status}')\n```",
                                   convention=Convention.SCREEN, sent_size=(1, 1), captured_size=(1, 1)).actions
    size = tuple(context.observation.captured_size)
    return parse_opencua.parse(f"```python\n{code}\n```", convention=Convention.SCREEN, sent_size=size,
                               captured_size=size).actions
