"""What every model policy shares: the prompt layout, the image sent, and one `decide`.

A model policy is an *adapter* (how to instruct one model family, which parser
reads its answers, its coordinate convention and resize rule, which output
constraint fits it) on top of a *backend* (an OpenAI-compatible HTTP endpoint
or llama-cpp-python in this process). `ModelPolicy.decide` is the same for all
of them:

1. resize the screenshot with the family's rule (`geometry`), never letting
   the server do it (llama.cpp would shrink Qwen-VL images to its own
   image-token limit and absolute coordinates would land in the wrong place);
2. lay out the prompt for prompt caches: the **stable part first** — adapter
   instructions, the constitution tagged with its file name, the action space,
   the tool listings, what untrusted data means, the host facts — then what only grows, oldest first (goals, memory's step log, the
   recent-steps window), then what changes every cycle (accessibility, what
   the budget left out), and last the latest result, the request line and
   the image, so a cache reuses everything up to the first part that changed
   and the model reads the newest facts right before the screenshot;
3. ask the backend, constrained where it can be (GBNF grammar, JSON schema);
4. parse with the adapter's parser (never executing anything the model wrote)
   and record per decision the size sent, the convention, the resize rule, the
   output constraint, token usage, cached tokens and timings.

Hidden reasoning (`reasoning_content`, `<think>`) is kept in
`Decision.reasoning` and never put into a later prompt. A family trained on a
conversation (its adapter's `messages`) is shown its own past answers, as it
wrote them less the reasoning, after the screenshots exactly as they were sent
(`DecisionContext.history`, `conway/history.py`); when the window is short the
oldest of those screenshots go first, before any text is cut, and a server that
refuses that many images is asked again with as many as it takes.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Protocol, get_args

from conway.actions import ACTION_TYPES, ActionProblem
from conway.config import PolicyConfig
from conway.geometry import Convention, ResizeRule, Size, get_rule, image_tokens, resize_for_model
from conway.history import ArchivedImage, PastImage, Turn, TurnHistory
from conway.policies.backends.backend import Backend, StructuredSpec
from conway.policies.conversation import Past, Slots
from conway.policies.parsed import ParsedOutput
from conway.policies.slide_cut import SlidingCuts
from conway.prompt.fence import render_part
from conway.prompt.parts import PartName, frame_of
from conway.protocols import (
    ContextExceeded,
    ContextPart,
    ContextWindow,
    Decision,
    DecisionContext,
    Observation,
    Policy,
    PolicyError,
    cut_off_message,
)

__all__ = [
    "STABLE_PARTS",
    "GROWING_PARTS",
    "VOLATILE_PARTS",
    "VARIABLE_ORDER",
    "Adapter",
    "SentImage",
    "ServerTakesNoImages",
    "ToolsNotRendered",
    "prepare_image",
    "build_messages",
    "ModelPolicy",
    "STRUCTURED_MODES",
    "TextBudget",
]

STABLE_PARTS = (PartName.CONSTITUTION, PartName.ACTION_SPACE, PartName.TOOLS, PartName.DATA_RULE,
                PartName.HOST_FACTS)
"""Context parts that rarely change: they go first, in the system message (host facts last: they change most)."""
GROWING_PARTS = (PartName.GOALS, PartName.MEMORY, PartName.RECENT_STEPS)
"""Parts that change rarely or only grow at their end (oldest first): right after the stable part."""
VOLATILE_PARTS = (PartName.ACCESSIBILITY, PartName.LEFT_OUT, PartName.LATEST_RESULT)
"""Parts that change every cycle, in this order at the end; the request line and the image follow them."""
VARIABLE_ORDER = GROWING_PARTS + VOLATILE_PARTS
"""Order of the changing parts, least volatile first (parts of other names go between the two groups)."""

STRUCTURED_MODES = tuple(m for m in get_args(PolicyConfig.model_fields["structured_output"].annotation) if m != "auto")
"""Output constraints, in order of preference: a GBNF grammar generated from the action schema
(enforces numeric bounds), a JSON schema through `response_format: json_object` (llama-cpp-python),
OpenAI's `json_schema` (llama-server, vLLM …), or none (free text, robust extraction)."""

Layout = Literal["stable-first", "variable-first"]


@dataclass
class TextBudget:
    """Room left for the loop's context parts once everything else in the window is paid for."""

    text_tokens: int
    n_ctx: int
    source: str
    image_tokens: int
    reply_tokens: int
    instruction_tokens: int
    margin_tokens: int
    chars_per_token: float
    """Characters per token of this model's tokenizer on the instructions (None counted: the config's estimate)."""
    history_tokens: int = 0
    """What the replayed past turns cost (their screenshots and answers), as of the last decision."""

    def record(self) -> dict[str, Any]:
        return {"budget_tokens": self.text_tokens, "n_ctx": self.n_ctx, "window_source": self.source,
                "image_tokens": self.image_tokens, "reply_tokens": self.reply_tokens,
                **({"history_tokens": self.history_tokens} if self.history_tokens else {}),
                "instruction_tokens": self.instruction_tokens, "margin_tokens": self.margin_tokens,
                "chars_per_token": round(self.chars_per_token, 3)}


