"""What a model family's adapter is to the policy: how to ask, how to read the answer, and its optional members.

Adapters subclass `Adapter` and so inherit the optional members' defaults: no trained conversation of their
own (`messages` None: Conway's layout, `conway/prompt/layout.py`), every kept answer replayed when they have one
(`replays`), and no function schema for a request's `tools` field (`request_tools` None).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from conway.geometry import Convention, Size
from conway.policies.backends.backend import StructuredSpec
from conway.policies.parsed import ParsedOutput
from conway.protocols import DecisionContext

__all__ = ["Adapter"]


class Adapter(Protocol):
    """A model family's answer format (its defaults: `policies.families`). Implementations subclass it."""

    name: str
    """The family's name (recorded with every decision)."""
    constrain_by_default: bool
    """Whether `structured_output: auto` constrains this family (free-text families are left alone)."""

    messages: Callable[[Any, list[Any]], list[dict[str, Any]]] | None = None
    """`messages(slots, past)` lays out the family's trained conversation (`policies/conversation.py`: `Slots`,
    `Past`); None (the default): Conway's own layout."""
    replays: bool = True
    """Whether the family's own layout sends its past answers (a grounding model's does not)."""
    answer_text: Callable[[str, str | None], tuple[str, str | None]] | None = None
    """`answer_text(text, reasoning)` gives the (text, reasoning) the family reads and keeps, for a family whose
    answer format holds a thinking block the backends split off as reasoning (MAI-UI's `<thinking>`); None (the
    default): the text as the backend gives it."""
    request_tools: Callable[[list[str], Size, Convention], tuple[str, list[dict[str, Any]]]] | None = None
    """`request_tools(action_types, sent_size, convention)` gives (system prompt, `tools`) for a server that
    renders the family's function schema itself (`policy.tool_schema`); None (the default): the family calls no
    tool."""

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

    def request_fields(self) -> dict[str, Any]:
        """Fields the family's official request carries beside its sampling (Holo's vLLM `structured_outputs`),
        sent to a server as they are; a model in process takes none of them. Default: none."""
        return {}
