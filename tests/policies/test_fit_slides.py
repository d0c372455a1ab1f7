"""Cutting to fit the window keeps the prompt's prefix from cycle to cycle (a prompt cache's whole gain).

The backend is a fake with a small window (the point of the test is what `_fit` renders, asserted on
the messages it sends); the cut itself runs for real.
"""

from __future__ import annotations

import io
import json
import random

from PIL import Image

from conway.geometry import Convention
from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.policies.base import ModelPolicy
from conway.policies.families.generic.adapter import GenericAdapter
from conway.policies.settings import PolicySettings
from conway.prompt.parts import PartName
from conway.prompt.slide_cut import SlidingCuts
from conway.protocols import ContextPart, ContextWindow, DecisionContext, Observation


def screenshot() -> Observation:
    buf = io.BytesIO()
    Image.new("RGB", (640, 400), (10, 20, 30)).save(buf, format="PNG")
    return Observation(png=buf.getvalue(), captured_size=(640, 400), source="synthetic", content_hash="h",
                       change_key="k")


class FakeWindowBackend(Backend):
    """A fake: records the messages and says its window; no tokenizer (the policy estimates)."""

    kind = "fake"
    model_id = "fake"

    def __init__(self, n_ctx: int):
        self.n_ctx = n_ctx
        self.sent: list[str] = []

    def context_window(self):
        return ContextWindow(n_ctx=self.n_ctx, source="the fake's window")

    def structured_support(self):
        return []

    def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
        self.sent.append(json.dumps(messages, ensure_ascii=False))
        return ChatResult(text='{"thought": "", "action": {"type": "wait"}}', reasoning=None, finish_reason="stop",
                          model=self.model_id, usage={})

    def close(self):
        pass


def step_line(i: int) -> str:
    return f"- step {i}: click(x={100 + i % 37}, y={200 + i % 11}) → clicked the button labelled item {i}"


def growing_context(n: int, rng: random.Random) -> DecisionContext:
    """What the loop builds at step n: stable parts, memory, the recent steps grown by a line, a new result."""
    parts = [ContextPart(PartName.CONSTITUTION, "I am the owner's agent. " * 20),
             ContextPart(PartName.GOALS, "Fill in the form, then save it."),
             ContextPart(PartName.MEMORY, "".join(f"- earlier step {i}: typed a field\n" for i in range(20))),
             ContextPart(PartName.RECENT_STEPS, "\n".join(step_line(i) for i in range(1, n + 1))),
             ContextPart(PartName.LATEST_RESULT, "typed → " + "x" * rng.randint(20, 600))]
    return DecisionContext(parts=parts, observation=screenshot(), step=n, action_types=["click", "type", "wait"])


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def test_a_growing_context_cut_to_fit_keeps_its_prefix_between_slides():
    rng = random.Random(7)
    backend = FakeWindowBackend(n_ctx=2000)
    policy = ModelPolicy(GenericAdapter(), backend, PolicySettings(
        convention=Convention.ABSOLUTE, resize_rule="qwen2.5-vl", image_max_tokens=256, max_tokens=64,
        structured_output="none"))
    cycles = 80
    for n in range(40, 40 + cycles):
        ctx = growing_context(n, rng)
        policy.decide(ctx)
        assert any("cut to fit" in d for d in ctx.dropped)  # every cycle needs the cut: the test is about it
    kept, slides = [], 0
    for n, (prev, cur) in enumerate(zip(backend.sent, backend.sent[1:]), 41):
        assert step_line(n) in cur  # the newest step is always in the prompt (the tail is kept)
        assert step_line(1) in cur  # and so is the head
        upto = prev.index(f"## {PartName.LEFT_OUT}")  # everything up to the last step line, cut part included
        upto = prev.rindex("item", 0, upto)  # (the text between is JSON-escaped newlines)
        if common_prefix(prev, cur) >= upto:
            kept.append(n)
        else:
            slides += 1
    assert len(kept) + slides == cycles - 1
    assert slides >= 1  # the cut did have to slide as the steps grew
    assert slides <= cycles // 6, f"{slides} of {cycles - 1} cycles changed the prompt before their new step line"


def test_a_slide_keeps_the_head_and_halves_the_tail():
    cuts = SlidingCuts()
    text = "\n".join(step_line(i) for i in range(1, 200))
    first = cuts.cut("steps", text, 3000)
    assert len(first) <= 3000 and first.startswith(step_line(1)) and first.endswith(step_line(199))
    grown = text + "\n" + step_line(200)
    assert cuts.cut("steps", grown, 3000) == first + "\n" + step_line(200)  # the same cut, one line longer
    outs = [cuts.cut("steps", "\n".join(step_line(i) for i in range(1, m)), 3000) for m in range(201, 260)]
    assert all(len(o) <= 3000 for o in outs)
    changed = sum(1 for a, b in zip(outs, outs[1:]) if not b.startswith(a))
    assert 1 <= changed <= 4  # a few slides in 60 lines, not one a line
    assert cuts.cut("steps", "something else entirely\n" * 300, 3000).startswith("something else")  # cut afresh
    assert cuts.cut("steps", "short", 3000) == "short"
    assert cuts.cut("steps", text, 50) == ""  # no room for a head and a marker
