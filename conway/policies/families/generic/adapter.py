"""The generic adapter: any OpenAI-compatible VLM answering with a JSON action.

The model is asked for ``{"thought": "…", "action": {…}}`` in the normalized
action schema (`conway.actions`). Where the backend takes one, a GBNF grammar
generated from that schema constrains the answer (coordinates bounded to the
image sent); else a JSON schema; else the answer is free text and
its `parse.py` extracts the JSON from it. Coordinates default to pixels of the
image as sent (its size is stated in the prompt).
"""

from __future__ import annotations

from typing import Any

import conway.policies.families.generic.parse as parse_json
from conway.geometry import Convention, Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import StructuredSpec
from conway.policies.grammar import TEXT_MAX_CHARS, action_json_grammar
from conway.policies.parsed import ParsedOutput
from conway.policies.prompt_files import PromptFolder
from conway.protocols import DecisionContext

__all__ = ["FILES", "GenericAdapter"]

FILES = PromptFolder.of(__file__)
"""Conway's own prompt for the generic family (`prompts/`): the instructions and the request line."""


class GenericAdapter(Adapter):
    name = "generic"
    constrain_by_default = True

    def instructions(self, action_types: list[str], sent_size: Size, convention: Convention) -> str:
        coordinates = Convention(convention).rule.describe(sent_size)
        return FILES.text("system.txt").replace("{coordinates}", coordinates)

    def action_space(self, ctx: DecisionContext) -> str | None:
        return None  # the loop's JSON action space part is this adapter's language

    def request_text(self) -> str:
        return FILES.text("request.txt")

    def parse(self, text: str, *, convention: Convention, sent_size: Size, captured_size: Size) -> ParsedOutput:
        return parse_json.parse(text, convention=convention, sent_size=sent_size, captured_size=captured_size)

    def structured(self, action_types: list[str], *, convention: Convention, sent_size: Size,
                   captured_size: Size) -> StructuredSpec:
        return StructuredSpec(
            grammar=action_json_grammar(action_types, convention=convention, sent_size=sent_size,
                                        captured_size=captured_size),
            schema=cap_string_lengths(parse_json.wrapped_schema(action_types), TEXT_MAX_CHARS))


def cap_string_lengths(schema: Any, limit: int) -> Any:
    """The schema with every string `maxLength` lowered to `limit` (and a bound added where none is).

    llama.cpp turns `maxLength` into that many nested grammar rules; a 10,000-character bound (the
    `type` action's) crashes llama-cpp-python 0.3.36's sampler in-process (segfault, measured).
    """
    if isinstance(schema, dict):
        out = {k: cap_string_lengths(v, limit) for k, v in schema.items()}
        if out.get("type") == "string" and "enum" not in out and "const" not in out:
            out["maxLength"] = min(int(out.get("maxLength", limit)), limit)
        return out
    if isinstance(schema, list):
        return [cap_string_lengths(v, limit) for v in schema]
    return schema
