"""The newer families' parsers on answers in their real formats (each from its source's prompt or example), their
coordinate mapping against the official agents' own formulas, and refusals that name what is wrong."""

from __future__ import annotations

import json

import pytest

from conway.actions import ActionProblem
from conway.policies.families import get_family, get_resize_rule

SCREEN = (1920, 1080)


def problem_of(out) -> str:
    assert not out.ok and isinstance(out.actions[0], ActionProblem), out
    return out.actions[0].message


def call(**arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": arguments}) + "\n</tool_call>"


# --- EvoCUA ---------------------------------------------------------------------------------------------------


def test_evocua_s2_reads_its_response_format_on_the_999_grid():
    from conway.policies.families.evocua.parse import parse_s2

    # S2_SYSTEM_PROMPT: "1) Action: a short imperative … 2) A single <tool_call>…</tool_call> block"
    text = "Action: Open the Activities overview.\n" + call(action="left_click", coordinate=[18, 30])
    out = parse_s2(text, convention="relative999", sent_size=(1920, 1088), captured_size=SCREEN)
    (act,) = out.actions
    # _parse_response_s2: int(18 * 1920 / 999), int(30 * 1080 / 999) = (34, 32); Conway keeps the exact point
    assert act.type == "click" and (int(act.x), int(act.y)) == (34, 32)
    assert out.thought == "Open the Activities overview."


def test_evocua_s2_refuses_held_keys_naming_them():
    from conway.policies.families.evocua.parse import parse_s2

    text = "Action: Hold shift.\n" + call(action="key_down", keys=["shift"])
    assert "key_down" in problem_of(parse_s2(text, convention="relative999", sent_size=(1920, 1088),
                                             captured_size=SCREEN))


@pytest.mark.parametrize("answer, line", [
    ("Action: Click Save.\n" + call(action="left_click", coordinate=[1, 2]), "Click Save."),
    (call(action="left_click", coordinate=[1, 2]), "Performing click action"),
    (call(action="key", keys=["ctrl", "s"]), "Performing hotkey action"),
    (call(action="key", keys=["enter"]), "Performing press action"),
    (call(action="type", text="hi"), "Performing press action"),  # the agent types key by key
    (call(action="mouse_move", coordinate=[1, 2]), "Performing moveTo action"),
    (call(action="wait", time=2), "Performing wait action"),
    (call(action="terminate", status="failure"), "Performing fail action"),
    (call(action="hscroll", pixels=3), ""),  # the agent writes no code for it, so keeps no line
])
def test_evocua_s2_keeps_of_a_past_answer_what_its_agent_keeps(answer, line):
    from conway.policies.families.evocua.parse import s2_action_line

    assert s2_action_line(answer) == line


def test_evocua_s1_reads_its_step_format_and_keeps_the_first_action_line():
    from conway.policies.families.evocua.parse import parse_s1, s1_action

    text = ("# Step: 3\n## Thought:\nThe dialog is open.\n## Action:\nClick the OK button.\nIt closes the dialog.\n"
            "## Code:\n```python\npyautogui.click(x=966, y=546)\n```")
    out = parse_s1(text, convention="absolute", sent_size=(1932, 1092), captured_size=SCREEN)
    (act,) = out.actions
    assert act.type == "click" and (int(act.x), int(act.y)) == (960, 540)  # int(966/1932*1920), int(546/1092*1080)
    assert s1_action(text) == "Click the OK button."  # _parse_response_s1's pattern stops at the line's end
    assert s1_action("no sections") == ""
    wait = "## Action:\nWait.\n## Code:\n```code\ncomputer.wait()\n```"
    assert parse_s1(wait, convention="absolute", sent_size=(1932, 1092), captured_size=SCREEN).actions[0].type == "wait"


def test_evocua_s2_resize_is_its_process_image():
    # process_image(factor=32): smart_resize(1080, 1920, 32, max_pixels=16*16*4*12800) = (1088, 1920)
    assert get_resize_rule("evocua").target_size(SCREEN) == (1920, 1088)
    assert get_resize_rule("evocua").target_size((3840, 2160)) == (3840, 2176)  # under 13,107,200 px: rounded only


# --- GUI-Owl 1.5 ----------------------------------------------------------------------------------------------


def test_guiowl_reads_its_tool_calls_on_the_1000_grid():
    from conway.policies.families.guiowl.parse import action_line, parse

    text = "The Files window is open.\nAction: Double-click the report.\n" + \
        call(action="double_click", coordinate=[500, 250])
    (act,) = parse(text, convention="relative1000", sent_size=(1920, 1088), captured_size=SCREEN).actions
    assert act.type == "double_click" and (act.x, act.y) == (960, 270)  # 500/1000*1920, 250/1000*1080
    assert action_line(text) == "Double-click the report."  # Owl15Agent's history_conclusion
    assert action_line("Action: Save.\n" + call(action="wait")) == "Action: Save."  # no "\nAction:" to split on


def test_guiowl_type_flags_are_its_agents():
    from conway.policies.families.guiowl.parse import parse

    kw = dict(convention="relative1000", sent_size=(1920, 1088), captured_size=SCREEN)
    (act,) = parse("Action: Search.\n" + call(action="type", text="report", enter=1), **kw).actions
    assert act.type == "type" and act.text == "report\n"
    assert "clear=1" in problem_of(parse("Action: Replace.\n" + call(action="type", text="x", clear=1), **kw))
    assert "clear and enter" in problem_of(parse(call(action="type", text="x", enter=5), **kw))


def test_guiowl_resize_is_its_2645_token_cap():
    # update_image_size_(max_tokens=2645, patch_size=16): factor 32, at most 2645 * 1024 px
    rule = get_resize_rule("guiowl")
    assert rule.target_size(SCREEN) == (1920, 1088)
    w, h = rule.target_size((3840, 2160))
    assert w % 32 == 0 and h % 32 == 0 and w * h <= 2645 * 1024


# --- Jedi -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    call(action="left_click", coordinate=[1012, 503]),
    "Action: Click the Save button.\n" + call(action="left_click", coordinate=[1012, 503]),
    '\u2697{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1012, 503]}}\u2697',
])
def test_jedi_reads_the_coordinate_of_its_call(text):
    from conway.policies.families.jedi.parse import parse_point

    out = parse_point(text, convention="absolute", sent_size=(1932, 1092), captured_size=SCREEN)
    (act,) = out.actions
    # parse_jedi_response: int(1012 * 1920 / 1932), int(503 * 1080 / 1092) = (1005, 497)
    assert act.type == "click" and (int(act.x), int(act.y)) == (1005, 497)


