"""Live-application cases for grounding-check (targets harvested from the accessibility tree)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...errors import UserError


def harvest_for_check(out: Path, **_: Any) -> Any:
    raise UserError("grounding-check --apps/--desktop lands shortly; use --dataset DIR for now")


__all__ = ["harvest_for_check", "Callable"]
