"""`policy.tool_schema`: the Qwen families' `computer_use` tool in the request's `tools` field or in the system prompt.

Against the scripted fake server (the point of the fake: to record each request and play back a `tool_calls`
answer, or the refusal of a llama-server started without --jinja, which a real server cannot be made to give on
demand). The /props bodies are the shape a real llama-server b1-0c1e570 answers (checked by hand on the tiny VLM:
`chat_template_caps.supports_tools`, `modalities.vision`).
"""

from __future__ import annotations

import io
import json

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer, completion
from PIL import Image

from conway.config import load_config
from conway.errors import UserError
from conway.geometry import ScreenGeometry, captured_to_input
from conway.policies.factory import build_model_policy
from conway.protocols import ContextPart, DecisionContext, Observation
from conway.store.home import resolve_home

TYPES = ["click", "double_click", "right_click", "move", "drag", "type", "key", "hotkey", "scroll", "wait", "finish"]
SCREEN = (1920, 1080)


def _context() -> DecisionContext:
    buf = io.BytesIO()
    Image.new("RGB", SCREEN, (40, 90, 160)).save(buf, format="PNG")
    obs = Observation(png=buf.getvalue(), captured_size=SCREEN, source="synthetic", content_hash="h", change_key="k")
    return DecisionContext(parts=[ContextPart("goals.md", "Open the Display settings.")], observation=obs, step=1,
                           action_types=TYPES)


def _tool_calls(arguments: dict | str, content: str = "Action: Click Display.") -> Reply:
    body = completion(content)
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "call_0", "type": "function", "function": {"name": "computer_use", "arguments": args}}]
    body["choices"][0]["finish_reason"] = "tool_calls"
    return Reply(body=body)


def _system(request: dict) -> str:
    content = request["messages"][0]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def _props(supports_tools: bool, vision: bool = True) -> dict:
    return {"default_generation_settings": {"n_ctx": 65536},  # Qwen3-VL's window and 32768-token reply fit "modalities": {"vision": vision, "audio": False},
            "chat_template_caps": {"supports_tools": supports_tools, "supports_tool_calls": supports_tools}}


def _decide(fake: ScriptedFakeServer, preset: str, *extra: str, decisions: int = 1):
    config = load_config(None, [f"policy={preset}", f"policy.endpoint={fake.base_url}", *extra])
    with build_model_policy(config, resolve_home(None)) as policy:
        return [policy.decide(_context()) for _ in range(decisions)]