TEMPLATE_MARGIN_TOKENS = 64
"""Allowance for the chat template (role markers, image delimiters) and the part headers."""
FALLBACK_CHARS_PER_TOKEN = 3.0
"""Estimate where no tokenizer can be asked (a little below English prose's ~4, to stay inside)."""
UNKNOWN_IMAGE_TOKENS = 1024
"""Image tokens assumed for a rule that leaves the size to the server, until a decision measures them."""
_SHRINK_ORDER = (PartName.ACCESSIBILITY, PartName.RECENT_STEPS, PartName.MEMORY, PartName.HOST_FACTS, PartName.TOOLS,
                 PartName.LATEST_RESULT, PartName.GOALS, PartName.CONSTITUTION)
"""Parts cut (in this order) when a prompt still exceeds the window: least needed first."""
_HEAD_KEPT = (PartName.GOALS, PartName.CONSTITUTION)
"""Parts never cut away entirely: their head stays."""


class Adapter(Protocol):
    """A model family's answer format: how to ask, how to read the answer (its defaults: `policies.families`).

    Optional members, looked up with `getattr`: `messages(slots, past)` lays out the family's trained conversation
    (`policies/conversation.py`), `replays` (default True) says whether that layout sends past turns, and
    `request_tools(action_types, sent_size, convention)` gives (system prompt, `tools`) for a server that renders
    the family's function schema itself (`policy.tool_schema`)."""

    name: str
    """The family's name (recorded with every decision)."""
    constrain_by_default: bool
    """Whether `structured_output: auto` constrains this family (free-text families are left alone)."""

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        """The adapter's fixed instructions (stable across steps for one screen size)."""
        ...

    def action_space(self, ctx: DecisionContext) -> str | None:
        """The action-space text to send (None: the loop's JSON action space part)."""
        ...

    def request_text(self) -> str:
        """The line that closes the user turn, just before the image."""
        ...

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput: ...

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec: ...


# --- the image -------------------------------------------------------------------


@dataclass
class SentImage:
    data: bytes | None
    mime: str
    sent_size: Size
    captured_size: Size
    rule: str
    image_tokens: int | None
    encode_s: float

    def data_url(self) -> str | None:
        from conway.policies.backends.http_client import png_data_url
        return png_data_url(self.data, self.mime) if self.data is not None else None


def prepare_image(obs: Observation, rule_name: str, rule: ResizeRule, encoding: str = "jpeg",
                  size: Size | None = None) -> SentImage:
    """Resize the observation with `rule` (or to exactly `size`: a recorded sent size) and encode it.

    JPEG q85 by default: measured 7–19 ms and 136–274 KiB per decision against
    72–720 ms and up to 4 MiB for PNG level 1 (docs/measurements.md).
    """
    from PIL import UnidentifiedImageError

    from conway.imaging import Encoding, observation_image

    started = time.perf_counter()
    captured = tuple(obs.captured_size)
    if obs.image is None and obs.png is None:  # in this order: a screen's PNG is encoded only on demand
        return SentImage(None, "", captured, captured, rule_name, None, 0.0)  # type: ignore[arg-type]
    try:
        img = observation_image(obs)  # a screen observation keeps its decoded pixels
    except (UnidentifiedImageError, OSError) as exc:
        raise PolicyError(f"the observation image cannot be read: {exc}") from None
    try:
        out, sent = resize_for_model(img, rule) if size is None else _resize_exact(img, size)
    except ValueError as exc:
        raise PolicyError(f"cannot resize a {img.size[0]}x{img.size[1]} image for the model: {exc}") from None
    enc = Encoding.parse(encoding)
    tokens = None if rule.passthrough else image_tokens(sent, rule.factor)
    return SentImage(enc.encode(out), enc.mime, sent, tuple(img.size), rule_name, tokens,  # type: ignore[arg-type]
                     time.perf_counter() - started)


def _resize_exact(img: Any, size: Size) -> tuple[Any, Size]:
    from PIL import Image as _Image

    w, h = int(size[0]), int(size[1])
    if w <= 0 or h <= 0:
        raise ValueError(f"image size must be positive, got {w}x{h}")
    if img.size == (w, h):
        return img, (w, h)
    return img.resize((w, h), _Image.Resampling.LANCZOS), (w, h)


# --- the prompt ------------------------------------------------------------------


