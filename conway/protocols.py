"""The seams: what an observer, a policy and a tool look like to the loop.

Each implementation is a small sibling module chosen by a short name in the
config. The loop only ever talks to these types.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from conway.actions import ActionProblem, _Action
from conway.geometry import ScreenGeometry
from conway.history import TurnHistory
from conway.text.bounded import cut_text

# --- observation -------------------------------------------------------------


@dataclass
class Observation:
    """One look at the environment."""

    png: bytes | None
    """The captured image, PNG-encoded (None when the observer has no screen)."""
    captured_size: tuple[int, int]
    """(width, height) of the captured image in pixels."""
    source: str
    """`synthetic` (mock), `screen` (a real display), ... ."""
    content_hash: str
    """sha256 of the captured pixels; equal hashes mean an identical frame."""
    change_key: str
    """A coarse key that ignores tiny changes (a blinking caret); equal → unchanged."""
    logical_size: tuple[int, int] | None = None
    """Input coordinate space size (differs from captured_size on HiDPI screens)."""
    origin: tuple[int, int] = (0, 0)
    """Monitor origin in input coordinates."""
    geometry: ScreenGeometry | None = None
    """Where the capture sits in input space (origin, captured and logical sizes), computed once when the
    screenshot is taken; the loop hands it to the toolbox with each action (GUI coordinates are mapped with
    it). None when the observation did not come from a screen (synthetic, replayed, no screen)."""
    accessibility: str | None = None
    """Optional accessibility snapshot rendered as text."""
    screenshot_path: str | None = None
    """Where the archived copy was saved, if it was."""
    meta: dict[str, Any] = field(default_factory=dict)
    image: Any = field(default=None, repr=False, compare=False)
    """The capture as a decoded Pillow image when the observer has one (saves a PNG decode); else None."""

    def record(self) -> dict[str, Any]:
        """What the journal keeps of an observation (never the image bytes)."""
        return {
            "source": self.source,
            "captured_size": list(self.captured_size),
            "logical_size": list(self.logical_size or self.captured_size),
            "origin": list(self.origin),
            "sha256": self.content_hash,
            "change_key": self.change_key,
            "screenshot": self.screenshot_path,
            "accessibility_chars": len(self.accessibility) if self.accessibility else 0,
            **self.meta,
        }


class Observer(Protocol):
    def observe(self) -> Observation: ...

    def close(self) -> None: ...


# --- decision ----------------------------------------------------------------


@dataclass
class ContextPart:
    """One named piece of a decision prompt (e.g. `constitution.md`, `latest result`)."""

    name: str
    text: str


@dataclass
class DecisionContext:
    parts: list[ContextPart]
    observation: Observation
    step: int
    action_types: list[str]
    """Action types the tools can run here (the policy should only propose these)."""
    dropped: list[str] = field(default_factory=list)
    """Names of parts left out to stay inside the token budget (a policy that must cut further to fit
    the model's context window appends what it cut)."""
    budget: dict[str, Any] = field(default_factory=dict)
    """How the text budget was sized (tokens, window, where the window came from); journaled with the decision."""
    history: TurnHistory | None = None
    """The model's own past turns (its answers, the screenshots sent with them): the context builder keeps them
    across cycles; a family that replays them lays them out, and proposes the turn it answered."""

    def text(self) -> str:
        return "\n\n".join(f"## {p.name}\n{p.text}" for p in self.parts)


@dataclass
class Decision:
    raw_text: str
    actions: list[_Action | ActionProblem]
    model_id: str
    thought: str | None = None
    reasoning: str | None = None
    """Hidden reasoning from thinking models: recorded, never sent back as context."""
    usage: dict[str, Any] = field(default_factory=dict)
    latency_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)
    """Adapter facts: sent image size, coordinate convention, structured-output mode."""

    def record(self) -> dict[str, Any]:
        """The journal's copy. A refused answer (no valid action) keeps a bounded head and tail of its
        texts, with each cut text's size and sha256, so a flood of garbage cannot push history out."""
        refused = not self.actions or any(not isinstance(a, _Action) for a in self.actions)
        out: dict[str, Any] = {
            "raw_text": self.raw_text,
            "thought": self.thought,
            "reasoning": self.reasoning,
            "actions": [a.model_dump() if isinstance(a, _Action) else {"problem": a.message}
                        for a in self.actions],
            "model_id": self.model_id,
            "usage": self.usage,
            "latency_s": round(self.latency_s, 6),
            **self.meta,
        }
        if refused:
            for key in ("raw_text", "thought", "reasoning"):
                text = out[key]
                if isinstance(text, str) and len(text) > REFUSED_TEXT_MAX_CHARS:
                    out[key] = cut_text(text, REFUSED_TEXT_MAX_CHARS)[0]
                    out[f"{key}_cut"] = {"chars": len(text),
                                         "sha256": hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()}
        return out


