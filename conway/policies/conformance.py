"""What a preset will send, what its full window needs, and whether the model's context holds it.

A trained family's window is its agent's: `history_images` screenshots (the current one included) and every
earlier answer replayed. `window_need` adds up what that costs at a screen size: each screenshot's tokens by the
family's resize rule, the instructions, an allowance for the replayed answers, the reply (`max_tokens`) and the
chat template. Conway sizes the context of a model it runs itself to it (`sized_runtime`: runtime.n_ctx left
unset), and refuses, in one line, a server whose context is smaller (`window_refusal`: preflight, probe, run and
every evaluation build the policy through it): no window is ever shrunk silently. `conformance_lines` is
`conway models --conformance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conway.config import ConwayConfig
from conway.geometry import Size, image_tokens
from conway.policies.families import FAMILIES, get_resize_rule

__all__ = ["ASSUMED_SCREEN", "REPLAYED_STEPS", "ANSWER_TOKENS", "WindowNeed", "window_need", "rule_for", "sized_runtime",
           "window_refusal", "conformance_lines"]

ASSUMED_SCREEN: Size = (1920, 1080)
"""The screen a need is computed for when none is known yet (OSWorld's VM)."""
REPLAYED_STEPS = 15
"""Earlier steps whose answers the need allows for (OSWorld's default --max_steps for UI-TARS; longer episodes
replay more, and a prompt that then outgrows the window is refused before it is sent, with the numbers)."""
ANSWER_TOKENS = 120
"""Tokens allowed for one replayed answer (a thought and an action)."""
TEMPLATE_TOKENS = 64
"""The chat template's role markers and image delimiters, and a margin."""
SIZE_STEP = 1024
"""A context Conway sizes itself is rounded up to a multiple of this."""


@dataclass(frozen=True)
class WindowNeed:
    """What one request of the full window costs, in tokens."""

    images: int
    image_tokens: int
    """Per screenshot."""
    sent_size: Size
    instruction_tokens: int
    answer_tokens: int
    reply_tokens: int

    @property
    def total(self) -> int:
        return (self.images * self.image_tokens + self.instruction_tokens + self.answer_tokens + self.reply_tokens
                + TEMPLATE_TOKENS)

    def fits(self, n_ctx: int) -> int:
        """How many screenshots a context of `n_ctx` holds with everything else (at least 0)."""
        rest = self.total - self.images * self.image_tokens
        return max(0, (n_ctx - rest) // max(1, self.image_tokens))

    def said(self) -> str:
        answers = f"{REPLAYED_STEPS} replayed answers ~{self.answer_tokens} + " if self.answer_tokens else ""
        return (f"{self.images} screenshot(s) x {self.image_tokens} tokens ({self.sent_size[0]}x{self.sent_size[1]}) + "
                f"instructions ~{self.instruction_tokens} + {answers}"
                f"reply {self.reply_tokens} (policy.max_tokens) = {self.total} tokens")


def window_need(config: ConwayConfig, screen: Size | None = None, in_process: bool = False) -> WindowNeed | None:
    """What the configured preset's full window needs at `screen` (None: 1920x1080); None for the mock."""
    pol = config.policy
    family = FAMILIES.get(pol.kind)
    if family is None:
        return None
    rule = rule_for(config, in_process)
    cap = pol.image_token_cap(in_process=in_process)
    sent = rule.target_size(screen or ASSUMED_SCREEN)
    per_image = cap if rule.passthrough else image_tokens(sent, rule.factor)
    adapter = family.make_adapter(pol.prompt)
    from conway.actions import ACTION_TYPES
    from conway.geometry import Convention

    convention = family.convention if pol.convention == "auto" else Convention(pol.convention)
    text = adapter.instructions(list(ACTION_TYPES), sent, convention) + adapter.request_text()
    replays = family.conversation.official or pol.resolved_history_images > 1
    return WindowNeed(images=pol.resolved_history_images, image_tokens=per_image, sent_size=sent,
                      instruction_tokens=len(text) // 3 + 1,
                      answer_tokens=REPLAYED_STEPS * ANSWER_TOKENS if replays else 0,
                      reply_tokens=pol.resolved_max_tokens)


def rule_for(config: ConwayConfig, in_process: bool = False) -> Any:
    """The resize rule the configured preset sends its screenshots by, held to its image-token cap."""
    pol = config.policy
    family = FAMILIES.get(pol.kind) or FAMILIES["generic"]
    rule = family.default("resize", pol.prompt) if pol.resize == "auto" else get_resize_rule(pol.resize)
    rule = get_resize_rule(rule) if isinstance(rule, str) else rule
    if not rule.passthrough:
        try:
            rule = rule.with_token_cap(pol.image_token_cap(in_process=in_process))
        except ValueError:
            pass  # the cap is below the family's minimum: the family's rule stays (as ModelPolicy does)
    return rule


def sized_runtime(config: ConwayConfig, screen: Size | None = None) -> ConwayConfig:
    """The configuration with `runtime.n_ctx` sized to the preset's full window when it was left unset (a model
    Conway runs itself: in-process or a server it starts; never below the default, 8192), so the window fits."""
    if "n_ctx" in config.runtime.model_fields_set or not config.policy.model_path or config.policy.endpoint:
        return config
    need = window_need(config, screen, in_process=config.policy.backend != "http")
    if need is None:
        return config
    slots = config.runtime.parallel if config.policy.backend == "http" else 1
    wanted = -(-need.total * slots // SIZE_STEP) * SIZE_STEP
    if wanted <= config.runtime.n_ctx:
        return config
    runtime = config.runtime.model_copy(update={"n_ctx": wanted})
    return config.model_copy(update={"runtime": runtime})


def window_refusal(config: ConwayConfig, n_ctx: int, source: str, screen: Size | None = None,
                   in_process: bool = False) -> str | None:
    """One line refusing a context too small for the preset's full window, with the numbers and both ways out;
    None when it fits, when the family has no official window, or when the window may shrink (`half_slide`)."""
    pol = config.policy
    family = FAMILIES.get(pol.kind)
    if family is None or not family.conversation.official or "half_slide" in pol.resolved_deviations():
        return None
    need = window_need(config, screen, in_process=in_process)
    if need is None or need.total <= n_ctx:
        return None
    held = need.fits(n_ctx)
    smaller = (f"set a smaller window, policy.history_images={held} (a deviation, listed in every report)"
               if held >= 1 else "lower policy.max_tokens or policy.image_max_tokens (deviations, listed in every "
               "report)")
    return (f"the {pol.kind} window needs {need.total} tokens ({need.said()}), but {source} allows {n_ctx}: "
            f"raise the server's context (llama-server -c {-(-need.total // SIZE_STEP) * SIZE_STEP}, or "
            f"runtime.n_ctx for a model Conway runs), or {smaller}")


def conformance_lines(config: ConwayConfig, n_ctx: int | None = None, source: str | None = None,
                      screen: Size | None = None) -> list[str]:
    """What the configured preset will send, and every deviation from its official request, one line each."""
    from conway.policies.deviations import deviation_lines

    pol = config.policy
    family = FAMILIES.get(pol.kind)
    if family is None:
        return [f"policy.kind={pol.kind}: no model, nothing is sent"]
    conv = family.conversation
    out = [f"preset: {pol.kind} (prompt {pol.prompt}); reference: {family.reference or conv.source}"]
    need = window_need(config, screen)
    turns = "every earlier answer" if conv.max_turns is None else f"{conv.max_turns} answers"
    if "half_slide" in pol.resolved_deviations() or not conv.official:
        turns = f"{config.context.recent_steps} answers, slid by half when full"
    if not family.make_adapter(pol.prompt).replays:
        turns = "nothing (each request stands alone: one screenshot and the target)"
    out.append(f"window: {pol.resolved_history_images} screenshot(s) a request; replayed: {turns}"
               + (f" ({conv.replayed})" if conv.official else ""))
    if need is not None:
        # not known: why, when a server was asked (its connection error, or that it does not say)
        room = (f"; the context: {n_ctx} ({source}), " + ("fits" if need.total <= n_ctx else "TOO SMALL")
                if n_ctx else f"; the context: {source or 'not known (no server asked)'}")
        out.append(f"tokens needed: {need.said()}{room}")
    out.append("sampling: " + _sampling(pol))
    out.append(f"encoding: {pol.resolved_encoding.upper()}, resize rule "
               f"{family.resize.name if pol.resize == 'auto' else pol.resize}")
    if family.thought_language:
        english = "english_thoughts" in pol.resolved_deviations()
        out.append(f"thought language: {'English' if english else family.thought_language}")
    checked = conv.official or family.reference is not None  # an agent's request, or a grounder's one request
    lines = deviation_lines(config)
    own = "not measured (Conway's own request)" if not lines else f"{len(lines)} from Conway's own request"
    out.append("deviations: " + (("none" if not lines else str(len(lines))) if checked else own))
    out += [f"  - {line}" for line in lines]
    return out


def _sampling(pol: Any) -> str:
    temperature = pol.resolved_temperature
    said = [f"max_tokens {pol.resolved_max_tokens}" if pol.resolved_max_tokens_sent else
            f"max_tokens not sent (the server's default; {pol.resolved_max_tokens} budgeted for the reply)",
            "temperature " + ("not sent" if temperature is None else f"{temperature:g}")]
    said += [f"{k} {v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else f"{k} {v}"
             for k, v in pol.resolved_sampling.items()]
    family = FAMILIES.get(pol.kind)
    if family is not None and family.default("retry_unfinished", pol.prompt):
        said.append(f"asked again up to {family.default('retry_unfinished', pol.prompt)} times while an answer does "
                    "not end with finish_reason \"stop\"")
    return ", ".join(said)


def conformance_report(config: ConwayConfig, screen: str = "1920x1080") -> tuple[list[str], bool]:
    """(`conway models --conformance`'s lines, whether the context holds the window): the context is the
    endpoint's (asked), or the one Conway would give a local model (`sized_runtime`), else not known."""
    from conway.errors import UserError

    try:
        w, h = (int(v) for v in screen.lower().split("x"))
        if w <= 0 or h <= 0:
            raise ValueError
    except ValueError:
        raise UserError(f"--screen {screen!r}: give WIDTHxHEIGHT, e.g. 1920x1080") from None
    size = (w, h)
    n_ctx, source, served = _context_of(config, size)
    lines = conformance_lines(config, n_ctx, source, size)
    if served:
        from conway.policies.backends.served_by import served_line

        lines.insert(1, "served by: " + served_line(served))
    refusal = window_refusal(config, n_ctx, source or "", size) if n_ctx else None
    if refusal:
        lines.append("refused: " + refusal)
    return lines, refusal is None


def _context_of(config: ConwayConfig, screen: Size) -> tuple[int | None, str | None, dict[str, Any] | None]:
    """The context a request gets: the endpoint's (llama-server /props), or what Conway gives a local model; and
    what the endpoint says serves the model (`served_by`; None without an endpoint)."""
    pol = config.policy
    if pol.endpoint:
        try:
            from conway.config import api_key
            from conway.policies.backends.discovery import discover
            from conway.policies.backends.http_client import HTTPBackend, OpenAIClient

            client = OpenAIClient(pol.endpoint, api_key=api_key(config), timeout_s=min(pol.request_timeout_s, 10))
            try:
                served = discover(client, pol.model)
                entry = next((e for e in served.entries if e.get("id") == served.model_id), {})
                backend = HTTPBackend(client, served.model_id, server=served.server, model_entry=entry)
                window = backend.context_window()
                said = backend.served_by()
            finally:
                client.close()
        except Exception as exc:  # an unreachable server: the lines say the context is not known
            return None, f"not known: {str(exc).splitlines()[0][:200]}", None
        if window is None:
            return None, f"not known ({pol.endpoint} does not say its context)", said
        return window.n_ctx, window.source, said
    if pol.model_path:
        sized = sized_runtime(config, screen)
        n = sized.runtime.n_ctx
        return n, "runtime.n_ctx" + (" (sized by Conway for this window)" if n != config.runtime.n_ctx else ""), None
    return None, None, None