def _render_part(name: str, text: str) -> str:
    """The part in its frame (owner's file, Conway's text, untrusted data), escaped: `conway/prompt/fence.py`."""
    return render_part(name, text, frame_of(name))


def split_parts(ctx: DecisionContext, action_space: str | None) -> tuple[str, str]:
    """(task, tail) for a family's trained conversation (`conversation.Slots`): the stable and growing parts but
    the recent steps (the replayed answers take their place), and what changes every cycle."""
    by_name = {p.name: p.text for p in ctx.parts}
    if action_space is not None:
        by_name[PartName.ACTION_SPACE] = action_space
    task_names = (*STABLE_PARTS, PartName.GOALS, PartName.MEMORY)
    task = [_render_part(n, by_name[n]) for n in task_names if by_name.get(n, "").strip()]
    known = set(STABLE_PARTS) | set(VARIABLE_ORDER)
    order = [p.name for p in ctx.parts if p.name not in known] + [n for n in VOLATILE_PARTS if n in by_name]
    return "\n\n".join(task), "\n\n".join(_render_part(n, by_name[n]) for n in order)


def past_turns(history: TurnHistory | None, replay_text: bool) -> list[Past]:
    """The history as a layout sends it: every kept answer (`replay_text`) or only those with their screenshot."""
    from conway.policies.backends.http_client import png_data_url

    if history is None:
        return []
    return [Past(t, png_data_url(t.image.data, t.image.mime) if t.image is not None else None)
            for t in history.turns if replay_text or t.image is not None]


def decision_messages(ctx: DecisionContext, adapter: "Adapter", *, instructions: str, image_url: str | None,
                      sent_size: Size, layout: Layout = "stable-first", past: list[Past] | None = None
                      ) -> list[dict[str, Any]]:
    """One decision's messages: the family's trained conversation where its adapter lays one out (`messages`),
    else Conway's own (`build_messages`). `ModelPolicy.decide` and the exports (`experience/conversation.py`)
    both build them here."""
    layout_fn = getattr(adapter, "messages", None)
    if callable(layout_fn):
        task, tail = split_parts(ctx, adapter.action_space(ctx))
        return layout_fn(Slots(instructions, task, tail, image_url), past or [])
    return build_messages(ctx, instructions=instructions, action_space=adapter.action_space(ctx),
                          request_text=adapter.request_text(), image_url=image_url, sent_size=sent_size,
                          layout=layout, past=past)


def build_messages(ctx: DecisionContext, *, instructions: str, action_space: str | None,
                   request_text: str, image_url: str | None, sent_size: Size,
                   layout: Layout = "stable-first", past: list[Past] | None = None) -> list[dict[str, Any]]:
    """OpenAI chat messages for one decision.

    `stable-first` (the default): system = instructions + constitution + action
    space; user = goals, memory, recent steps (oldest first), other parts,
    accessibility, what was left out, the latest result, the request line,
    then the image. `variable-first` puts the changing parts
    before the stable ones (only for measuring what the layout is worth).
    `past` (generic with `policy.history_images` > 1): the model's earlier JSON
    answers, each after its screenshot, between the system and the user turn.
    """
    by_name = {p.name: p.text for p in ctx.parts}
    if action_space is not None:
        by_name[PartName.ACTION_SPACE] = action_space
    stable = [_render_part(n, by_name[n]) for n in STABLE_PARTS if by_name.get(n, "").strip()]  # empty: left out
    known = set(STABLE_PARTS) | set(VARIABLE_ORDER)
    extra = [p.name for p in ctx.parts if p.name not in known]
    order = [n for n in GROWING_PARTS if n in by_name] + extra + [n for n in VOLATILE_PARTS if n in by_name]
    variable = [_render_part(n, by_name[n]) for n in order]
    closing = request_text
    if image_url is not None:
        closing += f"\nThe screenshot below is {sent_size[0]}x{sent_size[1]} pixels."
    if layout == "stable-first":
        system = "\n\n".join([instructions.strip(), *stable])
        user_text = "\n\n".join([*variable, closing])
    else:
        system = ""
        user_text = "\n\n".join([*variable, instructions.strip(), *stable, closing])
    content: list[dict[str, Any]] = [{"type": "text", "text": user_text}]
    if image_url is not None:
        content.append({"type": "image_url", "image_url": {"url": image_url}})
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    for p in past or []:
        if p.image_url is not None:
            messages.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": p.image_url}}]})
            messages.append({"role": "assistant", "content": p.turn.answer})
    messages.append({"role": "user", "content": content})
    return messages


