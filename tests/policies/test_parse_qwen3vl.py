"""Qwen3-VL: `<tool_call>` blocks of the computer_use tool, its 0..999 grid, and refusals with reasons."""

from __future__ import annotations

import io
import json

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer
from PIL import Image

from conway.actions import ActionProblem
from conway.config import load_config
from conway.geometry import ScreenGeometry, captured_to_input
from conway.policies.factory import build_model_policy
from conway.policies.families import get_family, get_resize_rule
from conway.policies.families.qwen3vl.adapter import system_prompt
from conway.policies.families.qwen3vl.parse import ARGUMENTS, parse
from conway.protocols import ContextPart, DecisionContext, Observation
from conway.store.home import resolve_home

CAPTURED = (1920, 1080)
SENT = get_resize_rule("qwen3-vl").target_size(CAPTURED)  # (1920, 1088)
GRID = dict(convention="relative999", sent_size=SENT, captured_size=CAPTURED)
X11 = ScreenGeometry(0, 0, 1920, 1080, 1920, 1080)


def call(**arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": arguments}) + "\n</tool_call>"


def answer(*calls: str, action: str = "Do it.") -> str:
    return f"Action: {action}\n" + "\n".join(calls)


def only_problem(out) -> str:
    assert len(out.actions) == 1 and isinstance(out.actions[0], ActionProblem), out.actions
    return out.actions[0].message


def dumped(out) -> list[dict]:
    assert out.ok, out.actions
    return [a.model_dump(exclude_none=True) for a in out.actions]


# --- every action form ---------------------------------------------------------------------------


@pytest.mark.parametrize("arguments,expected", [
    ({"action": "left_click", "coordinate": [999, 0]}, {"type": "click", "x": 1919.0, "y": 0.0, "button": "left"}),
    ({"action": "right_click", "coordinate": [0, 999]}, {"type": "right_click", "x": 0.0, "y": 1079.0}),
    ({"action": "middle_click", "coordinate": [0, 0]}, {"type": "click", "x": 0.0, "y": 0.0, "button": "middle"}),
    ({"action": "double_click", "coordinate": [0, 0]}, {"type": "double_click", "x": 0.0, "y": 0.0}),
    ({"action": "triple_click", "coordinate": [0, 0]}, {"type": "triple_click", "x": 0.0, "y": 0.0}),
    ({"action": "mouse_move", "coordinate": [0, 0]}, {"type": "move", "x": 0.0, "y": 0.0}),
    ({"action": "type", "text": "stat\n"}, {"type": "type", "text": "stat\n"}),
    ({"action": "key", "keys": ["Return"]}, {"type": "key", "key": "enter"}),
    ({"action": "key", "keys": ["ctrl", "c"]}, {"type": "hotkey", "keys": ["ctrl", "c"]}),
    ({"action": "scroll", "pixels": -5}, {"type": "scroll", "dy": -5}),
    ({"action": "scroll", "pixels": 3, "coordinate": [0, 0]}, {"type": "scroll", "dy": 3, "x": 0.0, "y": 0.0}),
    ({"action": "hscroll", "pixels": 4}, {"type": "scroll", "dx": 4}),
    ({"action": "wait", "time": 2}, {"type": "wait", "seconds": 2.0}),
    ({"action": "wait"}, {"type": "wait"}),
    ({"action": "terminate", "status": "success"}, {"type": "finish", "status": "DONE", "message": ""}),
    ({"action": "terminate", "status": "failure"}, {"type": "finish", "status": "FAIL", "message": ""}),
    ({"action": "answer", "text": "42"}, {"type": "finish", "status": "DONE", "message": "42"}),
])
def test_every_action_form_maps_onto_the_schema(arguments, expected):
    got = dumped(parse(answer(call(**arguments)), **GRID))
    assert [{k: v for k, v in a.items() if k in expected} for a in got] == [expected]


def test_every_tool_action_is_covered():
    assert set(ARGUMENTS) == {"left_click", "right_click", "middle_click", "double_click", "triple_click",
                              "mouse_move", "left_click_drag", "type", "key", "scroll", "hscroll", "wait",
                              "terminate", "answer"}


def test_a_drag_is_a_mouse_move_then_left_click_drag():
    out = parse(answer(call(action="mouse_move", coordinate=[0, 0]),
                       call(action="left_click_drag", coordinate=[999, 999])), **GRID)
    assert dumped(out) == [{"type": "drag", "x": 0.0, "y": 0.0, "to_x": 1919.0, "to_y": 1079.0}]
    assert "current pointer position" in only_problem(parse(answer(call(action="left_click_drag",
                                                                        coordinate=[5, 5])), **GRID))


def test_answer_then_terminate_is_one_finish_with_the_answer():
    out = parse(answer(call(action="answer", text="3 files"), call(action="terminate", status="failure")), **GRID)
    assert dumped(out) == [{"type": "finish", "status": "FAIL", "message": "3 files"}]


def test_the_action_line_is_the_thought_and_think_blocks_are_reasoning():
    out = parse("<think>the menu is open</think>\nAction: Click Display.\n" +
                call(action="left_click", coordinate=[10, 10]), **GRID)
    assert out.thought == "Click Display." and out.reasoning == "the menu is open"


# --- refusals --------------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments,reason", [
    ({"action": "left_click", "coordinate": [5, 5], "button": "left"},
     "left_click: unknown argument 'button' (it takes action, coordinate)"),
    ({"action": "type", "text": "a", "interval": 0.1}, "type: unknown argument 'interval'"),
    ({"action": "left_click"}, "left_click needs 'coordinate'"),
    ({"action": "left_click", "coordinate": [5]}, "coordinate must be [x, y]"),
    ({"action": "left_click", "coordinate": [1000, 5]}, "x=1000 outside 0..999 (relative999 coordinates)"),
    ({"action": "left_click", "coordinate": ["5", 5]}, "is not a number"),
    ({"action": "left_click", "coordinate": [10 ** 400, 5]}, "not a plausible coordinate"),
    ({"action": "key", "keys": []}, "keys must be a non-empty list"),
    ({"action": "key", "keys": ["nokey"]}, "nokey"),
    ({"action": "scroll", "pixels": 2.5}, "pixels must be a whole number"),
    ({"action": "wait", "time": -1}, "time must be a number of seconds"),
    ({"action": "terminate", "status": "done"}, "status must be 'success' or 'failure'"),
    ({"action": "answer", "text": 3}, "text must be a string"),
    ({"action": "shell", "command": "rm -rf /"}, "action 'shell' is not one of"),
    ({"action": ["left_click"]}, "is not one of"),
])
def test_bad_arguments_are_refused_with_the_reason(arguments, reason):
    assert reason in only_problem(parse(answer(call(**arguments)), **GRID))