@pytest.mark.parametrize("text, needle", [
    ("I would click the button.", "no <tool_call>"),
    ("<tool_call>\n{not json}\n</tool_call>", "not JSON"),
    (call(action="left_click"), "no [x, y] coordinate"),
    (call(action="left_click", coordinate=[1, True]), "no [x, y] coordinate"),
])
def test_jedi_refuses_what_it_cannot_read_naming_it(text, needle):
    from conway.policies.families.jedi.parse import parse_point

    assert needle in problem_of(parse_point(text, convention="absolute", sent_size=(1932, 1092),
                                            captured_size=SCREEN))


def test_jedi_resize_is_its_agents_smart_resize():
    assert get_resize_rule("jedi").target_size(SCREEN) == (1932, 1092)  # smart_resize(max_pixels=2700*28*28)


# --- Holo2 ----------------------------------------------------------------------------------------------------


def test_holo2_reads_its_click_coordinates():
    from conway.policies.families.holo2.parse import parse_click

    # the notebook's own example answer: "(947, 338)" on its calendar image
    kw = dict(convention="relative1000", sent_size=(1920, 1088), captured_size=SCREEN)
    (act,) = parse_click('{"x": 947, "y": 338}', **kw).actions
    assert act.type == "click" and (int(act.x), int(act.y)) == (1818, 365)  # 947/1000*1920, 338/1000*1080
    out = parse_click('<think>The calendar shows August.</think>\n{"x": 947, "y": 338}', **kw)
    assert out.ok and out.reasoning == "The calendar shows August."
    assert "not an integer" in problem_of(parse_click('{"x": 9.5, "y": 3}', **kw))
    assert "unknown key" in problem_of(parse_click('{"x": 9, "y": 3, "action": "click"}', **kw))
    assert "not one JSON object" in problem_of(parse_click("click at 9, 3", **kw))


# --- Kimi -----------------------------------------------------------------------------------------------------


def test_kimi_reads_its_non_thinking_format_at_fractions_of_the_screen():
    from conway.policies.families.kimi.parse import action, parse, thought

    text = ("## Thought\nThe terminal is open.\n## Action:\nType the command.\n## Code:\n```python\n"
            "pyautogui.click(x=0.5, y=0.3)\npyautogui.write(message='ls')\n```")
    out = parse(text, convention="relative", sent_size=SCREEN, captured_size=SCREEN)
    click, typed = out.actions
    assert (click.type, click.x, click.y) == ("click", 960, 324) and typed.text == "ls"
    assert thought(text) == "The terminal is open." and action(text) == "Type the command."
    assert action("## Thought\nonly a thought") is None  # the agent then writes "None" in its history
    pixels = "## Action:\nx\n## Code:\n```python\npyautogui.click(x=960, y=540)\n```"  # the agent's pixel fallback
    assert "x=960 outside 0..1" in problem_of(parse(pixels, convention="relative", sent_size=SCREEN,
                                                    captured_size=SCREEN))


