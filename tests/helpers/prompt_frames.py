"""Read a rendered prompt back into its parts, by the frame grammar of `conway/prompt/fence.py`, written here
again on its own so that the test does not trust the renderer's idea of itself.

A part opens with a line `<file name="N">` (closed by a line `</file>`), `<untrusted-data source="N">` (closed
by `</untrusted-data>`), or `## N` (running to the next part's opening line). Blank lines between parts are
skipped; any other text outside a part is a failure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from conway.config import DEVIATION_KEYS
from conway.geometry import Convention
from conway.policies import families
from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.policies.base import ModelPolicy
from conway.policies.families.generic.adapter import GenericAdapter
from conway.policies.families.gta1.adapter import GTA1Adapter
from conway.policies.families.holo.adapter import HoloAdapter
from conway.policies.families.opencua.adapter import OpenCUAAdapter
from conway.policies.families.qwen3vl.adapter import Qwen3VLAdapter
from conway.policies.families.qwen25vl.adapter import Qwen25VLAdapter
from conway.policies.families.uitars.adapter import UITarsAdapter
from conway.policies.prompt_files import PromptFolder
from conway.policies.settings import PolicySettings
from conway.protocols import DecisionContext

_FILE = re.compile(r'<file name="([^"\n]+)">')
_DATA = re.compile(r'<untrusted-data source="([^"\n]+)">')
_HEADING = re.compile(r"## (\S.*)")
CLOSE = {"file": "</file>", "data": "</untrusted-data>"}

FAMILIES_FOLDER = Path(families.__file__).parent
"""One folder per model family; each keeps its stored prompt files in `prompts/`."""


def prompt_text(name: str) -> str:
    """A family's stored prompt file, named `<family>/<file>`, read from the family's own folder."""
    family, _, file = name.partition("/")
    return PromptFolder(FAMILIES_FOLDER / family / "prompts").text(file)

FAMILIES = {"generic": (GenericAdapter, "absolute"), "uitars": (UITarsAdapter, "absolute"),
            "opencua": (OpenCUAAdapter, "absolute"), "qwen3vl": (Qwen3VLAdapter, "relative999"),
            "qwen25vl": (Qwen25VLAdapter, "absolute"), "gta1": (GTA1Adapter, "absolute"),
            "holo": (HoloAdapter, "absolute")}
TRAINED_LAYOUTS = {"uitars", "opencua", "qwen3vl", "qwen25vl", "gta1", "holo"}
"""The families whose adapter lays out its source's conversation (`messages`), with no request line of Conway's."""


def _opening(line: str) -> tuple[str, str] | None:
    for frame, rx in (("file", _FILE), ("data", _DATA), ("conway", _HEADING)):
        m = rx.fullmatch(line)
        if m:
            return frame, m.group(1)
    return None


def parse(text: str) -> list[tuple[str, str, str]]:
    """(frame, name, body) of every part of `text`, in order."""
    lines = text.split("\n")  # only \n separates the prompt's own lines
    out: list[tuple[str, str, str]] = []
    i = 0
    while i < len(lines):
        opened = _opening(lines[i])
        if opened is None:
            assert lines[i] == "", f"text outside any part: {lines[i]!r}"
            i += 1
            continue
        frame, name = opened
        if frame == "conway":
            j = i + 1
            while j < len(lines) and _opening(lines[j]) is None:
                j += 1
            out.append((frame, name, "\n".join(lines[i + 1:j]).strip("\n")))
        else:
            assert CLOSE[frame] in lines[i + 1:], f"part {name!r} is never closed"
            j = lines.index(CLOSE[frame], i + 1)
            out.append((frame, name, "\n".join(lines[i + 1:j])))
            j += 1
        i = j
    return out


class CapturingBackend(Backend):
    """Keeps the messages a policy sends and answers `wait`; the point is what was sent, not a model."""

    kind = "capture"
    model_id = "capture"

    def __init__(self) -> None:
        self.sent: list[list[dict[str, Any]]] = []

    def structured_support(self) -> list[str]:
        return []

    def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
        self.sent.append(messages)
        return ChatResult(text="", reasoning=None, finish_reason="stop", model=self.model_id, usage={})


def _template_pieces(family: str) -> list[str]:
    """The fixed text of a family's trained instruction template around the slot Conway fills (longest first)."""
    from conway.policies.families.uitars.adapter import LANGUAGE, PROMPTS
    if family == "uitars":
        filled = prompt_text("uitars/user_thought.txt").replace("{action_space}", prompt_text(
            "uitars/" + PROMPTS["uitars-1.5"])).replace("{language}", LANGUAGE)
        extra = [prompt_text("uitars/system.txt")]
    elif family == "opencua":
        filled, extra = prompt_text("opencua/instruction.txt"), []
    elif family in ("qwen3vl", "qwen25vl"):
        filled, extra = prompt_text(f"{family}/instruction.txt").replace("{previous_actions_str}", "None"), []
    else:
        return []
    pieces = [p for p in filled.split("{instruction}") if p.strip()] + extra  # as sent, spaces and all
    return sorted(pieces, key=len, reverse=True)


def sent_prompt(ctx: DecisionContext, family: str) -> tuple[str, str]:
    """(the prompt text the family's policy sends for `ctx` minus its own fixed wording, the fixed wording).

    The fixed wording (the adapter's instructions, the request line, the screenshot's size line) is taken
    out so what is left is made of parts only."""
    adapter_cls, convention = FAMILIES[family]
    adapter = adapter_cls()
    said: dict[str, str] = {}
    own = adapter.instructions

    def instructions(*args: Any, **kwargs: Any) -> str:  # the trained wording as sent, for taking it out below
        said["text"] = own(*args, **kwargs)
        return said["text"]

    adapter.instructions = instructions  # type: ignore[method-assign]
    backend = CapturingBackend()
    # every part sent: under each deviation (`policy.deviations`) a part goes in its frame; at the defaults a trained
    # family gets the task alone (tests/policies/test_faithful.py)
    policy = ModelPolicy(adapter, backend, PolicySettings(convention=Convention(convention), resize_rule="qwen2.5-vl",
                                                          structured_output="none", deviations=DEVIATION_KEYS))
    policy.decide(ctx)
    texts = []
    for m in backend.sent[-1]:
        content = m["content"]
        texts += [content] if isinstance(content, str) else [c["text"] for c in content if c["type"] == "text"]
    text = "\n\n".join(texts)
    fixed = [said["text"].strip(), adapter.request_text()]
    for piece in fixed[:1] if family in TRAINED_LAYOUTS else fixed:  # a trained layout has its own request line
        assert piece in text, f"the {family} prompt lost its fixed wording: {piece[:80]!r}"
    for piece in _template_pieces(family) + fixed:  # the trained template around Conway's slot, then the rest
        text = text.replace(piece, "", 1)
    text = re.sub(r"\nThe screenshot below is \d+x\d+ pixels\.$", "", text.rstrip())
    return text, said["text"]
