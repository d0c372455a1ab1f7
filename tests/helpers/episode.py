"""A fixed episode for the conversation tests: its screenshots, its context parts, a recording stand-in backend."""

from __future__ import annotations

import io
import json

from PIL import Image

from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.protocols import ContextPart, Observation
from scripts.build.osworld_goldens import COLOURS, SIZE

__all__ = ["Recording", "observation", "parts"]


class Recording(Backend):
    """A STAND-IN backend: answers the episode's scripted answers and keeps the messages it was sent."""

    kind = "stub"
    model_id = "stand-in"

    def __init__(self, answers: list[str]):
        self.answers, self.sent = list(answers), []

    def structured_support(self):
        return []

    def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
        self.sent.append(json.loads(json.dumps(messages)))
        return ChatResult(text=self.answers[len(self.sent) - 1], reasoning=None, finish_reason="stop",
                          model=self.model_id, usage={})

    def close(self):
        pass


def observation(step: int) -> Observation:
    buf = io.BytesIO()
    Image.new("RGB", SIZE, COLOURS[step - 1]).save(buf, format="PNG")
    return Observation(png=buf.getvalue(), captured_size=SIZE, source="synthetic", content_hash=f"h{step}",
                       change_key=f"k{step}")


def parts() -> list[ContextPart]:
    return [ContextPart("constitution.md", "I am the owner's agent."), ContextPart("action space", "(json)"),
            ContextPart("goals.md", "File the report."), ContextPart("latest result", "")]
