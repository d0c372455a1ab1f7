"""uitars: UI-TARS(-1.5), `Thought: …` / `Action: click(start_box='(x,y)')` answers."""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention
from conway.policies.family import Architecture, Family
from conway.policies.target_turns import uitars_turn


def _adapter() -> Any:
    from conway.policies.uitars import UITarsAdapter
    return UITarsAdapter()


FAMILY = Family(
    name="uitars",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # UI-TARS-1.5; UI-TARS 1.0 answers 0-1000 (policy.convention=relative1000)
    resize="uitars",
    render=uitars_turn,
    architecture=Architecture("uitars"),  # Qwen2.5-VL's, in transformers
    presets=("uitars-1.5-7b",),
)
