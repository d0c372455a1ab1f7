"""Prompt layout (stable part first, image last), the image sent, adapters, and GBNF generation."""

from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from conway.actions import ACTION_TYPES, describe_action_space
from conway.geometry import Convention
from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.policies.base import ModelPolicy
from conway.policies.families import get_resize_rule
from conway.policies.families.generic.adapter import GenericAdapter
from conway.policies.families.opencua.adapter import OpenCUAAdapter
from conway.policies.families.uitars.adapter import UITarsAdapter
from conway.policies.grammar import action_json_grammar, int_range, opencua_grammar, uitars_grammar
from conway.policies.images import prepare_image
from conway.policies.settings import PolicySettings
from conway.prompt.layout import build_messages
from conway.protocols import ContextPart, DecisionContext, Observation


def png(size=(1920, 1080), colour=(10, 20, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def context(size=(1920, 1080), types=None) -> DecisionContext:
    types = types or ["click", "type", "wait", "finish", "read_file"]
    parts = [ContextPart("constitution.md", "I am the owner's agent."),
             ContextPart("action space", describe_action_space(types)),
             ContextPart("goals.md", "Write the report."),
             ContextPart("memory.md", "- step 1: wait"),
             ContextPart("latest result", "wait → waited 2 s"),
             ContextPart("recent steps (oldest first)", "- step 1: wait() → waited 2 s")]
    obs = Observation(png=png(size), captured_size=size, source="synthetic", content_hash="h", change_key="k")
    return DecisionContext(parts=parts, observation=obs, step=2, action_types=types)


def test_stable_part_first_and_image_last():
    ctx = context()
    msgs = build_messages(ctx, instructions="INSTRUCTIONS", action_space=None, request_text="GO",
                          image_url="data:image/png;base64,AAAA", sent_size=(1932, 1092))
    system, user = msgs
    assert system["role"] == "system" and system["content"].startswith("INSTRUCTIONS")
    assert '<file name="constitution.md">\nI am the owner\'s agent.\n</file>' in system["content"]
    assert "## action space" in system["content"]
    for volatile in ("Write the report.", "waited 2 s", "step 1"):
        assert volatile not in system["content"]
    text = user["content"][0]["text"]
    order = [text.index(s) for s in ('<file name="goals.md">', '<untrusted-data source="memory.md">',
                                     '<untrusted-data source="recent steps', '<untrusted-data source="latest result">',
                                     "GO")]
    assert order == sorted(order)
    assert "1932x1092" in text
    assert user["content"][-1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


def test_variable_first_layout_for_the_benchmark():
    msgs = build_messages(context(), instructions="INSTRUCTIONS", action_space=None, request_text="GO",
                          image_url=None, sent_size=(10, 10), layout="variable-first")
    assert len(msgs) == 1
    text = msgs[0]["content"][0]["text"]
    assert text.index("goals.md") < text.index("INSTRUCTIONS") < text.index("constitution.md")


def test_stable_prefix_is_byte_identical_across_steps():
    a, b = context(), context()
    b.parts[3] = ContextPart("memory.md", "- step 1: wait\n- step 2: wait")
    b.parts[4] = ContextPart("latest result", "different")
    kw = dict(instructions="I", action_space=None, request_text="GO", image_url=None, sent_size=(10, 10))
    assert build_messages(a, **kw)[0] == build_messages(b, **kw)[0]


def test_image_is_smart_resized_on_our_side_and_recorded():
    img = prepare_image(observation_of(png((1920, 1080))), "qwen2.5-vl", get_resize_rule("qwen2.5-vl"))
    assert img.sent_size == (1932, 1092) and Image.open(io.BytesIO(img.data)).size == (1932, 1092)
    assert img.mime == "image/jpeg" and img.data_url().startswith("data:image/jpeg;base64,")
    capped = get_resize_rule("qwen2.5-vl").with_token_cap(1024)
    small = prepare_image(observation_of(png((2560, 1440))), "qwen2.5-vl", capped)
    assert small.image_tokens <= 1024 and small.sent_size[0] % 28 == 0 and small.sent_size[1] % 28 == 0
    same = prepare_image(observation_of(png((644, 392))), "qwen2.5-vl", get_resize_rule("qwen2.5-vl"), "png")
    assert same.sent_size == (644, 392) and same.mime == "image/png"
    assert Image.open(io.BytesIO(same.data)).format == "PNG"


class ScriptedBackend(Backend):
    """A backend stub for one unit test of decide(); HTTP and llama.cpp are tested for real elsewhere."""

    kind = "stub"
    model_id = "stub-model"

    def __init__(self, text):
        self.text = text
        self.calls = []

    def structured_support(self):
        return ["grammar"]

    def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
        self.calls.append((messages, mode, spec))
        return ChatResult(text=self.text, reasoning=None, finish_reason="stop", model=self.model_id,
                          usage={"prompt_tokens": 5})

    def close(self):
        pass


@pytest.mark.parametrize("adapter,text,convention,expected", [
    (GenericAdapter(), '{"thought": "go", "action": {"type": "click", "x": 966, "y": 546}}', "absolute",
     {"type": "click", "x": 960.0, "y": 540.0}),
    (OpenCUAAdapter(), "## Thought:\nthe button\n\n## Action:\nclick it\n\n## Code:\n```python\n"
                       "pyautogui.click(x=966, y=546)\n```", "absolute", {"type": "click", "x": 960.0, "y": 540.0}),
    (OpenCUAAdapter(), "## Code:\n```python\npyautogui.click(x=0.5, y=0.5)\n```", "relative",
     {"type": "click", "x": 960.0, "y": 540.0}),
    (UITarsAdapter(), "Thought: the button\nAction: click(start_box='(966,546)')", "absolute",
     {"type": "click", "x": 960.0, "y": 540.0}),
    (UITarsAdapter(), "Thought: b\nAction: click(start_box='<|box_start|>(500,500)<|box_end|>')", "relative1000",
     {"type": "click", "x": 960.0, "y": 540.0}),
])
def test_decide_maps_each_family_into_captured_pixels(adapter, text, convention, expected):
    backend = ScriptedBackend(text)
    policy = ModelPolicy(adapter, backend, PolicySettings(convention=Convention(convention),
                                                          resize_rule="qwen2.5-vl", structured_output="none"))
    d = policy.decide(context())
    action = d.actions[0]
    assert action.model_dump(exclude_none=True, exclude={"button"}) == expected, d.actions
    assert d.meta["sent_size"] == [1932, 1092] and d.meta["convention"] == convention
    assert d.meta["structured_output"] == "none"


def test_generic_asks_for_a_grammar_bounded_to_the_sent_image():
    backend = ScriptedBackend('{"thought": "", "action": {"type": "wait"}}')
    policy = ModelPolicy(GenericAdapter(), backend, PolicySettings(convention=Convention.ABSOLUTE,
                                                                   resize_rule="qwen2.5-vl"))
    d = policy.decide(context())
    messages, mode, spec = backend.calls[0]
    assert mode == "grammar" and d.meta["structured_output"] == "grammar"
    rules = dict(line.split(" ::= ", 1) for line in spec.grammar.splitlines())
    x = re.compile(gbnf_alternatives_to_regex(rules["coord-x"]))
    y = re.compile(gbnf_alternatives_to_regex(rules["coord-y"]))
    assert x.fullmatch("1931") and not x.fullmatch("1932")  # inside the 1932x1092 image sent
    assert y.fullmatch("1091") and not y.fullmatch("1092")
    assert spec.schema["properties"]["action"]


def test_opencua_and_uitars_send_their_own_action_space():
    ctx = context()
    cua = build_messages(ctx, instructions="I", action_space=OpenCUAAdapter().action_space(ctx), request_text="GO",
                         image_url=None, sent_size=(10, 10))
    assert "pyautogui.click(x=…, y=…)" in cua[0]["content"] and '"type": "read_file"' not in cua[0]["content"]
    tars = build_messages(ctx, instructions=UITarsAdapter().instructions(ctx.action_types, (10, 10),
                                                                        Convention.ABSOLUTE),
                          action_space=UITarsAdapter().action_space(ctx), request_text="GO", image_url=None,
                          sent_size=(10, 10))
    system = tars[0]["content"]
    assert "click(start_box='<|box_start|>(x1,y1)<|box_end|>')" in system and "finished(content=" in system
    assert "## action space" not in system and '"type": "read_file"' not in system  # the trained one only


# --- GBNF ------------------------------------------------------------------------------------


def gbnf_alternatives_to_regex(expr: str) -> str:
    """Translate the small GBNF subset int_range emits ("lit", [class], |, parens) to a Python regex."""
    out = re.sub(r'"([^"]*)"', lambda m: re.escape(m.group(1)), expr)
    return out.replace(" ", "")


@given(st.integers(-500, 5000), st.integers(0, 3000))
@settings(max_examples=150, deadline=None)
def test_int_range_matches_exactly_the_range(lo, span):
    hi = lo + span
    pattern = re.compile(gbnf_alternatives_to_regex(int_range(lo, hi)))
    for n in {lo, hi, lo - 1, hi + 1, (lo + hi) // 2, 0, -1, 10, 99, 100, 999, 1000}:
        assert bool(pattern.fullmatch(str(n))) == (lo <= n <= hi), (lo, hi, n)
    assert not pattern.fullmatch("007") and not pattern.fullmatch("-0")


def test_action_grammar_lists_only_the_available_types():
    g = action_json_grammar(["click", "wait"], convention="relative1000", sent_size=(100, 100),
                            captured_size=(100, 100))
    assert "act-click ::=" in g and "act-wait ::=" in g and "act-shell" not in g
    with pytest.raises(ValueError, match="unknown action types"):
        action_json_grammar(["teleport"], convention="absolute", sent_size=(10, 10), captured_size=(10, 10))


def test_every_action_type_has_a_grammar_in_every_convention():
    for conv in Convention:
        for builder in (action_json_grammar, opencua_grammar, uitars_grammar):
            g = builder(list(ACTION_TYPES), convention=conv, sent_size=(644, 392), captured_size=(640, 400))
            assert g.startswith("root ::=")


def llama_grammar_or_skip():
    try:
        import llama_cpp
    except ImportError:
        pytest.skip("llama-cpp-python is not installed (pip install -e '.[llama]')")
    return llama_cpp.LlamaGrammar


@pytest.mark.llama
def test_generated_grammars_compile_in_llama_cpp():
    LlamaGrammar = llama_grammar_or_skip()
    for conv in Convention:
        for builder in (action_json_grammar, opencua_grammar, uitars_grammar):
            text = builder(None, convention=conv, sent_size=(1932, 1092), captured_size=(1920, 1080))
            LlamaGrammar.from_string(text, verbose=False)
    LlamaGrammar.from_string(json.dumps("x").join(['root ::= ', '\n']), verbose=False)


def observation_of(data: bytes):
    from conway.protocols import Observation
    size = Image.open(io.BytesIO(data)).size
    return Observation(png=data, captured_size=size, source="synthetic", content_hash="h", change_key="k")


class WindowedBackend(ScriptedBackend):
    """The stub with a known context window (what llama-server's /props or llama.cpp would say)."""

    def __init__(self, text, n_ctx):
        super().__init__(text)
        self.n_ctx = n_ctx

    def context_window(self):
        from conway.protocols import ContextWindow
        return ContextWindow(n_ctx=self.n_ctx, source="the stub's window")


def _tool_listing(n_tools: int) -> str:
    return "MCP tools (call with ...):\n" + "".join(
        f"- srv/tool_{i}: does thing number {i} with a fairly long description of what it does\n"
        f'  arguments: {{"type":"object","properties":{{"path":{{"type":"string"}}}}}}\n' for i in range(n_tools))


def test_the_tool_listings_are_cut_to_fit_the_window_and_marked():
    from conway.prompt.parts import PartName
    backend = WindowedBackend('{"thought": "", "action": {"type": "wait"}}', n_ctx=4096)
    policy = ModelPolicy(GenericAdapter(), backend, PolicySettings(convention=Convention.ABSOLUTE,
                                                                   resize_rule="qwen2.5-vl", image_max_tokens=256,
                                                                   max_tokens=256, structured_output="none"))
    ctx = context((640, 400))
    ctx.parts.append(ContextPart(PartName.TOOLS, _tool_listing(150)))  # ~20,000 characters
    policy.decide(ctx)
    sent = json.dumps(backend.calls[0][0])
    assert re.search(r"Cut to fit the model's context window: [^\n]*\btools\b", sent)
    assert "tool_0:" in sent and "tool_149:" in sent  # head and tail kept, the middle cut
    assert "tool_75:" not in sent and f"{PartName.TOOLS} (cut to fit the model's context window)" in ctx.dropped


def test_a_prompt_that_cannot_fit_names_its_largest_part_and_the_window():
    from conway.protocols import ContextExceeded
    backend = WindowedBackend('{"thought": "", "action": {"type": "wait"}}', n_ctx=2048)
    policy = ModelPolicy(GenericAdapter(), backend, PolicySettings(convention=Convention.ABSOLUTE,
                                                                   resize_rule="qwen2.5-vl", image_max_tokens=256,
                                                                   max_tokens=1800, structured_output="none"))
    with pytest.raises(ContextExceeded) as err:
        policy.decide(context((640, 400)))
    assert "allows 2048;" in str(err.value) and "the largest part is the reply (~1800 tokens)" in str(err.value)
