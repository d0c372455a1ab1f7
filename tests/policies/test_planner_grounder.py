"""`policy.planner`: a planner model and a grounding preset deciding together, as OSWorld's Jedi agent runs them.

Two model servers, both scripted fakes of an OpenAI-compatible server (the point is the requests Conway sends and
how it joins the answers, not the servers): the planner (`gpt-4o`) answers the Jedi agent's planner turns, the
executor (`jedi-7b`) its grounding answers, over the 16-step episode the golden was recorded on from the unmodified
agent (`scripts/build/goldens_new_families.py`, `tests/data/goldens_new/jedi-7b.json`). Every planner request
equals the agent's whole (its screenshots the captured PNGs, `detail: high`); every executor request its
messages whole (the captured screenshot, the resized size stated in its prompt); the pointer actions land where
the agent puts them; each decision journals its two calls and the costs are counted
per model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer

from conway.config import load_config
from conway.errors import UserError
from conway.experience.costs import costs_of
from conway.policies.factory import build_model_policy
from conway.policies.planned import grounded_calls, planner_codes, rewritten
from conway.prompt.layout import split_parts
from conway.protocols import ContextPart, DecisionContext, Observation
from conway.store.home import resolve_home
from scripts.build.golden_episode import first_difference
from scripts.build.goldens_new_families import (
    INSTRUCTION,
    JEDI_GROUNDER,
    JEDI_PLANNER,
    SCREEN,
    STEPS,
    request_record,
    screenshot,
)

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "goldens_new" / "jedi-7b.json"


def _context(step: int) -> DecisionContext:
    obs = Observation(png=screenshot(step), captured_size=SCREEN, source="synthetic", content_hash=f"h{step}",
                      change_key=f"k{step}")
    return DecisionContext(parts=[ContextPart("goals.md", INSTRUCTION)], observation=obs, step=step,
                           action_types=["click", "double_click", "type", "key", "hotkey", "wait", "finish"])


def _record(body: dict, slot: str, instruction: str) -> dict:
    return json.loads(json.dumps(request_record(body)).replace(json.dumps(slot)[1:-1], json.dumps(instruction)[1:-1]))


def _run_episode():
    with ScriptedFakeServer(models=["gpt-4o"], replies=[Reply.text(a) for a in JEDI_PLANNER]) as planner, \
            ScriptedFakeServer(models=["jedi-7b"], replies=[Reply.text(a) for a in JEDI_GROUNDER]) as executor:
        config = load_config(None, ["policy=jedi-7b", f"policy.endpoint={executor.base_url}",
                                    f"policy.planner.endpoint={planner.base_url}"])
        decisions, slots = [], []
        with build_model_policy(config, resolve_home(None)) as policy:
            for step in range(1, STEPS + 1):
                ctx = _context(step)
                slots.append(split_parts(ctx, "")[0])
                decisions.append(policy.decide(ctx))
        return decisions, slots, planner.chat_requests, executor.chat_requests


@pytest.fixture(scope="module")
def episode():
    return _run_episode()


def test_every_planner_request_is_the_jedi_agents(episode):
    decisions, slots, planner_requests, _ = episode
    golden = [r for r in json.loads(GOLDEN.read_text(encoding="utf-8"))["requests"] if r["call"] == "planner"]
    assert len(planner_requests) == len(golden) == STEPS
    for step, (body, slot, want) in enumerate(zip(planner_requests, slots, golden), start=1):
        got = _record(body, slot, INSTRUCTION)
        assert first_difference(got["messages"], want["messages"]) is None, \
            f"planner request {step}: {first_difference(got['messages'], want['messages'])}"
        # max_tokens and temperature are the agent's; its top_p is not sent yet (Conway's requests carry no top_p)
        assert {k: v for k, v in got["sampling"].items() if k in want["sampling"]} == \
            {k: v for k, v in want["sampling"].items() if k != "top_p"}


def test_every_executor_request_is_the_jedi_agents(episode):
    _, _, _, executor_requests = episode
    golden = [r for r in json.loads(GOLDEN.read_text(encoding="utf-8"))["requests"] if r["call"] == "grounder"]
    assert len(executor_requests) == len(golden) == 8  # the steps whose planned action points somewhere
    for n, (body, want) in enumerate(zip(executor_requests, golden), start=1):
        got = request_record(body)
        assert first_difference(got["messages"], want["messages"]) is None, (n, first_difference(got["messages"],
                                                                                                 want["messages"]))
        sizes = [p["image_url"]["url"]["size"] for m in got["messages"] if isinstance(m["content"], list)
                 for p in m["content"] if p.get("type") == "image_url"]
        assert sizes == [[1920, 1080]]  # as captured, as the agent sends it (its prompt states 1932x1092)
        assert got["sampling"]["max_tokens"] == 1500 and got["sampling"]["temperature"] == 0.5


def test_the_steps_act_where_the_agent_acts_and_journal_both_calls(episode):
    decisions, _, _, _ = episode
    first = decisions[0]
    (click,) = first.actions
    # the grounder's (121, 344) of 1932x1092, as parse_jedi_response scales it: int(121*1920/1932), int(344*1080/1092)
    assert (click.type, click.x, click.y) == ("click", 120, 340)
    assert first.meta["codes"] == ["# The Files icon in the dock\npyautogui.click(120, 340)"]
    assert [c["role"] for c in first.meta["calls"]] == ["planner", "executor"]
    assert first.meta["calls"][1]["description"] == "The Files icon in the dock"
    assert [a.type for a in decisions[1].actions] == ["type"] and len(decisions[1].meta["calls"]) == 1
    assert [a.type for a in decisions[4].actions] == ["wait"]  # ```WAIT```
    record = first.record()
    assert {c["model_id"] for c in record["calls"]} == {"gpt-4o", "jedi-7b"}
    events = [{"kind": "decision", "session": "s", "t": float(n), "payload": d.record()}
              for n, d in enumerate(decisions)]
    by_model = costs_of(events)["s"].record()["by_model"]
    assert by_model["gpt-4o"]["decisions"] == 16 and by_model["jedi-7b"]["decisions"] == 8
    assert by_model["gpt-4o"]["prompt_tokens"] == 160 and by_model["jedi-7b"]["generated_tokens"] == 40


def test_planner_answers_are_read_as_the_jedi_agent_reads_them():
    assert planner_codes("DONE") == ["DONE"]
    assert planner_codes("Thought:\nx\n```python\n# Save\npyautogui.hotkey('ctrl', 's')\nDONE\n```") == \
        ["# Save\npyautogui.hotkey('ctrl', 's')", "DONE"]
    assert planner_codes("no code at all") == []
    code = "# The OK button\npyautogui.click(x=100, y=200, duration=1)"
    ((comment, call, fn),) = grounded_calls(code)
    assert (comment, fn) == ("The OK button", "click")
    assert rewritten(call, 5, 6) == "pyautogui.click(5, 6,  duration=1)"  # the agent's spacing, kept
    assert grounded_calls("pyautogui.click(x=1, y=2)") == []  # no comment: nothing to ground


def test_a_planner_needs_a_grounding_preset():
    config = load_config(None, ["policy=qwen3-vl", "policy.endpoint=http://127.0.0.1:9/v1",
                                "policy.planner.endpoint=http://127.0.0.1:9/v1"])
    with pytest.raises(UserError, match="grounding preset"):
        build_model_policy(config, resolve_home(None))