@pytest.mark.parametrize("text,reason", [
    ("Action: click it.", "no <tool_call> block"),
    ("<tool_call>\n{\"name\": \"computer_use\", \"arguments\": {\"action\": \"wait\"}}", None),  # unclosed: read
    ("<tool_call>\nnot json\n</tool_call>", "not valid JSON"),
    ("<tool_call>\n[1, 2]\n</tool_call>", "one JSON object"),
    ("<tool_call>\n" + "[" * 100_000 + "\n</tool_call>", "nested too deeply"),
    ('<tool_call>\n{"name": "os.system", "arguments": {"action": "wait"}}\n</tool_call>', "not 'computer_use'"),
    ('<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait"}, "id": 1}\n</tool_call>',
     "unknown key 'id'"),
    ('<tool_call>\n{"name": "computer_use", "arguments": "{\\"action\\": \\"wait\\"}"}\n</tool_call>', None),
    ('<tool_call>\n{"name": "computer_use", "arguments": 5}\n</tool_call>', "arguments must be a JSON object"),
    ("<tool_call>\npyautogui.click(1, 2)\n</tool_call>", "not valid JSON"),
])
def test_bad_blocks_are_refused_and_near_misses_read(text, reason):
    out = parse(text, **GRID)
    if reason is None:
        assert out.ok and out.actions[0].type == "wait"
    else:
        assert reason in only_problem(out)


