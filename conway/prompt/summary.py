"""The summary request for memory.md and the checks its answer must pass.

The instruction is ours, kept as a file (`instructions/memory_summary.md`): keep the chronology, the evolution
of ideas, contradictions, uncertainty, open questions and the owner's commitments; do not flatten; invent
nothing; copy pinned lines exactly. The memory text follows it between two fence lines that do not occur in
the text, so nothing inside can end the data early and pose as more instruction.

An answer is refused (and memory is truncated, marked, instead) when it is empty, was cut off at its
max_tokens, is longer than the target (`memory.keep_chars` less the summary's header line), or drops a
pinned line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from conway.prompt.memory import pinned_lines
from conway.protocols import TextAnswer

__all__ = ["INSTRUCTION_FILE", "SummaryRequest", "instruction", "refusal", "summary_request"]

INSTRUCTION_FILE = Path(__file__).parent / "instructions" / "memory_summary.md"


@cache
def instruction() -> str:
    return INSTRUCTION_FILE.read_text(encoding="utf-8")


@dataclass
class SummaryRequest:
    prompt: str
    target_chars: int
    pinned: list[str]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()


def _fence(text: str) -> str:
    n = 0
    while (fence := f"===== memory.md{f' #{n}' if n else ''} =====") in text:
        n += 1
    return fence


def summary_request(text: str, target_chars: int) -> SummaryRequest:
    """The one text prompt that asks for a summary of `text` in at most `target_chars` characters."""
    pinned = pinned_lines(text)
    fence = _fence(text)
    parts = [instruction().replace("{target_chars}", str(target_chars)).strip()]
    if pinned:
        parts.append("The pinned lines, to copy exactly:\n" + "\n".join(pinned))
    parts.append(f"The memory text is everything between the two lines that read {fence}:\n"
                 f"{fence}\n{text.rstrip()}\n{fence}")
    return SummaryRequest("\n\n".join(parts), target_chars, pinned)


def unfenced(text: str) -> str:
    """The answer without a code fence wrapped around all of it (models add one though asked not to)."""
    lines = text.strip().splitlines()
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1]).strip()
    return text.strip()


def refusal(answer: TextAnswer, request: SummaryRequest, max_tokens: int) -> str | None:
    """Why this answer may not replace memory.md, or None when it may."""
    text = unfenced(answer.text)
    if not text:
        return "the summary was empty"
    if answer.finish_reason == "length":
        return f"the summary was cut off at its max_tokens ({max_tokens}, memory.summary_max_tokens)"
    if len(text) > request.target_chars:
        return (f"the summary is {len(text)} characters, over the target of {request.target_chars} "
                "(memory.keep_chars less the summary's header line)")
    kept = {line.strip() for line in text.splitlines()}
    lost = [p for p in request.pinned if p not in kept]
    if lost:
        return f"the summary dropped {len(lost)} pinned line(s), the first: {lost[0][:80]!r}"
    return None