REFUSED_TEXT_MAX_CHARS = 8000
"""A refused answer's text beyond this is journaled as its head and tail (a real answer is far shorter)."""


@dataclass
class ContextWindow:
    """Tokens one model request may hold (prompt and reply together), and where that was learned."""

    n_ctx: int
    source: str
    n_ctx_train: int | None = None
    """What the model was trained for (GGUF context_length / n_ctx_train), when known."""


class PolicyError(Exception):
    """A transient failure before dispatch (HTTP error, timeout, bad server reply)."""

    cause: str = "model error"
    """Short cause reports count by (`HTTP 500`, `timeout`, `context exceeded` …; see ERROR_CAUSES)."""
    permanent: bool = False
    """Retrying cannot cure it (a prompt over the window, HTTP 401/404/501 …): repeated, it ends the run."""
    advice: str = ""
    """What to change when it is permanent (said in the line that ends the run)."""
    status: int | None = None
    """The HTTP status a server refused the request with (None: no such refusal)."""


class RateLimited(PolicyError):
    """The model server asked us to wait `retry_after` seconds (the loop bounds the wait it uses)."""

    cause = "HTTP 429"

    def __init__(self, message: str, retry_after: float, source: str = "server"):
        super().__init__(message)
        self.retry_after = retry_after
        self.source = source
        """Where the value came from: `Retry-After header`, `error message`, `none given (default)` …"""


class ContextExceeded(PolicyError):
    """The prompt does not fit the model's context window (refused by the server, or before sending)."""

    cause = "context exceeded"
    permanent = True
    advice = ("give the model server a larger context (llama-server -c) or lower context.budget_tokens "
              "or the image size")

    def __init__(self, n_tokens: int | None, n_ctx: int | None, detail: str = ""):
        n = "?" if n_tokens is None else str(n_tokens)
        m = "?" if n_ctx is None else str(n_ctx)
        super().__init__(f"context exceeded ({n} > {m} tokens)" + (f": {detail}" if detail else ""))
        self.n_tokens = n_tokens
        self.n_ctx = n_ctx


ERROR_CAUSES = ("HTTP <status>", "timeout", "unreachable", "malformed reply", "context exceeded", "cut off",
                "unparseable", "invalid action", "model error")
"""Why a step produced no valid decision, as reports count them: a failed request (HTTP status,
timeout, unreachable server, a reply that is not a completion, a prompt over the context window),
or an answer that was cut off at max_tokens, could not be parsed, or named an invalid action."""


def cut_off_message(max_tokens: int | None) -> str:
    """How an answer that stopped at max_tokens (finish_reason "length") is reported everywhere."""
    return f"output cut off at max_tokens ({max_tokens if max_tokens is not None else '?'})"