def test_one_bad_block_refuses_the_whole_answer_naming_it():
    out = parse(answer(call(action="left_click", coordinate=[5, 5]), call(action="type", text="ls"),
                       call(action="run", command="touch x")), **GRID)
    assert "block 3 of 3: action 'run' is not one of" in only_problem(out)


def test_fifty_blocks_are_refused():
    out = parse(answer(*[call(action="left_click", coordinate=[i, 5]) for i in range(50)]), **GRID)
    assert "more than 10 <tool_call> blocks" in only_problem(out)


def test_non_text_and_misconfigured_setups_are_problems():
    assert "must be text" in only_problem(parse(None, **GRID))  # type: ignore[arg-type]
    assert "unknown coordinate convention" in only_problem(
        parse(call(action="wait"), convention="grid", sent_size=SENT, captured_size=CAPTURED))


# --- the real path: preset -> family defaults -> parse -> geometry ---------------------------------


def _png(size) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (10, 20, 30)).save(buf, format="PNG")
    return buf.getvalue()


def test_a_click_at_500_500_lands_at_961_541_on_1920x1080():
    text = answer(call(action="left_click", coordinate=[500, 500]))
    obs = Observation(png=_png(CAPTURED), captured_size=CAPTURED, source="synthetic", content_hash="h",
                      change_key="k")
    ctx = DecisionContext(parts=[ContextPart("goals.md", "Open Display.")], observation=obs, step=1,
                          action_types=["click", "wait", "finish"])
    with ScriptedFakeServer(replies=[Reply.text(text)]) as fake:
        config = load_config(None, ["policy=qwen3-vl", f"policy.endpoint={fake.base_url}"])
        with build_model_policy(config, resolve_home(None)) as policy:
            assert policy.adapter.name == "qwen3vl"
            decision = policy.decide(ctx)
    assert decision.meta["convention"] == "relative999" and decision.meta["sent_size"] == [1920, 1088]
    (click,) = decision.actions
    assert captured_to_input(click.x, click.y, X11) == (961, 541)  # 500 * 1920 / 999, 500 * 1080 / 999
    assert (round(500 * 1920 / 1000), round(500 * 1080 / 1000)) == (960, 540)  # the 0..1000 reading misses


def test_the_family_defaults_are_the_grid_and_factor_32():
    family = get_family("qwen3vl")
    assert family.convention.value == "relative999" and family.resize.factor == 32


def test_the_system_prompt_is_osworlds_with_its_agents_tool():
    text = system_prompt(["click", "type", "wait", "finish"], SENT, get_family("qwen3vl").convention)
    assert text.startswith("# Tools\n\nYou may call one or more functions")
    assert "* The screen's resolution is 1000x1000." in text  # the 0..999 grid, as OSWorld's agent says
    tool = json.loads(text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0])
    assert tool["function"]["name"] == "computer_use"
    assert tool["function"]["parameters"]["properties"]["action"]["enum"] == [
        "type", "left_click", "right_click", "middle_click", "wait", "terminate"]  # of the agent's 11 actions
    absolute = system_prompt(None, SENT, get_family("qwen3vl").convention.__class__("absolute"))
    assert "* The screen's resolution is 1920x1088." in absolute


# --- Qwen2.5-VL's tool: clicks described without a coordinate ------------------------------------------


@pytest.mark.parametrize("click,kind", [("left_click", "click"), ("double_click", "double_click"),
                                        ("right_click", "right_click")])
def test_a_click_without_coordinate_right_after_a_mouse_move_clicks_at_the_moves_point(click, kind):
    out = parse(answer(call(action="mouse_move", coordinate=[500, 500]), call(action=click)), **GRID)
    assert out.ok, out.problems
    (action,) = out.actions  # one click, not a move and a click
    assert action.type == kind and captured_to_input(action.x, action.y, X11) == (961, 541)


def test_a_click_without_coordinate_and_without_a_move_is_refused_saying_why():
    reason = only_problem(parse(answer(call(action="type", text="a"), call(action="left_click")), **GRID))
    assert "block 2 of 2: left_click needs 'coordinate' (or a mouse_move right before it" in reason
    assert "wherever the pointer is, which is unknown here" in reason
