"""What a model backend is to a policy: where completions come from (HTTP endpoint or in-process llama.cpp).

Backends subclass `Backend` and so inherit the optional members' defaults
(no per-try report, an unknown context window, no exact token count, nothing said about rendering tools or
taking images).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Protocol

from conway.protocols import ContextWindow


@dataclass
class StructuredSpec:
    """The constraint an adapter offers for one decision; the backend uses the mode it supports."""

    grammar: str | None = None
    schema: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    """Function schemas for the request's `tools` field (`policy.tool_schema`); None: none sent."""


class Backend(Protocol):
    """Where completions come from. Implementations subclass it and so inherit the optional members' defaults."""

    kind: str
    model_id: str

    abortable: bool = False
    """A request returns soon once the current `conway.cancel.Cancel` is set, wherever it blocks
    (`Policy.abortable`); False by default."""

    structured_report: Mapping[str, str] = MappingProxyType({})
    """What each structured-output try showed (mode → detail), filled by `structured_support`; empty when the
    modes are known without trying (the default)."""

    def structured_support(self) -> list[str]:
        """Modes this backend honours, best first (detected by trying, cached)."""
        ...

    def complete(self, messages: list[dict[str, Any]], *, mode: str, spec: StructuredSpec,
                 max_tokens: int | None, temperature: float | None, seed: int | None,
                 sampling: Mapping[str, Any] | None = None) -> Any:
        """One chat completion → `http_client.ChatResult`; PolicyError for pre-dispatch failures. `max_tokens` and
        `temperature` None: none sent (the server's default); `sampling`: `top_p`, `frequency_penalty` as the family
        sends them, and the other fields of its request (`Adapter.request_fields`)."""
        ...

    def context_window(self) -> ContextWindow | None:
        """Tokens one request may hold, and where that was learned; None when the backend does not say (default)."""
        return None

    def count_tokens(self, text: str) -> int | None:
        """Exact tokens `text` costs with the model's tokenizer; None when there is none to ask (the default)."""
        return None

    def renders_tools(self) -> bool | None:
        """Whether the server says its chat template renders a request's `tools` (None: it does not say, the
        default)."""
        return None

    def takes_images(self) -> bool | None:
        """Whether the server says it takes images (False: started without a vision projector; None: it does not
        say, the default)."""
        return None

    def served_by(self) -> dict[str, Any]:
        """What served the model, as the server or the model file says it (`served_by.py`); {} when nothing says
        (the default)."""
        return {}

    def close(self) -> None:
        """Release what the backend holds (a connection, a loaded model); nothing by default."""
        return None
