"""A model policy's settings: the config's values, else the family's defaults (`factory._settings`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from conway.geometry import Convention
from conway.prompt.layout import Layout

__all__ = ["PolicySettings"]


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
    """`policy.tool_schema`: where a tool-calling family's function schema goes (`output.OutputForm`)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Facts recorded with every decision (backend, endpoint, server program …)."""
