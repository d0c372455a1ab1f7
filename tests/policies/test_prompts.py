"""Trained prompts are kept exactly as their sources wrote them, and the adapters send them unchanged."""

from __future__ import annotations

import hashlib
import io
import json
import re

import pytest
from helpers.prompt_frames import FAMILIES_FOLDER, prompt_text
from PIL import Image

from conway.geometry import Convention
from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.policies.base import ModelPolicy
from conway.policies.families.opencua.adapter import LEVELS, OpenCUAAdapter
from conway.policies.families.qwen3vl.adapter import Qwen3VLAdapter
from conway.policies.families.uitars.adapter import UITarsAdapter
from conway.policies.settings import PolicySettings
from conway.protocols import ContextPart, DecisionContext, Observation

_ROW = re.compile(r"^\| `([^`]+)` \|.*\| ([0-9a-f]{64}) \|$", re.M)


@pytest.mark.parametrize("family", sorted(p.name for p in FAMILIES_FOLDER.iterdir()
                                           if (p / "prompts" / "SOURCES.md").exists()))
def test_every_stored_prompt_is_named_in_its_sources_with_its_sha256(family):
    folder = FAMILIES_FOLDER / family / "prompts"
    sources = (folder / "SOURCES.md").read_text(encoding="utf-8")
    listed = dict(_ROW.findall(sources))
    stored = {p.name for p in folder.iterdir() if p.name != "SOURCES.md"}
    assert set(listed) == stored  # no file without a source, no source without its file
    for name, digest in listed.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, f"{family}/{name} was edited"
    # a repository's commit and licence, or (a family with no agent code) the documentation page's digest
    assert ("commit" in sources and "Apache-2.0" in sources) or (
        "documented, not code-checked" in sources and re.search(r"sha256 [0-9a-f]{64}", sources))


def test_the_opencua_prompts_are_the_training_datas():
    for level in LEVELS:
        text = prompt_text(f"opencua/system_{level}.txt")
        assert text.startswith("You are a GUI agent. You are given a task and a screenshot of the screen. You need "
                               "to perform a series of pyautogui actions to complete the task.\n\nFor each step")
        assert text.endswith('"enum": ["success", "fail"], "description": "The status of the task"}}, '
                             '"required": ["status"]}}')  # the training version ("fail"), not OSWorld's test one
    assert "Observation:" in prompt_text("opencua/system_l3.txt")
    assert "Thought:" not in prompt_text("opencua/system_l1.txt")


def test_opencua_offers_every_type_its_parser_reads():
    from conway.policies.families.opencua.adapter import FILES, SUPPORTED_TYPES

    assert list(json.loads(FILES.text("action_space.json"))) == list(SUPPORTED_TYPES)


class _Recording(Backend):
    kind = "stub"
    model_id = "stub-model"

    def __init__(self, text: str):
        self.text, self.messages = text, []

    def structured_support(self):
        return []

    def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
        self.messages.append(messages)
        return ChatResult(text=self.text, reasoning=None, finish_reason="stop", model=self.model_id, usage={})

    def close(self):
        pass


def _context() -> DecisionContext:
    buf = io.BytesIO()
    Image.new("RGB", (1280, 800), (9, 9, 9)).save(buf, format="PNG")
    obs = Observation(png=buf.getvalue(), captured_size=(1280, 800), source="synthetic", content_hash="h",
                      change_key="k")
    parts = [ContextPart("constitution.md", "I am the owner's agent."), ContextPart("goals.md", "Open Display.")]
    return DecisionContext(parts=parts, observation=obs, step=1, action_types=["click", "wait", "finish"])


TASK = "Open Display."
"""What of `_context()` fills a family's instruction slot at the defaults: the task alone, as the agents send it."""
FRAMED = '<file name="constitution.md">\nI am the owner\'s agent.\n</file>\n\n<file name="goals.md">\nOpen Display.\n</file>'
"""The same under the deviations `constitution` and `goals` (`conway run`'s)."""