def test_every_new_family_declares_its_runners_sampling():
    assert dict(get_family("evocua").sampling) == {"top_p": 0.9}
    owl = get_family("guiowl")  # the runner's default engine (DashScope's SDK), and its OpenAI engine
    assert dict(owl.sampling) == {"top_p": 0.9, "top_k": 1, "presence_penalty": 0.0, "repetition_penalty": 1.0,
                                  "seed": 3407, "vl_high_resolution_images": True}
    assert dict(owl.default("sampling", "openai")) == {"top_p": 0.9, "repetition_penalty": 1.05, "top_k": 1}
    assert (owl.default("max_tokens"), owl.default("max_tokens", "openai")) == (2048, 4096)
    assert (owl.default("image_encoding"), owl.default("image_encoding", "openai")) == ("png", "jpeg75")
    assert dict(get_family("jedi").sampling) == {"top_p": 0.9}
    assert dict(get_family("kimi").sampling) == {"top_p": 0.95}
    assert get_family("holo2").sampling == ()
    assert get_family("uivenus").sampling == () and not get_family("uivenus").sends_max_tokens  # temperature alone
    assert dict(get_family("maiui").sampling) == {"top_p": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0,
                                                  "repetition_penalty": 1.0, "top_k": -1, "seed": 42}


# --- MAI-UI ------------------------------------------------------------------------------------------------------


def mobile(thinking: str = "The next step.", **arguments) -> str:
    return (f"<thinking>\n{thinking}\n</thinking>\n<tool_call>\n" +
            json.dumps({"name": "mobile_use", "arguments": arguments}) + "\n</tool_call>")


def _maiui(text: str):
    from conway.geometry import Convention
    from conway.policies.families.maiui.parse import parse
    return parse(text, convention=Convention.RELATIVE999, sent_size=SCREEN, captured_size=SCREEN)


@pytest.mark.parametrize("arguments, expected", [
    ({"action": "click", "coordinate": [500, 300]}, {"type": "click", "x": 960.961, "y": 324.324}),
    ({"action": "click", "coordinate": [400, 200, 600, 400]}, {"type": "click", "x": 960.961, "y": 324.324}),
    ({"action": "double_click", "coordinate": [500, 300]}, {"type": "double_click", "x": 960.961, "y": 324.324}),
    ({"action": "type", "text": "final"}, {"type": "type", "text": "final"}),
    ({"action": "drag", "start_coordinate": [0, 0], "end_coordinate": [999, 999]},
     {"type": "drag", "x": 0, "y": 0, "to_x": 1919, "to_y": 1079}),  # the grid's end: the last pixel
    ({"action": "swipe", "direction": "up"}, {"type": "scroll", "dy": -5, "dx": 0}),
    ({"action": "swipe", "direction": "right", "coordinate": [500, 300]},
     {"type": "scroll", "dy": 0, "dx": -5, "x": 960.961, "y": 324.324}),
    ({"action": "system_button", "button": "enter"}, {"type": "key", "key": "Enter"}),
    ({"action": "wait"}, {"type": "wait"}),
    ({"action": "terminate", "status": "fail"}, {"type": "finish", "status": "FAIL", "message": ""}),
    ({"action": "answer", "text": "42"}, {"type": "finish", "status": "DONE", "message": "42"}),
])
def test_maiui_maps_its_mobile_use_actions_on_the_999_grid(arguments, expected):
    out = _maiui(mobile(**arguments))
    assert out.ok and out.thought == "The next step.", out
    got = out.actions[0].model_dump(exclude_none=True)
    assert {k: got[k] for k in expected} == expected


@pytest.mark.parametrize("arguments, needle", [
    ({"action": "long_press", "coordinate": [1, 2]}, "long_press (press and hold"),
    ({"action": "open", "text": "Files"}, "open (launching a phone app"),
    ({"action": "system_button", "button": "back"}, "a phone's Back key"),
    ({"action": "system_button", "button": "home"}, "a phone's Home key"),
    ({"action": "ask_user", "text": "Which file?"}, "no turn that waits for a reply"),
    ({"action": "click", "coordinate": [1, 2, 3]}, "coordinate must be [x, y] or a box"),
    ({"action": "swipe", "direction": "sideways"}, "direction must be up, down, left or right"),
    ({"action": "fly"}, "is not one of MAI-UI's mobile_use actions"),
])
def test_maiui_refuses_what_a_desktop_cannot_do_saying_why(arguments, needle):
    assert needle in problem_of(_maiui(mobile(**arguments)))