def _say_cut(context: DecisionContext, cut: list[str], before: str | None) -> str:
    """Say in the left-out part which parts were cut (replacing what an earlier round said); returns that part's
    text as it was before any cut was said in it."""
    line = "Cut to fit the model's context window: " + ", ".join(cut) + "."
    left = next((p for p in context.parts if p.name == PartName.LEFT_OUT), None)
    if left is None:
        context.parts.append(ContextPart(PartName.LEFT_OUT, line))
        return ""
    base = left.text if before is None else before
    left.text = f"{base} {line}" if base else line
    return base


# --- the policy ----------------------------------------------------------------------


@dataclass
class PolicySettings:
    convention: Convention
    resize_rule: str
    image_max_tokens: int | None = None
    structured_output: str = "auto"
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = None
    layout: Layout = "stable-first"
    image_encoding: Literal["jpeg", "png"] = "jpeg"
    tool_schema: Literal["auto", "request", "prompt"] = "auto"
    """`policy.tool_schema`: where a tool-calling family's function schema goes (`ModelPolicy._tools`)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Facts recorded with every decision (backend, endpoint, server program …)."""


_IMAGE_LIMIT = (
    re.compile(r"at most (\d+) image", re.I),  # vLLM: "At most 1 image(s) may be provided in one request."
    re.compile(r"(?:maximum|max|limit)(?: number)? of (\d+) images?", re.I),
    re.compile(r"only (\d+) images? (?:is|are) (?:allowed|supported)", re.I),
)


class ServerTakesNoImages(PolicyError):
    """The model server says it takes no images (llama-server /props `modalities.vision` false): asking would only
    be refused, every cycle."""

    permanent = True
    advice = "start the model server with the model's vision projector (llama-server --mmproj MMPROJ.gguf)"


class ToolsNotRendered(PolicyError):
    """`policy.tool_schema=request` against a server whose template would drop the `tools` field."""

    permanent = True
    advice = "set policy.tool_schema=prompt (or auto), or serve the model with a chat template that renders tools"


_TOOLS_REFUSED = re.compile(r"\btools?\b|jinja|tool_choice", re.I)
"""A refusal naming the `tools` field (llama-server without --jinja: "tools param requires --jinja flag")."""


