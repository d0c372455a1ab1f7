"""The Holo3.1 adapter: the documented agent loop's request (hub.hcompany.ai/agent-loop.md, structured outputs).

System: "your prompt" (the page leaves it to the harness: Conway's task slot, its constitution, goals and
memory), then the page's `<output_format>` block with the Step schema. Each step: a user `<observation>` turn
(the screenshot between its two wrapper texts), the answer replayed as its parsed step, then a user
`<tool_output tool="…">` turn with the step's result. Only the last 3 screenshots are sent; an older one is the
text `[screenshot evicted]` in its wrapper, as the page's `trim_to_last_n_images` leaves it. The schema also goes
in vLLM's `structured_outputs` field with every request.

Conway's history keeps no result per past step, so every past `<tool_output>` says `TOOL_RESULT`; what Conway
learns every cycle (the latest result, accessibility) follows the current screenshot inside its `<observation>`
(the page: "screenshot and/or text").
"""

from __future__ import annotations

import json
from typing import Any

import conway.policies.families.holo3.parse as parse
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import Past, Slots, image, text
from conway.policies.families.holo3.step import FILES, TOOLS, replay, schema, schema_text
from conway.policies.parsed import ParsedOutput
from conway.protocols import DecisionContext

__all__ = ["EVICTED", "TOOL_RESULT", "Holo3Adapter"]

OPEN, CLOSE = "<observation>\n", "\n</observation>"
"""The page's observation wrapper, the two text parts around the screenshot."""
EVICTED = "[screenshot evicted]"
"""What `trim_to_last_n_images` puts in place of a screenshot past the last 3."""
TOOL_RESULT = "done"
"""A past step's result as Conway sends it (`scripts/build/goldens_holo3.py`'s `execute` returns the same)."""


class Holo3Adapter(Adapter):
    name = "holo3"
    constrain_by_default = False

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        return FILES.text("output_format.txt").replace("{schema}", schema_text())

    def action_space(self, ctx: DecisionContext) -> str | None:
        return ""  # the schema is the action space

    def request_text(self) -> str:
        return FILES.text("request.txt")  # Conway's own: the page's loop sends no request line

    def messages(self, slots: Slots, past: list[Past]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": slots.task + slots.system}]
        for p in past:
            out.append(_observation(p.image_url))
            answer = replay(p.turn.answer)
            out.append({"role": "assistant", "content": answer})
            out.append({"role": "user", "content": f'<tool_output tool="{_tool_name(answer)}">\n{TOOL_RESULT}\n'
                                                   "</tool_output>"})
        out.append(_observation(slots.image_url, slots.tail, current=True))
        return out

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec(schema=schema())  # offered to Conway's own constraint modes, not forced

    def request_fields(self) -> dict[str, Any]:
        """The page's `extra_body={"structured_outputs": {"json": schema}}`, merged into the body."""
        return {"structured_outputs": {"json": schema()}}


def _observation(url: str | None, tail: str = "", current: bool = False) -> dict[str, Any]:
    """A user `<observation>` turn: the screenshot (a past one no longer sent: the placeholder; the current step
    without a screen: nothing) and, for the current step, Conway's per-cycle parts after it."""
    parts = [text(OPEN)]
    if url:
        parts.append(image(url))
    elif not current:
        parts.append(text(EVICTED))
    parts.append(text(f"\n{tail}{CLOSE}" if tail else CLOSE))
    return {"role": "user", "content": parts}


def _tool_name(answer: str) -> str:
    """The step's tool, for its `<tool_output tool="…">`: one of the documented names, never the model's own text
    (a name of its making could close the wrapper)."""
    try:
        name = json.loads(answer)["tool_call"]["tool_name"]
    except (ValueError, RecursionError, KeyError, TypeError):
        return "unknown"
    return name if name in TOOLS else "unknown"
