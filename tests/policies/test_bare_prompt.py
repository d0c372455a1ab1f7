"""The generic family's `policy.prompt=bare`: the request a model trained on the short form is asked in.

The tiny demo base of docs/learning.md learns on rows cut to the goals and the screenshot line
(`training.data.Example.short(keep_goals=True)`); behind the loop's full system prompt it loses the skill. `bare`
sends exactly that cut, as a deviation named in the journal and the reports.
"""

from __future__ import annotations

import io

from fixtures.scripted_server import Reply, ScriptedFakeServer
from PIL import Image

from conway.config import load_config
from conway.policies.conformance import conformance_lines
from conway.policies.deviations import deviation_lines, listed
from conway.policies.factory import _family_adapter, _settings, build_model_policy
from conway.prompt.layout import build_messages
from conway.protocols import ContextPart, DecisionContext, Observation
from conway.store.home import resolve_home
from training.data import Example


def context() -> DecisionContext:
    parts = [ContextPart("constitution.md", "I am the owner's agent."),
             ContextPart("action space", "- click"),
             ContextPart("goals.md", "Task for this session:\nClick the blue square."),
             ContextPart("memory.md", "- step 1: wait"),
             ContextPart("latest result", "wait → waited 2 s"),
             ContextPart("recent steps (oldest first)", "- step 1: wait() → waited 2 s")]
    obs = Observation(png=b"", captured_size=(84, 84), source="synthetic", content_hash="h", change_key="k")
    return DecisionContext(parts=parts, observation=obs, step=2, action_types=["click", "wait"])


def cfg(*o):
    return load_config(None, ["policy=generic", *o])


def test_the_bare_request_is_the_training_short_form_of_the_full_one():
    kw = dict(instructions="INSTRUCTIONS", action_space=None, request_text="Choose the next action.",
              image_url="data:image/jpeg;base64,AAAA", sent_size=(84, 84))
    full = build_messages(context(), **kw)
    bare = build_messages(context(), layout="bare", **kw)
    short = Example(messages=full, image_png=None, completion="").short(keep_goals=True)
    assert bare == short.messages
    text = bare[0]["content"][0]["text"]
    assert text.startswith('<file name="goals.md">') and text.endswith("The screenshot below is 84x84 pixels.")
    for left_out in ("INSTRUCTIONS", "owner's agent", "step 1", "waited", "Choose the next action"):
        assert left_out not in text
    # without a screenshot the request line closes the turn
    no_image = build_messages(context(), layout="bare", **{**kw, "image_url": None})
    assert no_image[0]["content"] == [{"type": "text", "text": text.rsplit("\n\n", 1)[0] + "\n\nChoose the next action."}]


def test_policy_prompt_bare_lays_out_bare_and_is_named_in_every_journal_and_report():
    config = cfg("policy.prompt=bare")
    family, _ = _family_adapter(config)
    assert _settings(config, family, {}).layout == "bare"
    assert _settings(cfg(), family, {}).layout == "stable-first"
    lines = deviation_lines(config)
    assert len(lines) == 1 and lines[0].startswith("prompt bare: the goals and the screenshot only")
    assert listed(config) and not listed(cfg()) and deviation_lines(cfg()) == []
    shown = conformance_lines(config)
    assert "deviations: 1 from Conway's own request" in shown and f"  - {lines[0]}" in shown
    assert "deviations: not measured (Conway's own request)" in conformance_lines(cfg())


def test_a_bare_policy_sends_the_bare_request_and_journals_its_deviation(tmp_path):
    answer = '{"thought": "blue: top right", "action": {"type": "click", "x": 63, "y": 21}}'
    with ScriptedFakeServer(models=["tiny"], replies=[Reply.text(answer)]) as server:
        config = cfg("policy.prompt=bare", f"policy.endpoint={server.base_url}", "policy.model=tiny")
        policy = build_model_policy(config, resolve_home(str(tmp_path / "home")))
        ctx = context()
        buf = io.BytesIO()
        Image.new("RGB", (84, 84), (200, 200, 200)).save(buf, format="PNG")
        ctx.observation = Observation(png=buf.getvalue(), captured_size=(84, 84), source="synthetic",
                                      content_hash="h", change_key="k")
        decision = policy.decide(ctx)
        sent = server.chat_requests[-1]["messages"]  # after the server check's probe
    assert [m["role"] for m in sent] == ["user"], sent
    assert sent[0]["content"][0]["text"].endswith("The screenshot below is 84x84 pixels.")
    assert decision.actions[0].type == "click" and decision.meta.get("layout", "bare") == "bare"
    assert policy.deviations and policy.deviations[0].startswith("prompt bare:")
