"""The Holo2 adapter: one screenshot and a target in, `{"x": …, "y": …}` (0..1000) out.

Asked with its cookbook's localization prompt (hosted-API notebook, kept exactly in `prompts/`), the request its
`build_messages` sends: no system turn; one user turn, the screenshot, then the prompt, a newline and the target
(Conway's task text); what changes every cycle follows as one more text. No past turn is sent. The notebook
sends the schema with every request (vLLM `structured_outputs`), as Holo1.5's does.
"""

from __future__ import annotations

import conway.policies.families.holo2.parse as parse
from conway.geometry import Convention, Size
from conway.policies.families.holo.adapter import HoloAdapter
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder

__all__ = ["FILES", "Holo2Adapter"]

FILES = PromptFolder.of(__file__)
"""Holo2's prompt files, kept exactly (`prompts/SOURCES.md`)."""


class Holo2Adapter(HoloAdapter):
    """Holo1.5's request (one user turn: the screenshot, the prompt, a newline, the target; the schema in
    `structured_outputs`) with Holo2's own prompt files and its 0..1000 answer."""

    name = "holo2"
    files = FILES

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse.parse_click(text, convention=convention, sent_size=sent_size, captured_size=captured_size)
