"""The context of one click check: what vision-check (a generated image) and grounding-check (a real screenshot)
ask a policy, and what an export of their cases rebuilds — one place, so the three cannot drift apart.

The loop's context with a fixed prompt: the check's own constitution (our text, kept as a file in
`instructions/`), the goal is the case's instruction, one action type (click), nothing else.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from conway.actions import describe_action_space
from conway.config import ConwayConfig
from conway.prompt.budget import build_parts, resolve_budget
from conway.protocols import DecisionContext, Observation

INSTRUCTIONS = Path(__file__).resolve().parent / "instructions"
PROMPT_FILES = {"vision-check": "vision_check.md", "grounding-check": "grounding_check.md"}
"""Each check's constitution, by the source its observations are marked with."""
CASE_KEYS = {"vision-check": "vision_check_case", "grounding-check": "grounding_case"}
"""The observation's meta key that names the case."""


@functools.cache
def check_prompt(kind: str) -> str:
    """The check's constitution as sent (the file without its final newline)."""
    return (INSTRUCTIONS / PROMPT_FILES[kind]).read_text(encoding="utf-8").removesuffix("\n")


def click_check_context(kind: str, png: bytes, size: tuple[int, int], index: int | None, instruction: str,
                        config: ConwayConfig) -> DecisionContext:
    """The context the loop would build around this image for case `index` of check `kind`."""
    digest = hashlib.sha256(png).hexdigest()
    obs = Observation(png=png, captured_size=size, source=kind, content_hash=digest,  # type: ignore[arg-type]
                      change_key=digest[:16], logical_size=size, meta={CASE_KEYS[kind]: index})
    types = ["click"]
    parts, dropped = build_parts(constitution=check_prompt(kind), data_rule=False, goals=instruction, memory="",
                                 action_space=describe_action_space(types), latest=None, recent=[],
                                 budget_tokens=resolve_budget(config.context.budget_tokens, None),
                                 chars_per_token=config.context.chars_per_token)
    return DecisionContext(parts=parts, observation=obs, step=int(index or 0) + 1, action_types=types,
                           dropped=dropped)
