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
    """The reply's budget in the context; sent as the request's max_tokens when `max_tokens_sent`."""
    max_tokens_sent: bool = True
    """False: no max_tokens in the request, as the family's agent sends none (`Family.sends_max_tokens`)."""
    temperature: float | None = 0.0
    """None: no temperature is sent (the server's default, as OSWorld's Qwen3-VL agent asks)."""
    seed: int | None = None
    layout: Layout = "stable-first"
    image_encoding: str = "jpeg"
    """`png`, `jpeg` (q85) or `jpeg<QUALITY>` (`imaging.Encoding.parse`)."""
    sampling: dict[str, float | int] = field(default_factory=dict)
    """Sampling parameters sent beside temperature (`top_p`, `frequency_penalty`), as the family's agent sends them."""
    retry_unfinished: int = 0
    """Times an answer that does not end with finish_reason "stop" is asked again (OpenCUA's agent: 20)."""
    deviations: tuple[str, ...] = ()
    """The opted-in deviations from a trained family's official request (`policy.deviations`): which of Conway's
    parts its conversation carries, and whether the fit may let past screenshots go (`half_slide`). Conway's own
    layout (generic) carries every part whatever this says."""
    tool_schema: Literal["auto", "request", "prompt"] = "auto"
    """`policy.tool_schema`: where a tool-calling family's function schema goes (`output.OutputForm`)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Facts recorded with every decision (backend, endpoint, server program …)."""