@pytest.mark.parametrize("level", LEVELS)
def test_opencua_sends_its_stored_system_prompt_and_instruction_template_unchanged(level):
    backend = _Recording("## Action:\nwait\n\n## Code:\n```code\ncomputer.wait()\n```")
    policy = ModelPolicy(OpenCUAAdapter(level), backend, PolicySettings(convention=Convention.ABSOLUTE,
                                                                         resize_rule="opencua"))
    assert policy.decide(_context()).actions[0].type == "wait"
    system, user = backend.messages[0]
    assert system == {"role": "system", "content": prompt_text(f"opencua/system_{level}.txt")}  # exactly, alone
    shot, instruction = user["content"]
    assert shot["type"] == "image_url"  # the screenshot first, then the instruction, as the agent sends them
    space = "\n".join(f"- {line}" for line in OpenCUAAdapter().action_space(_context()).split("\n- "))
    assert instruction["text"] == prompt_text("opencua/instruction.txt").replace("{instruction}", TASK)
    backend = _Recording("## Action:\nwait\n\n## Code:\n```code\ncomputer.wait()\n```")
    policy = ModelPolicy(OpenCUAAdapter(level), backend, PolicySettings(
        convention=Convention.ABSOLUTE, resize_rule="opencua", deviations=("constitution", "goals", "action_list")))
    policy.decide(_context())
    instruction = backend.messages[0][1]["content"][1]
    assert instruction["text"] == prompt_text("opencua/instruction.txt").replace(
        "{instruction}", FRAMED.replace("\n\n<file name=\"goals.md\">", f"\n\n## action space\n{space[2:]}"
                                        "\n\n<file name=\"goals.md\">"))
    assert instruction["text"].endswith("Please generate the next move according to the screenshot, task "
                                        "instruction and previous steps (if provided).\n")


def test_uitars_sends_osworlds_layout_with_conways_task_as_its_user_instruction():
    backend = _Recording("Thought: nothing yet\nAction: wait()")
    policy = ModelPolicy(UITarsAdapter(), backend, PolicySettings(convention=Convention.ABSOLUTE, resize_rule="uitars"))
    assert policy.decide(_context()).actions[0].type == "wait"
    system, prompt, shot = backend.messages[0]
    assert system == {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]}
    template = prompt_text("uitars/user_thought.txt")
    assert template.endswith("## User Instruction\n{instruction}\n")
    expected = template.replace("{action_space}", prompt_text("uitars/action_space_normal.txt")).replace(
        "{language}", "Chinese").replace("{instruction}", TASK)  # the runner's language
    assert prompt == {"role": "user", "content": [{"type": "text", "text": expected}]}
    assert [p["type"] for p in shot["content"]] == ["image_url"]  # the current screenshot alone, as trained
    assert expected.startswith("You are a GUI agent. You are given a task and your action history, with "
                               "screenshots. You need to perform the next action to complete the task. \n\n"
                               "## Output Format\n```\nThought: ...\nAction: ...\n```")
    assert "finished(content='xxx')" in expected and "Use Chinese in `Thought` part." in expected


def test_qwen3vl_sends_osworlds_system_prompt_with_its_agents_tool_and_nothing_else():
    backend = _Recording('Action: wait\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait"}}'
                         '\n</tool_call>')
    policy = ModelPolicy(Qwen3VLAdapter(), backend, PolicySettings(convention=Convention.RELATIVE999,
                                                                   resize_rule="qwen3-vl"))
    assert policy.decide(_context()).actions[0].type == "wait"
    system, user = backend.messages[0]
    tool = json.loads(prompt_text("qwen3vl/computer_use.json"))
    fn = tool["function"]
    fn["description"] = fn["description"].replace("{display_width_px}x{display_height_px}", "1000x1000")
    fn["parameters"]["properties"]["action"]["enum"] = ["left_click", "right_click", "middle_click", "wait",
                                                        "terminate"]  # what click, wait, finish carry out
    expected = prompt_text("qwen3vl/system.txt").replace("{tools}", json.dumps(tool))
    assert system == {"role": "system", "content": [{"type": "text", "text": expected}]}
    shot, instruction = user["content"]
    assert shot["type"] == "image_url"
    assert instruction["text"] == prompt_text("qwen3vl/instruction.txt").replace("{instruction}", TASK).replace(
        "{previous_actions_str}", "None")


def test_an_unknown_opencua_level_is_refused_naming_the_levels():
    with pytest.raises(ValueError, match="l1, l2, l3"):
        OpenCUAAdapter("l4")


def test_the_adapter_carries_the_statement_bound_to_the_parser():
    block = "## Code:\n```python\npyautogui.press('a')\npyautogui.press('b')\npyautogui.press('c')\n```"
    setup = dict(convention=Convention.ABSOLUTE, sent_size=(1288, 812), captured_size=(1280, 800))
    assert OpenCUAAdapter().parse(block, **setup).ok
    refused = OpenCUAAdapter(max_statements=2).parse(block, **setup)
    assert "3 statements in one code block (limit 2)" in refused.problems[0].message
    with pytest.raises(ValueError, match="at least 1"):
        OpenCUAAdapter(max_statements=0)
