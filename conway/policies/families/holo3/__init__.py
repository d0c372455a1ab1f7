"""holo3: Holo3.1 (H Company; 0.8B to 35B-A3B, on Qwen3.5/3.6) as a full agent: one JSON step `{note, thought,
tool_call}` a turn through structured outputs, coordinates on a 0..1000 grid, the last 3 screenshots.

Documented, not code-checked: H publishes no agent code for it (the agent of `hcompai/holo-desktop-cli` runs in
the closed `hai-agent-runtime` binary); the preset follows the agent-loop page of H's documentation, whose Python
examples `scripts/build/goldens_holo3.py` runs as written to record the golden.
"""

from __future__ import annotations

from typing import Any

from conway.geometry import NO_RESIZE, Convention
from conway.policies.families.holo3.turn import holo3_turn
from conway.policies.family import Conversation, Family

DOCUMENTATION = ("H Company's documentation hub.hcompany.ai/agent-loop.md (sha256 487454400dc5e836…), "
                 "documented, not code-checked")
"""Where the layout comes from: a documentation page (its sha256 pins the version), no agent code."""


def _adapter() -> Any:
    from conway.policies.families.holo3.adapter import Holo3Adapter
    return Holo3Adapter()


FAMILY = Family(
    name="holo3",
    adapter=_adapter,
    convention=Convention.RELATIVE1000,  # "integers in [0, 1000], normalized to that image"
    resize=NO_RESIZE,  # "send a screenshot at any size": the loop sends the screenshot's bytes as they are
    render=holo3_turn,
    presets=("holo3.1",),
    # the page's structured-outputs loop: temperature=0.8 (a float) and no max_tokens (the server's default); 8192
    # is the reply's budget when Conway fits the context (thinking is on: the reasoning comes first)
    max_tokens=8192,
    sends_max_tokens=False,
    temperature=0.8,
    image_encoding="png",  # f"data:image/png;base64,{b64}" of screenshot()'s bytes
    known_differences=("every past `<tool_output>` says `done`: Conway's history keeps no result per step (the page "
                       "sends what its `execute()` returns); the latest result follows the current screenshot in its "
                       "`<observation>`",),
    conversation=Conversation(
        history_images=3,  # trim_to_last_n_images(messages, n=3)
        replayed="every answer as its parsed step (pydantic's model_dump_json), then its <tool_output> user turn; "
                 "screenshots past the last 3 become the text [screenshot evicted] inside their <observation>",
        source=DOCUMENTATION),
)