def describe_causes(counts: dict[str, int]) -> str:
    """`{"HTTP 500": 4, "timeout": 1}` → "4 × HTTP 500, 1 × timeout" (most frequent first)."""
    return ", ".join(f"{n} × {cause}" for cause, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def decision_problem_cause(decision: "Decision") -> str:
    """Cause of a decision that holds no valid action (cut off, unparseable or invalid action)."""
    return str(decision.meta.get("error_cause") or "invalid action")


@runtime_checkable
class Policy(Protocol):
    """What the loop asks of a model. Implementations subclass it and so inherit the optional members' defaults."""

    model_id: str
    description: list[str] | tuple[str, ...] = ()
    """Lines the run prints at start (where the model is, warnings); none by default."""

    abortable: bool = False
    """`decide` returns soon after the current `conway.cancel.Cancel` is set, at every point where it can block
    (it shuts its socket down, its decode checks the token). The loop then runs it on its own thread, watched
    for a stop, rather than handing each decision to a worker thread and back (two thread wake-ups, the largest
    share of a cheap cycle). False (the default): a worker thread, abandoned 1 s after a stop it ignores."""

    finished_by: str = "model"
    """Who a `finish` of this policy's comes from: the model (its own report), or `person` (`conway record`'s
    stand-in, which finishes once the person handed back)."""

    def decide(self, context: DecisionContext) -> Decision: ...

    def feedback(self, record: dict[str, Any]) -> None:
        """Every recorded result, for stateful or learning policies; ignored by default."""
        return None

    def close(self) -> None:
        """Release what the policy holds (a server it started, a loaded model); nothing by default."""
        return None

    def text_budget(self, captured_size: tuple[int, int] | None, action_types: list[str]) -> Any:
        """Tokens the prompt's text may use in the model's window (None: not known, the configured budget holds)."""
        return None

    def structured_mode(self) -> str | None:
        """The output constraint decisions use (grammar, json_object, json_schema, none), detected on first use;
        None when there is no model output to constrain (the default). PolicyError when a requested one is not
        honoured."""
        return None

    def structured_support(self) -> tuple[list[str], dict[str, str]] | None:
        """What the model's backend honours, best first, and what each try showed (mode → detail), detected by
        trying; None when not detected (the default). `conway probe` reports it."""
        return None


@dataclass
class TextAnswer:
    """A text-only completion (memory's summary): no image, no action grammar, no structured output."""

    text: str
    model_id: str
    finish_reason: str | None = None
    """`stop`, or `length` when the answer hit its max_tokens (it was cut off)."""
    usage: dict[str, Any] = field(default_factory=dict)


class TextModel(Protocol):
    """A model asked for plain text (memory's summary): the acting model's backend or memory.summariser.

    A stop aborts it as it aborts a decision (`conway.cancel`: the HTTP socket is shut down, llama.cpp's abort
    callback ends the decode); PolicyError for a failed request."""

    model_id: str
    where: str = "memory.summariser"
    """Which model this is, for the journal: `the acting model` or `memory.summariser`."""

    def complete_text(self, prompt: str, max_tokens: int) -> TextAnswer: ...

    def close(self) -> None:
        """Release what it holds (a model of its own); nothing when it borrows the acting model's backend."""
        return None


# --- tools -------------------------------------------------------------------


@dataclass
class ToolResult:
    ok: bool
    output: str = ""
    error: str | None = None
    truncated: bool = False
    data: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        return self.output if self.ok else f"ERROR: {self.error}"

    def record(self) -> dict[str, Any]:
        return {"ok": self.ok, "output": self.output, "error": self.error,
                "truncated": self.truncated, **({"data": self.data} if self.data else {})}


class Tool(Protocol):
    """One family of actions (files, shell, GUI, MCP …). Implementations subclass it and so inherit the
    optional members' defaults; the toolbox calls every member directly."""

    name: str
    action_types: frozenset[str]
    cancellable: bool = False
    """A stop during `run` cuts it short (it checks `conway.cancel.current_cancel()` while it works: the shell,
    MCP). Other tools are short and run unwatched: a stop takes effect when they return. Whether an action
    gets a pending copy in state.json is another property, the action's (`_Action.lengthy`)."""

    def availability(self) -> tuple[bool, str]:
        """(can run here, reason); tried, not guessed."""
        ...

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        """Carry out `action`. `screen`: the geometry of the observation it was decided on (None: none from a
        screen); only screen-bound tools (GUI) use it, to map screenshot pixels to input coordinates.

        The dispatch contract. A result with ok=False means the action certainly had no effect: the loop
        journals an `error`, shows it to the model and goes on. An exception from a side-effecting action
        (`action.side_effect`) means the outcome is uncertain: the loop journals `uncertain`, never replays
        the action and ends the run (raise DispatchUncertain to say so on purpose; FailSafeTriggered ends it
        as a fail-safe). An exception from an action without side effects is an ordinary failure, handled
        like ok=False."""
        ...

    def check(self, action: _Action) -> _Action | ActionProblem:
        """Validation this tool owns before any intent is written (an MCP argument schema); none by default."""
        return action

    def describe(self) -> str:
        """Text for the prompt's action space (MCP tools, skill names); none by default."""
        return ""

    def findings(self) -> list[dict[str, Any]]:
        """What the tool found at start (servers, skills), for the journal, each with a printed `summary` line;
        none by default."""
        return []

    def close(self) -> None:
        """Stop what the tool started (MCP servers); nothing by default."""
        return None


class Actuator(Protocol):
    """What the loop and its parts ask of the tools (`conway.tools.registry.Toolbox` is the one in use)."""

    def available_types(self) -> list[str]:
        """Action types the model may propose here (runnable tools plus `wait` and `finish`)."""
        ...

    def describe(self) -> str:
        """Text the runnable tools add to the prompt's action space (MCP tools, skill names); may be empty."""
        ...

    def findings(self) -> list[dict[str, Any]]:
        """What the tools found at start (MCP servers, skills): records journaled once by start-up, each with a
        `summary` line that is printed."""
        ...

    def check(self, action: _Action) -> _Action | ActionProblem:
        """Validation a tool owns before any intent is written (an MCP tool's argument schema); sends nothing."""
        ...

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        """Dispatch `action` to its tool; `screen` is the geometry of the observation it was decided on."""
        ...

    def cancellable(self, action: _Action) -> bool:
        """Whether a stop can cut this action short (its tool is `cancellable`): only then is it run watched."""
        ...

    def close(self) -> None:
        """Stop what the tools started (MCP servers); the run's owner calls it once at the end."""
        ...


class DispatchUncertain(Exception):
    """Dispatch failed after it may have done partial work: never replay it."""


class FailSafeTriggered(Exception):
    """The user slammed the pointer into a corner: end the run."""
