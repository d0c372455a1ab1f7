"""The generic family's target turn: a recorded step as its JSON answer."""

from __future__ import annotations

import json
from typing import Any

from conway.policies.target_turns import canonical_action


def generic_turn(action: dict[str, Any], pt: Any, thought: str | None) -> str:
    """The generic family's answer: `{"thought": …, "action": {…}}` in the schema's key order."""
    out = canonical_action(action)
    for (kx, ky), value in pt.items():
        out[kx], out[ky] = value
    return json.dumps({"thought": thought or "", "action": out}, ensure_ascii=False)
