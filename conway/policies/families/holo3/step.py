"""Holo3.1's step object, as the documented loop handles it: its schema (stored, `prompts/step_schema.json`) and
the form an answer is replayed in.

The loop pushes back `step.model_dump_json()` of the parsed answer, not the text the model wrote: pydantic's
compact JSON, the fields in the schema's order, a field the model left out written with its default (`note`
null, `write`'s `press_enter` false) and a key the schema does not know dropped (pydantic's default). `dump`
writes that form from the schema's own order and defaults, so a changed schema changes the replay with it.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from conway.policies.prompt_files import PromptFolder

__all__ = ["FILES", "TOOLS", "dump", "replay", "schema", "schema_text", "schema_tools"]

FILES = PromptFolder.of(__file__)
"""Holo3.1's prompt files (`prompts/SOURCES.md`)."""

_MISSING = object()


def schema_text() -> str:
    """The Step schema exactly as the loop embeds it (`json.dumps(Step.model_json_schema())`)."""
    return FILES.text("step_schema.json")


def schema() -> dict[str, Any]:
    return json.loads(schema_text())


@cache
def _fields() -> tuple[tuple[tuple[str, Any], ...], dict[str, tuple[tuple[str, Any], ...]]]:
    """(the step's fields, each tool's fields by tool_name), each (name, default or _MISSING) in schema order."""
    doc = schema()

    def of(obj: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        return tuple((name, spec.get("default", _MISSING)) for name, spec in obj["properties"].items())

    tools = {d["properties"]["tool_name"]["const"]: of(d) for d in doc.get("$defs", {}).values()
             if "const" in d.get("properties", {}).get("tool_name", {})}
    return of(doc), tools


TOOLS = ("click", "write", "answer")
"""The documented example's tools (the schema's union), in its order."""


def schema_tools() -> tuple[str, ...]:
    """The tool names the stored schema declares (a test holds them to `TOOLS`)."""
    return tuple(_fields()[1])


def _ordered(obj: dict[str, Any], fields: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    return {name: obj[name] if name in obj else default for name, default in fields
            if name in obj or default is not _MISSING}


def dump(step: dict[str, Any]) -> str:
    """A step (already valid) as `model_dump_json` writes it."""
    top, by_tool = _fields()
    call = step["tool_call"]
    out = _ordered({**step, "tool_call": _ordered(call, by_tool[call["tool_name"]])}, top)
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def replay(answer: str) -> str:
    """A past answer as the loop sends it back: its canonical dump; the text itself when it is not a valid step
    (the loop would have stopped on it; Conway keeps what the model wrote)."""
    try:
        step = json.loads(answer)
    except (ValueError, RecursionError):
        return answer
    call = step.get("tool_call") if isinstance(step, dict) else None
    if not isinstance(call, dict) or call.get("tool_name") not in _fields()[1] or "thought" not in step:
        return answer
    return dump(step)