def test_request_sends_the_function_schema_in_tools_and_a_tool_calls_answer_is_the_click():
    with ScriptedFakeServer(replies=[_tool_calls({"action": "left_click", "coordinate": [500, 500]})]) as fake:
        (decision,) = _decide(fake, "qwen3-vl", "policy.tool_schema=request")
        request = fake.chat_requests[-1]
    (tool,) = request["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "computer_use"
    assert set(tool["function"]) == {"name", "description", "parameters"}  # qwen-agent's own fields stay home
    assert "left_click" in tool["function"]["parameters"]["properties"]["action"]["enum"]
    assert "The screen's resolution is 1000x1000." in tool["function"]["description"]  # the 0..999 grid, as prompted
    system = _system(request)
    assert "<tools>" not in system and system.startswith("# Response format")  # the template writes # Tools
    (action,) = decision.actions
    assert action.type == "click"
    assert captured_to_input(action.x, action.y, ScreenGeometry(0, 0, *SCREEN, *SCREEN)) == (961, 541)
    assert decision.meta["tool_schema"] == "request"
    assert '"coordinate": [500, 500]' in decision.raw_text  # replayed in the history as the block the model means


def test_qwen25vl_request_form_keeps_the_agents_system_line_and_pixel_tool():
    reply = _tool_calls({"action": "left_click", "coordinate": [658, 364]}, content="")
    with ScriptedFakeServer(replies=[reply]) as fake:
        (decision,) = _decide(fake, "qwen2.5-vl", "policy.tool_schema=request")
        request = fake.chat_requests[-1]
    assert _system(request) == "You are a helpful assistant"  # OSWorld's qwen25vl_agent.py, no full stop
    assert request["tools"][0]["function"]["description"] == ("Use a mouse and keyboard to interact with a computer, "
                                                             "and take screenshots.")  # the agent's tool: no size
    (action,) = decision.actions  # pixels of the 1316x728 image the agent's resize gives
    assert captured_to_input(action.x, action.y, ScreenGeometry(0, 0, *SCREEN, *SCREEN)) == (960, 540)


@pytest.mark.parametrize("renders", [True, False])
def test_auto_is_the_agents_prompt_form_whatever_the_server_renders(renders):
    """OSWorld's Qwen agents write the tool into their own system text; a template rendering `tools` would move and
    reword it, so `auto` never sends the field (`request` is the deviation `tool_schema`)."""
    reply = Reply.text('<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
                       '"coordinate": [500, 500]}}\n</tool_call>')
    with ScriptedFakeServer(owned_by="llamacpp", props=_props(renders), replies=[reply]) as fake:
        (decision,) = _decide(fake, "qwen3-vl")
        request = fake.chat_requests[-1]
    assert "tools" not in request and "<tools>" in _system(request)
    assert decision.meta["tool_schema"] == "prompt"
    assert decision.actions[0].type == "click"
    with ScriptedFakeServer(owned_by="llamacpp", props=_props(renders), replies=[_tool_calls(
            {"action": "left_click", "coordinate": [500, 500]})]) as fake:
        (decision,) = _decide(fake, "qwen3-vl", "policy.tool_schema=request") if renders else (None,)
    if renders:
        assert decision.meta["tool_schema"] == "request" and decision.actions[0].type == "click"


def test_auto_keeps_the_prompt_form_where_the_server_says_nothing():
    with ScriptedFakeServer(replies=[_tool_calls({"action": "wait", "time": 1})]) as fake:  # vLLM: no /props
        _decide(fake, "qwen3-vl")
        request = fake.chat_requests[-1]
    assert "tools" not in request and "<tools>" in _system(request)


def test_a_server_that_would_refuse_tools_is_never_asked_with_them_under_auto():
    answer = Reply.text('Action: Wait.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", '
                        '"time": 1}}\n</tool_call>')  # llama-server --no-jinja refuses a tools field: none is sent
    with ScriptedFakeServer(owned_by="llamacpp", props=_props(True), replies=[answer]) as fake:
        first, second = _decide(fake, "qwen3-vl", decisions=2)
        requests = fake.chat_requests
    assert len(requests) == 2 and all("tools" not in r and "<tools>" in _system(r) for r in requests)
    assert first.actions[0].type == "wait" and first.meta["tool_schema"] == "prompt"


def test_request_against_a_template_that_would_drop_the_tool_is_refused_before_sending():
    from conway.policies.output import ToolsNotRendered

    with ScriptedFakeServer(owned_by="llamacpp", props=_props(False)) as fake, pytest.raises(ToolsNotRendered) as err:
        _decide(fake, "qwen3-vl", "policy.tool_schema=request")
    assert fake.chat_requests == [] and "supports_tools false" in str(err.value)
    assert err.value.permanent and "policy.tool_schema=prompt" in err.value.advice


def test_a_server_refusing_tools_that_were_asked_for_is_a_clear_error():
    from conway.protocols import PolicyError

    refusal = Reply(status=500, body={"error": {"message": "tools param requires --jinja flag"}})
    with ScriptedFakeServer(owned_by="llamacpp", replies=[refusal]) as fake, pytest.raises(PolicyError) as err:
        _decide(fake, "qwen3-vl", "policy.tool_schema=request")
    assert "tools param requires --jinja flag" in str(err.value)


@pytest.mark.parametrize("arguments,needle", [
    ({"action": "left_click", "coordinate": [10, 10], "button": "left"}, "button"),
    ({"action": "fly_to", "coordinate": [10, 10]}, "fly_to"),
    ('{"action": "left_click", "coordinate": [10, 10]', "JSON"),
])
def test_a_tool_calls_answer_with_unknown_arguments_is_refused_with_the_reason(arguments, needle):
    with ScriptedFakeServer(replies=[_tool_calls(arguments)]) as fake:
        (decision,) = _decide(fake, "qwen3-vl", "policy.tool_schema=request")
    (problem,) = decision.actions
    assert hasattr(problem, "message") and needle in problem.message, problem
    assert "\n" not in problem.message and "Traceback" not in problem.message
    assert decision.meta["error_cause"] in ("invalid action", "unparseable")


@pytest.mark.parametrize("extra,needle", [
    (("policy=uitars-1.5-7b",), "uitars family calls no tool"),
    (("policy=qwen3-vl", "policy.model_path=/nonexistent/model.gguf", "policy.backend=llama_cpp"), "in-process"),
])
def test_request_is_refused_where_it_cannot_work(extra, needle):
    overrides = [*extra, "policy.tool_schema=request"]
    if "policy.model_path=/nonexistent/model.gguf" not in extra:
        overrides.append("policy.endpoint=http://127.0.0.1:9/v1")
    config = load_config(None, overrides)
    with pytest.raises(UserError) as err:
        build_model_policy(config, resolve_home(None))
    assert needle in str(err.value)


def test_an_unknown_tool_schema_value_is_refused_when_the_config_is_read():
    with pytest.raises(UserError) as err:
        load_config(None, ["policy=qwen3-vl", "policy.tool_schema=tools"])
    assert "tool_schema" in str(err.value)
