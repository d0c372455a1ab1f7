"""The pieces of the trained conversations checked on their own: how an older step is kept, past screenshots
resent as the same bytes, hidden reasoning never replayed, and the UI-TARS parts the `ui-tars` package implements
(box tokens, smart_resize, its action parser) compared with the package itself. The whole requests are compared
with the official agents' in `test_request_goldens.py`.
"""

from __future__ import annotations

import json

import pytest
from helpers.episode import ANSWERS, GROUNDING_ANSWERS, SIZE, Recording, observation, parts

from conway.geometry import Convention
from conway.history import TurnHistory
from conway.policies.base import ModelPolicy
from conway.policies.conversation import add_box_tokens
from conway.policies.families import get_family, get_resize_rule
from conway.policies.settings import PolicySettings
from conway.prompt.layout import split_parts
from conway.protocols import DecisionContext

SETTINGS = {"uitars": (Convention.ABSOLUTE, "uitars"), "opencua": (Convention.ABSOLUTE, "opencua"),
            "qwen3vl": (Convention.RELATIVE999, "qwen3-vl"), "qwen25vl": (Convention.ABSOLUTE, "qwen2.5-vl"),
            "gta1": (Convention.ABSOLUTE, "gta1"), "holo": (Convention.ABSOLUTE, "holo1.5")}


def conway_episode(family: str, steps: int = 6) -> tuple[list[list], list[str], ModelPolicy]:
    """Conway's messages for the episode, and the task text each step put in the family's instruction slot."""
    fam = get_family(family)
    adapter = fam.adapter()
    backend = Recording({**ANSWERS, **GROUNDING_ANSWERS}[family])
    convention, rule = SETTINGS[family]
    policy = ModelPolicy(adapter, backend, PolicySettings(convention=convention, resize_rule=rule,
                                                          structured_output="none"))
    history = TurnHistory(max_images=fam.conversation.history_images - 1, max_turns=12)
    tasks = []
    for step in range(1, steps + 1):
        ctx = DecisionContext(parts=[p for p in parts() if p.text], observation=observation(step), step=step,
                              action_types=["click", "double_click", "right_click", "move", "drag", "type", "key",
                                            "hotkey", "scroll", "wait", "finish"], history=history)
        tasks.append(split_parts(ctx, adapter.action_space(ctx))[0])
        decision = policy.decide(ctx)
        assert decision.actions and all(not hasattr(a, "message") for a in decision.actions), decision.actions
        history.commit()  # what the loop's ContextBuilder.note does once the actions were handed on
    return backend.sent, tasks, policy


def test_qwen25vl_older_steps_are_the_line_its_agent_keeps():
    from conway.policies.conversation import qwen25_action_line

    assert qwen25_action_line("Thought: x\nNow I open it.\nAction: open") == "Now I open it."  # the first lead line
    call = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "%s"%s}}\n</tool_call>'
    assert qwen25_action_line(call % ("key", ', "keys": ["enter"]')) == "Performing press action"
    assert qwen25_action_line(call % ("key", ', "keys": ["ctrl", "c"]')) == "Performing hotkey action"
    assert qwen25_action_line(call % ("left_click", "")) == "Performing click action"
    assert qwen25_action_line(call % ("wait", "")) == "Performing wait action"


def test_past_screenshots_are_the_bytes_sent_at_their_step():
    sent, _, _ = conway_episode("uitars", steps=3)
    first = [p["image_url"]["url"] for p in sent[0][-1]["content"] if p["type"] == "image_url"]
    later = [p["image_url"]["url"] for m in sent[2] if m["role"] == "user" and isinstance(m["content"], list)
             for p in m["content"] if p["type"] == "image_url"]
    assert later[0] == first[0]  # the same resize and JPEG bytes, not a re-encoding
    assert len(set(later)) == 3


def test_reasoning_is_never_replayed():
    from conway.history import strip_reasoning

    assert strip_reasoning("<think>the plan</think>\nThought: go\nAction: wait()") == "Thought: go\nAction: wait()"
    assert strip_reasoning("the plan</think>Action: wait()") == "Action: wait()"
    assert strip_reasoning("Action: wait()<think>cut off inside") == "Action: wait()"


# --- the ui-tars package (its PyPI release: the official implementation of these pieces) ---------------


def test_box_tokens_are_added_as_the_ui_tars_package_adds_them():
    action_parser = pytest.importorskip("ui_tars.action_parser")
    extra = ["Thought: a\nAction: click(start_box='(1, 2)')", "Action: click(start_box='(5,6)')\n\nAction: wait()",
             "no action here"]
    for answer in ANSWERS["uitars"] + extra:
        assert add_box_tokens(answer) == action_parser.add_box_token(answer), answer


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080), (2560, 1440), (3840, 2160), (800, 600), (333, 2000)])
def test_the_uitars_resize_rule_is_the_packages_smart_resize(size):
    action_parser = pytest.importorskip("ui_tars.action_parser")
    h, w = action_parser.smart_resize(size[1], size[0], factor=28, min_pixels=100 * 28 * 28,
                                      max_pixels=16384 * 28 * 28)
    assert get_resize_rule("uitars").target_size(size) == (w, h)


def test_uitars_answers_land_where_the_packages_parser_puts_them():
    action_parser = pytest.importorskip("ui_tars.action_parser")
    from conway.policies.families.uitars import parse as parse_uitars

    sent = get_resize_rule("uitars").target_size(SIZE)
    for answer in ANSWERS["uitars"]:
        ours = parse_uitars.parse(answer, convention=Convention.ABSOLUTE, sent_size=sent, captured_size=SIZE)
        theirs = action_parser.parse_action_to_structure_output(answer, 1000, sent[1], sent[0], "qwen25vl")
        assert ours.ok and len(theirs) == 1  # (Conway splits `type(content='report\\n')` into type + enter, as the
        assert ours.thought == theirs[0]["thought"]  # package's pyautogui code then does: typewrite, press enter)
        box = theirs[0]["action_inputs"].get("start_box")
        if box is None:
            continue
        x, y = json.loads(box)[:2]  # fractions of the image, by the package
        action = ours.actions[0]
        assert abs(action.x - x * SIZE[0]) <= 1 and abs(action.y - y * SIZE[1]) <= 1, (answer, action, box)