def server_image_limit(message: str) -> int | None:
    """The number of images a server says one request may hold, read from its refusal (None: not such a refusal)."""
    for pattern in _IMAGE_LIMIT:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def count_images(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url")


class ModelPolicy(Policy):
    """One adapter on one backend; implements the `Policy` protocol."""

    def __init__(self, adapter: Adapter, backend: Backend, settings: PolicySettings,
                 on_close: list[Callable[[], None]] | None = None):
        self.adapter = adapter
        self.backend = backend
        self.settings = settings
        self.model_id = backend.model_id
        base = get_rule(settings.resize_rule)
        if settings.image_max_tokens and not base.passthrough:
            try:
                base = base.with_token_cap(settings.image_max_tokens)
            except ValueError:
                pass  # the cap is below the family's minimum: keep the family rule
        self.rule = base
        self._mode: str | None = None
        self._mode_lock = threading.Lock()
        self._on_close = list(on_close or [])
        self._closed = False
        self._window: ContextWindow | None = None
        self._window_known = False
        self._calibration = 0
        """Tokens a server counted beyond our last estimate (template, image): added to later estimates."""
        self._history: TurnHistory | None = None
        """The run's past turns, as the last decision was handed them (the text budget pays for them)."""
        self._tools_refused: str | None = None
        """Why the server's `tools` field is no longer used (it refused it under `policy.tool_schema=auto`)."""
        self._cuts = SlidingCuts()
        """Parts cut to fit the window, kept cut the same way from cycle to cycle (`_fit`)."""
        self.description: list[str] = []
        """Human-readable lines about the model and where it runs (printed by `conway probe`)."""

    @property
    def abortable(self) -> bool:  # `Policy.abortable`: as its backend is
        return bool(getattr(self.backend, "abortable", False))

    # -- structured output ------------------------------------------------------

    def structured_mode(self) -> str:
        """The output constraint in use; detected on first use (PolicyError when a requested one is unsupported)."""
        with self._mode_lock:
            return self._structured_mode()

    def _structured_mode(self) -> str:
        if self._mode is not None:
            return self._mode
        wanted = self.settings.structured_output
        if wanted == "none" or (wanted == "auto" and not self.adapter.constrain_by_default):
            self._mode = "none"
            return self._mode
        supported = self.backend.structured_support()
        if wanted == "auto":
            usable = [m for m in supported if m != "grammar" or self._grammar_available()]
            self._mode = usable[0] if usable else "none"
        elif wanted in supported:
            self._mode = wanted
        else:
            raise PolicyError(f"policy.structured_output={wanted} but {self.backend.kind} backend "
                              f"{self.model_id} does not honour it (it does: {', '.join(supported) or 'none'})")
        return self._mode

    def structured_support(self) -> tuple[list[str], dict[str, str]]:
        """The backend's honoured modes (detected by trying, cached) and what each try showed."""
        return self.backend.structured_support(), dict(self.backend.structured_report)

    def _grammar_available(self) -> bool:
        try:
            spec = self.adapter.structured(["wait"], convention=self.settings.convention,
                                           sent_size=(28, 28), captured_size=(28, 28))
        except ValueError:
            return False
        return spec.grammar is not None

    # -- the context window --------------------------------------------------------

    def context_window(self) -> ContextWindow | None:
        """Tokens one request may hold, learned once from the backend (None: it does not say)."""
        if not self._window_known:
            self._window = self.backend.context_window()
            self._window_known = True
        return self._window

    def _count(self, text: str) -> tuple[int, bool]:
        """(tokens, exact?): the backend's tokenizer when it has one, else an estimate."""
        n = self.backend.count_tokens(text)
        if isinstance(n, int):
            return n, True
        return int(len(text) / FALLBACK_CHARS_PER_TOKEN) + 1, False

    def image_tokens_for(self, captured_size: Size | None) -> int:
        """Image tokens an observation of `captured_size` costs (the family's resize rule decides)."""
        if not captured_size or min(captured_size) <= 0:
            return 0
        if self.rule.passthrough:
            return self.settings.image_max_tokens or UNKNOWN_IMAGE_TOKENS
        return image_tokens(self.rule.target_size(captured_size), self.rule.factor)

    def text_budget(self, captured_size: Size | None, action_types: list[str]) -> TextBudget | None:
        """Tokens left for the context parts: window − image − reply (max_tokens) − instructions − margin."""
        window = self.context_window()
        if window is None:
            return None
        types = [t for t in action_types if t in ACTION_TYPES] or list(ACTION_TYPES)
        has_image = bool(captured_size) and min(captured_size or (0, 0)) > 0
        sent = self.rule.target_size(captured_size) if has_image else (1, 1)  # type: ignore[arg-type]
        fixed = self.adapter.instructions(types, sent, self.settings.convention) + "\n" + self.adapter.request_text()
        n_instr, exact = self._count(fixed)
        cpt = len(fixed) / max(1, n_instr) if exact else FALLBACK_CHARS_PER_TOKEN
        image_n = self.image_tokens_for(captured_size) if has_image else 0
        margin = TEMPLATE_MARGIN_TOKENS + self._calibration
        text = window.n_ctx - image_n - self.settings.max_tokens - n_instr - margin
        # the history takes at most half of the text's room: what does not fit then goes at decide (`_fit_history`),
        # oldest screenshots first, instead of the goals being cut for screenshots that go anyway
        past = min(self._past_tokens() + self._past_text_tokens(cpt), max(0, text // 2))
        text -= past
        return TextBudget(text_tokens=text, n_ctx=window.n_ctx, source=window.source, image_tokens=image_n,
                          reply_tokens=self.settings.max_tokens, instruction_tokens=n_instr, margin_tokens=margin,
                          chars_per_token=cpt, history_tokens=past)

    def _tool_form(self) -> bool:
        """Whether the family's function schema goes in the request's `tools` field (`policy.tool_schema`): asked for,
        or `auto` and the server says its template renders tools (and has not refused them)."""
        if not callable(getattr(self.adapter, "request_tools", None)) or self._tools_refused:
            return False
        if self.settings.tool_schema == "prompt":
            return False
        renders = getattr(self.backend, "renders_tools", None)
        said = renders() if callable(renders) else None
        if self.settings.tool_schema == "request" and said is False:  # the tool would vanish without a word
            raise ToolsNotRendered("policy.tool_schema=request, but the server's chat template renders no tools "
                                   "(llama-server /props: chat_template_caps.supports_tools false): the tool would "
                                   "be dropped")
        return self.settings.tool_schema == "request" or said is True

    def _replays(self) -> bool:
        """The adapter lays out its family's trained conversation and replays every kept answer (a grounding model's
        layout, `replays = False`, sends none)."""
        return callable(getattr(self.adapter, "messages", None)) and getattr(self.adapter, "replays", True)

    def _past_tokens(self) -> int:
        """Image tokens of the past screenshots the next request sends again."""
        if self._history is None:
            return 0
        return sum(t.image.tokens if t.image.tokens is not None else UNKNOWN_IMAGE_TOKENS
                   for t in self._history.with_images())

    def _past_text_tokens(self, cpt: float) -> int:
        if self._history is None:
            return 0
        turns = self._history.turns if self._replays() else self._history.with_images()
        return int(sum(len(t.answer) for t in turns) / max(1.0, cpt))

    def _prompt_estimate(self, messages: list[dict[str, Any]], image: "SentImage") -> tuple[int, float]:
        """(prompt tokens with the template allowance, characters per text token) of these messages."""
        texts = []
        for m in messages:
            content = m.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [p.get("text", "") for p in content if p.get("type") == "text"]
        text = "\n".join(texts)
        text_n, _ = self._count(text)
        image_n = (image.image_tokens if image.image_tokens is not None else UNKNOWN_IMAGE_TOKENS) \
            if image.data is not None else 0
        image_n += self._past_tokens()
        return text_n + image_n + TEMPLATE_MARGIN_TOKENS + self._calibration, len(text) / max(1, text_n)

    def _largest_part(self, context: DecisionContext, image: "SentImage", cpt: float) -> str:
        """Which part of a prompt that does not fit is the largest, with its size and what lowers it."""
        sizes = {f"{p.name} part": int(len(p.text) / max(1.0, cpt)) for p in context.parts}
        sizes["image"] = (image.image_tokens or UNKNOWN_IMAGE_TOKENS) if image.data is not None else 0
        sizes["reply"] = self.settings.max_tokens
        remedy = {"image": "lower policy.image_max_tokens", "reply": "lower policy.max_tokens",
                  f"{PartName.TOOLS} part": "lower tools.mcp_listing_max_chars / skills.listing_max_chars",
                  f"{PartName.ACTION_SPACE} part": "offer fewer tools (tools.enabled)"}
        name, n = max(sizes.items(), key=lambda kv: kv[1])
        return (f"the largest part is the {name} (~{n} tokens): {remedy.get(name, 'shorten it')}, or raise the "
                "model's context window (runtime.n_ctx, or the server's own -c)")

    def _reread(self, history: TurnHistory | None) -> None:
        """Past screenshots known by their archived copy (after a restart) read again and resized as they were
        sent; one that cannot be is let go, said once: its answer is replayed without it."""
        for turn in history.turns if history is not None else []:
            if isinstance(turn.image, ArchivedImage):
                turn.image = self._archived_image(turn, history)  # type: ignore[arg-type]

    def _archived_image(self, turn: Turn, history: TurnHistory) -> PastImage | None:
        from pathlib import Path

        archived = turn.image
        assert isinstance(archived, ArchivedImage)
        why = None
        try:
            data = Path(archived.path).read_bytes()
            obs = Observation(png=data, captured_size=archived.captured_size, source="archive", content_hash="",
                              change_key="")
            sent = prepare_image(obs, self.settings.resize_rule, self.rule, self.settings.image_encoding,
                                 size=archived.sent_size)
            if tuple(sent.captured_size) != tuple(archived.captured_size):
                why = (f"it is {sent.captured_size[0]}x{sent.captured_size[1]}, the screenshot answered was "
                       f"{archived.captured_size[0]}x{archived.captured_size[1]}")
        except OSError as exc:
            why = exc.strerror or str(exc)
        except PolicyError as exc:
            why = str(exc)
        if why is not None:
            history.notes.append(f"the screenshot of past turn {turn.number} cannot be read again ({archived.path}: "
                                 f"{why}); its answer is replayed without it")
            return None
        return PastImage(sent.data, sent.mime, tuple(sent.sent_size), archived.tokens or sent.image_tokens)  # type: ignore[arg-type]

    def _shrink_for(self, exc: PolicyError, history: TurnHistory | None, sent_images: int) -> bool:
        """Whether a refusal is one the history can answer (then it has shrunk): a server naming how many images
        one request may hold (learned once), or one refusing the prompt for length while past screenshots went
        with it (the older half of them go; the window was unknown or the estimate short)."""
        if history is None:
            return False
        why = str(exc).splitlines()[0][:300]
        takes = server_image_limit(str(exc))
        if takes is not None and sent_images > takes:
            history.limit_images(takes, why)
            return True
        past = len(history.with_images())
        if isinstance(exc, ContextExceeded) and past:
            gone = history.drop_oldest_images(max(1, (past + 1) // 2))
            history.notes.append(f"the model server refused the prompt for length ({why}): the {gone} oldest past "
                                 "screenshot(s) were let go, the request sent again, and the screenshots held to "
                                 "what then went through")
            return True
        return False

    def _fit_history(self, context: DecisionContext, build: Callable[[], list[dict[str, Any]]],
                     image: "SentImage") -> None:
        """The oldest past screenshots go first when the prompt does not fit (before any text is cut), then the
        oldest past answers, marked; the screenshot window is held to what fitted, so it slides by half from then
        on instead of losing one screenshot a cycle."""
        window, history = self.context_window(), context.history
        if window is None or history is None:
            return
        limit = window.n_ctx - self.settings.max_tokens
        gone = answers = 0
        while history.turns and self._prompt_estimate(build(), image)[0] > limit:
            if history.with_images():
                gone += history.drop_oldest_images(1)
            else:
                del history.turns[0]
                answers += 1
        if gone:
            history.max_images = len(history.with_images())
        if gone or answers:
            what = ", ".join(x for x in (f"{gone} past screenshot(s)" if gone else "",
                                         f"{answers} past answer(s)" if answers else "") if x)
            context.dropped.append(f"{what} (cut to fit the model's context window)")
            line = f"Cut to fit the model's context window: the oldest {what}."
            left = next((p for p in context.parts if p.name == PartName.LEFT_OUT), None)
            if left is None:
                context.parts.append(ContextPart(PartName.LEFT_OUT, line))
            else:
                left.text = left.text + " " + line

    def _fit(self, context: DecisionContext, build: Callable[[], list[dict[str, Any]]],
             image: "SentImage") -> tuple[list[dict[str, Any]], int]:
        """Messages that fit the window with room for the reply; cuts parts (marked, recorded) when needed.

        Raises ContextExceeded, before anything is sent, when even the cut prompt does not fit.
        """
        messages = build()
        estimate, cpt = self._prompt_estimate(messages, image)
        window = self.context_window()
        if window is None:
            return messages, estimate
        limit = window.n_ctx - self.settings.max_tokens
        cut: list[str] = []
        left_out: str | None = None  # the left-out part's own text, before any cut was said in it
        whole = {id(p): p.text for p in context.parts}  # every cut is made from the part as built
        for _ in range(6):
            if estimate <= limit:
                break
            need = int((estimate - limit) * max(1.0, cpt) * 1.02) + 16  # a little over: the loop cuts again if short
            for name in _SHRINK_ORDER:
                for part in context.parts:
                    if need <= 0 or part.name != name:
                        continue
                    floor = 100 if name in _HEAD_KEPT else 0
                    keep = max(floor, len(part.text) - need)
                    if keep >= len(part.text):
                        continue
                    # in slides: the same cut as last cycle while it fits, so a prompt cache keeps its prefix
                    text = self._cuts.cut(name, whole[id(part)], keep)
                    need -= len(part.text) - len(text)
                    part.text = text
                    if part.name not in cut:
                        cut.append(part.name)
            context.parts = [p for p in context.parts if p.text or p.name in _HEAD_KEPT]
            if cut:  # said in the prompt before it is measured again, so the note itself is paid for
                left_out = _say_cut(context, cut, left_out)
            messages = build()
            estimate, cpt = self._prompt_estimate(messages, image)
        if estimate > limit:
            raise ContextExceeded(estimate + self.settings.max_tokens, window.n_ctx,
                                  f"the prompt needs {estimate} tokens and the reply up to {self.settings.max_tokens} "
                                  f"(policy.max_tokens), but {window.source} allows {window.n_ctx}; "
                                  + self._largest_part(context, image, cpt))
        if cut:
            context.dropped.extend(f"{name} (cut to fit the model's context window)" for name in cut)
        return messages, estimate

    # -- decide -----------------------------------------------------------------

    def decide(self, context: DecisionContext) -> Decision:
        started = time.perf_counter()
        obs = context.observation
        image = prepare_image(obs, self.settings.resize_rule, self.rule, self.settings.image_encoding)
        url = image.data_url()
        conv = self.settings.convention
        types = [t for t in context.action_types if t in ACTION_TYPES] or list(ACTION_TYPES)
        sent, captured = image.sent_size, image.captured_size
        if image.data is None or min(sent) <= 0 or min(captured) <= 0:
            sent = captured = (1, 1)  # no screenshot: GUI actions are not offered, coordinates never map
        takes_images = getattr(self.backend, "takes_images", None)
        if image.data is not None and callable(takes_images) and takes_images() is False:  # before any refusal
            raise ServerTakesNoImages("the model server takes no images (llama-server /props: modalities.vision is "
                                      "false): it was started without the model's vision projector")

        # cutting to fit works on a copy: the caller's context stays as built, so deciding it again (a retry,
        # a comparison) starts from the same text; only the names of what was cut are reported back
        work = replace(context, parts=[replace(p) for p in context.parts], dropped=[])
        history = self._history = context.history
        replays = self._replays()
        notes_before = len(history.notes) if history is not None else 0
        tools = self.adapter.request_tools(types, sent, conv) if self._tool_form() else None  # type: ignore[attr-defined]
        instructions = tools[0] if tools else self.adapter.instructions(types, sent, conv)

        def build() -> list[dict[str, Any]]:
            return decision_messages(work, self.adapter, instructions=instructions,
                                     image_url=url, sent_size=image.sent_size, layout=self.settings.layout,
                                     past=past_turns(history, replay_text=replays))

        self._reread(history)
        self._fit_history(work, build, image)  # past screenshots first, then text (`_fit`)
        messages, estimate = self._fit(work, build, image)
        context.dropped.extend(d for d in work.dropped if d not in context.dropped)
        mode = self.structured_mode()
        spec = StructuredSpec()
        if mode != "none":
            try:
                spec = self.adapter.structured(types, convention=conv, sent_size=sent, captured_size=captured)
            except ValueError as exc:
                raise PolicyError(f"cannot build the output constraint: {exc}") from None
        if tools:
            spec = replace(spec, tools=tools[1])

        def complete(messages: list[dict[str, Any]]) -> Any:
            return self.backend.complete(messages, mode=mode, spec=spec, max_tokens=self.settings.max_tokens,
                                         temperature=self.settings.temperature, seed=self.settings.seed)
        try:
            result = complete(messages)
        except PolicyError as exc:
            if tools and self.settings.tool_schema == "auto" and getattr(exc, "status", None) in (400, 422, 500) \
                    and _TOOLS_REFUSED.search(str(exc)):
                # the template takes tools but the server does not render them (llama-server without --jinja):
                # the system-prompt form from now on, said once
                self._tools_refused = f"the server refused the tools field ({str(exc)[:200]}); the tool goes in the " \
                                      "system prompt from now on (policy.tool_schema=auto)"
                tools, instructions, spec = None, self.adapter.instructions(types, sent, conv), replace(spec, tools=None)
                messages, estimate = self._fit(work, build, image)
                result = complete(messages)
            elif not self._shrink_for(exc, history, count_images(messages)):
                raise
            else:
                messages, estimate = self._fit(work, build, image)
                result = complete(messages)
                if history is not None and isinstance(exc, ContextExceeded):  # what went through is what it takes
                    history.server_images = count_images(messages)
        served_prompt = result.usage.get("prompt_tokens") if isinstance(result.usage, dict) else None
        if isinstance(served_prompt, int) and served_prompt > estimate:  # learn what the estimate missed
            self._calibration += served_prompt - estimate
        parsed = self.adapter.parse(result.text, convention=conv, sent_size=sent, captured_size=captured)
        actions: list[Any] = list(parsed.actions)
        error_cause = None
        if not parsed.ok:
            if result.finish_reason == "length":
                actions = [ActionProblem(message=cut_off_message(self.settings.max_tokens), raw=result.text[:2000])]
                error_cause = "cut off"
            else:
                error_cause = "unparseable" if parsed.raw_action_text is None else "invalid action"
        reasoning = "\n\n".join(r for r in (result.reasoning, parsed.reasoning) if r) or None
        if history is not None and parsed.ok:  # a candidate turn: kept once the loop has acted on it
            past_image = None
            if image.data is not None and history.image_cap > 0:
                past_image = PastImage(image.data, image.mime, tuple(image.sent_size), image.image_tokens)  # type: ignore[arg-type]
            history.propose(result.text, past_image)  # kept in its replayed form (`history.replayed`)
        meta = {
            **self.settings.meta,
            "policy": self.adapter.name,
            "backend": self.backend.kind,
            "sent_size": list(image.sent_size),
            "captured_size": list(image.captured_size),
            "convention": conv.value,
            "resize_rule": image.rule,
            "image_tokens": image.image_tokens,
            "structured_output": mode,
            "finish_reason": result.finish_reason,
            "timings": {**result.timings, "image_prepare_ms": round(image.encode_s * 1000, 3)},
            "layout": self.settings.layout,
        }
        if callable(getattr(self.adapter, "request_tools", None)):
            meta["tool_schema"] = "request" if tools else "prompt"
            if self._tools_refused and not tools:
                meta["tool_schema_note"] = self._tools_refused
        if result.model and result.model != self.model_id:
            meta["served_model"] = result.model
        if result.finish_reason == "length":
            meta["truncated"] = True
        if error_cause:
            meta["error_cause"] = error_cause
        meta["prompt_tokens_estimate"] = estimate
        if history is not None and (replays or history.with_images()):
            meta["history"] = {"past_images": count_images(messages) - (1 if url else 0),
                               "past_answers": len(past_turns(history, replay_text=replays))}
            if len(history.notes) > notes_before:
                meta["history"]["notes"] = history.notes[notes_before:]
        return Decision(raw_text=result.text, actions=actions, model_id=self.model_id,
                        thought=parsed.thought, reasoning=reasoning, usage=dict(result.usage),
                        latency_s=time.perf_counter() - started, meta=meta)

    # -- lifetime -----------------------------------------------------------------

    def close(self) -> None:
        """Release the backend and stop a server Conway started for this policy (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.backend.close()
        finally:
            for fn in reversed(self._on_close):
                fn()

    def __enter__(self) -> "ModelPolicy":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