def test_maiui_refuses_an_mcp_call_and_an_answer_without_its_thinking():
    mcp = '<thinking>Route.</thinking><tool_call>{"name": "amap_route", "arguments": {"to": "x"}}</tool_call>'
    assert "'amap_route' is an MCP tool" in problem_of(_maiui(mcp))
    assert "expected <thinking>" in problem_of(_maiui('<tool_call>{"name": "mobile_use", "arguments": {}}</tool_call>'))


def test_maiui_replays_an_answer_as_its_agent_rewrites_it():
    """mem2response: compact JSON, `coordinate` back through int(x / 999 * 999) (63 -> 62), drag points fractions."""
    from conway.policies.families.maiui.parse import replayed, with_thinking

    assert replayed(mobile("Open it.", action="click", coordinate=[504, 63])) == (
        '<thinking>\nOpen it.\n</thinking>\n<tool_call>\n{"name":"mobile_use","arguments":{"action":"click",'
        '"coordinate":[503,62]}}\n</tool_call>')
    dragged = replayed(mobile(action="drag", start_coordinate=[999, 0], end_coordinate=[0, 999]))
    assert '"start_coordinate":[1.0,0.0],"end_coordinate":[0.0,1.0]' in dragged
    assert replayed("not an answer") == "not an answer"
    bare = with_thinking("Plan.\n</think>\n<tool_call>{}</tool_call>", None)[0]
    assert bare == "<thinking>Plan.\n</thinking>\n<tool_call>{}</tool_call>"  # as parse_tagged_text rewrites it
    assert with_thinking("<tool_call>{}</tool_call>", "Plan.") == ("<thinking>\nPlan.\n</thinking>\n"
                                                                   "<tool_call>{}</tool_call>", None)


# --- UI-Venus 1.5 -------------------------------------------------------------------------------------------------


def _venus(action: str, think: str = "The next step."):
    from conway.geometry import Convention
    from conway.policies.families.uivenus.parse import parse
    text = f"<think>{think}</think>\n<action>{action}</action>\n<conclusion>Done.</conclusion>"
    return parse(text, convention=Convention.RELATIVE1000, sent_size=SCREEN, captured_size=SCREEN)


@pytest.mark.parametrize("action, expected", [
    ("Click(box=(500,300))", {"type": "click", "x": 960, "y": 324}),
    ("Drag(start=(100,100), end=(500,500))", {"type": "drag", "x": 192, "y": 108, "to_x": 960, "to_y": 540}),
    ("Scroll(start=(500,700), end=(500,300))", {"type": "scroll", "dy": -5, "dx": 0, "x": 960, "y": 756}),
    ("Scroll(start=(800,500), end=(200,500))", {"type": "scroll", "dy": 0, "dx": 5, "x": 1536, "y": 540}),
    ("Type(content='final')", {"type": "type", "text": "final"}),
    ("PressEnter()", {"type": "key", "key": "Enter"}),
    ("Wait()", {"type": "wait"}),
    ("Finished(content='saved')", {"type": "finish", "status": "DONE", "message": "saved"}),
    ("CallUser(content='Which file?')", {"type": "finish", "status": "FAIL", "message": "Which file?"}),
])
def test_uivenus_maps_its_functions_on_the_1000_grid(action, expected):
    out = _venus(action)
    assert out.ok and out.thought == "The next step.", out
    got = out.actions[0].model_dump(exclude_none=True)
    assert {k: got[k] for k in expected} == expected


@pytest.mark.parametrize("action, needle", [
    ("Launch(app='Files')", "Launch (starting a phone app"),
    ("LongPress(box=(1,2))", "LongPress (press and hold"),
    ("PressBack()", "a phone's Back key"),
    ("PressHome()", "a phone's Home key"),
    ("PressRecent()", "recent apps"),
    ("Click(box=(1.5,2))", "a point of whole numbers"),
    ("Click(x=1)", "Click needs box=(x,y)"),
    ("Fly()", "is not one of UI-Venus's functions"),
    ("no call here", "expected <think>"),
])
def test_uivenus_refuses_what_a_desktop_cannot_do_saying_why(action, needle):
    assert needle in problem_of(_venus(action))


def test_uivenus_keeps_of_an_answer_what_its_framework_keeps():
    from conway.policies.families.uivenus.parse import step_line, with_thinking

    answer = "<think> The list. </think>\n<action>Scroll(start=(500,700), end=(500,300))</action>\n<conclusion>x</conclusion>"
    assert step_line(answer) == "<think>The list.</think><action>Scroll(start=(500,700), end=(500,300))</action>"
    assert step_line("<action>Wait()</action><conclusion>x</conclusion>") == "Wait()"  # no thinking: the action alone
    assert with_thinking("<action>Wait()</action>", "Loading.") == ("<think>Loading.</think>\n<action>Wait()</action>",
                                                                     None)
