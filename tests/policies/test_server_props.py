"""What a model server's properties say about images, acted on before its first refusal.

llama-server's GET /props (the shape a real b1-0c1e570 answers: `modalities` {"vision", "audio"}; its per-slot
`n_ctx` already bounds the history, `test_fit_slides.py`) says whether it takes images at all; a server started
without the model's projector says `vision: false`. The scripted fake server stands in for that server (the point
of the fake: to answer a given /props and record that no chat request was sent).
"""

from __future__ import annotations

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer
from helpers.tiny_vlm import wait_context

from conway.config import load_config
from conway.policies.factory import build_model_policy
from conway.policies.images import ServerTakesNoImages
from conway.protocols import DecisionContext
from conway.store.home import resolve_home

WAIT = '{"thought": "", "action": {"type": "wait"}}'


def _context() -> DecisionContext:
    return wait_context((1280, 800))


def _props(vision: bool) -> dict:
    return {"default_generation_settings": {"n_ctx": 32768}, "modalities": {"vision": vision, "audio": False}}


def test_a_server_that_takes_no_images_is_refused_before_any_request_with_what_to_do():
    with ScriptedFakeServer(owned_by="llamacpp", props=_props(False), replies=[Reply.text(WAIT)]) as fake:
        config = load_config(None, ["policy=generic", f"policy.endpoint={fake.base_url}",
                                    "policy.structured_output=none"])
        with build_model_policy(config, resolve_home(None)) as policy, pytest.raises(ServerTakesNoImages) as err:
            policy.decide(_context())
        sent = list(fake.chat_requests)
    assert sent == []  # nothing the server would refuse was sent
    assert "modalities.vision is false" in str(err.value) and "\n" not in str(err.value)
    assert err.value.permanent and "--mmproj" in err.value.advice  # the loop ends the run with this advice


@pytest.mark.parametrize("props", [_props(True), {"default_generation_settings": {"n_ctx": 32768}}, None])
def test_a_server_that_takes_images_or_does_not_say_is_asked(props):
    with ScriptedFakeServer(owned_by="llamacpp", props=props, replies=[Reply.text(WAIT)]) as fake:
        config = load_config(None, ["policy=generic", f"policy.endpoint={fake.base_url}",
                                    "policy.structured_output=none"])
        with build_model_policy(config, resolve_home(None)) as policy:
            policy.decide(_context())
            policy.decide(_context())
        assert len(fake.chat_requests) == 2
        assert fake.paths.count("/props") == 1  # asked once (a llama-server), whatever it said
