"""`policy.planner.protocol=gta1`: GTA1's planner protocol (proposals, retries, a judge) with the `gta1` grounding
preset as the executor, as OSWorld's GTA1 agent runs them.

Two model servers, both scripted fakes of an OpenAI-compatible server (the point is the requests Conway sends and
how it joins the answers, not the servers): the planner (`o3`) answers the planner's and the judge's turns, the
executor (`gta1`) the grounding answers, over the 7 steps the golden was recorded on from the unmodified agent
(`scripts/build/goldens_gta1_planner.py`, `tests/data/goldens_new/gta1-planner.json`). Every request is compared
whole with the golden's (messages and sampling fields), the first difference named; what still differs is listed
in `KNOWN` with its reason and asserted to be exactly that.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer, completion

from conway.config import load_config
from conway.errors import UserError
from conway.experience.costs import costs_of
from conway.policies import gta1_aci
from conway.policies.factory import build_model_policy
from conway.policies.planned_gta1 import judge_index
from conway.prompt.layout import split_parts
from conway.protocols import ContextPart, DecisionContext, Observation
from conway.store.home import resolve_home
from scripts.build.golden_episode import (
    INSTRUCTION,
    SCREEN,
    channels_put_back,
    first_difference,
    request_record,
    screenshot,
)
from scripts.build.goldens_gta1_planner import STEPS_GTA1, judge_answer

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "goldens_new" / "gta1-planner.json"

KNOWN: dict[str, str] = {
    "grounding BGR": "the agent encodes the grounding screenshot with cv2 from an RGB array, so red and blue are "
                     "swapped; Conway sends RGB (compared with the channels put back, as test_request_goldens does)",
}


def _choices(texts: list[str]) -> Reply:
    body = completion(texts[0], model="o3")
    body["choices"] = [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                       for i, t in enumerate(texts)]
    return Reply(body=body)


def _context(step: int) -> DecisionContext:
    obs = Observation(png=screenshot(step), captured_size=SCREEN, source="synthetic", content_hash=f"h{step}",
                      change_key=f"k{step}")
    return DecisionContext(parts=[ContextPart("goals.md", INSTRUCTION)], observation=obs, step=step,
                           action_types=["click", "double_click", "type", "key", "hotkey", "scroll", "drag", "wait",
                                         "finish"])


def _run_episode():
    planner_replies = []
    for step in STEPS_GTA1:
        planner_replies += [_choices(r) for r in step["planner"]] + [Reply.text(judge_answer(step["judge"]))]
    grounding = [Reply.text(g) for step in STEPS_GTA1 for g in step["grounding"]]
    with ScriptedFakeServer(models=["o3"], replies=planner_replies) as planner, \
            ScriptedFakeServer(models=["gta1"], replies=grounding) as executor:
        config = load_config(None, ["policy=gta1", f"policy.endpoint={executor.base_url}",
                                    f"policy.planner.endpoint={planner.base_url}", "policy.planner.protocol=gta1"])
        decisions, slots = [], []
        with build_model_policy(config, resolve_home(None)) as policy:
            for step in range(1, len(STEPS_GTA1) + 1):
                ctx = _context(step)
                slots.append(split_parts(ctx, "")[0])
                decisions.append(policy.decide(ctx))
        return decisions, slots, planner.chat_requests, executor.chat_requests


@pytest.fixture(scope="module")
def episode():
    return _run_episode()


def _golden() -> dict:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert "b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6" in golden["source"] and golden["instruction"] == INSTRUCTION
    assert golden["script"] == json.loads(json.dumps(STEPS_GTA1))
    return golden


def _record(body: dict, slot: str) -> dict:
    return json.loads(json.dumps(request_record(body)).replace(json.dumps(slot)[1:-1], json.dumps(INSTRUCTION)[1:-1]))


def test_every_planner_and_judge_request_is_the_gta1_agents(episode):
    decisions, slots, planner_requests, _ = episode
    want = [r for r in _golden()["requests"] if r["call"] in ("planner", "judge")]
    per_step = [len(s["planner"]) + 1 for s in STEPS_GTA1]
    step_of = [n for n, count in enumerate(per_step) for _ in range(count)]
    assert len(planner_requests) == len(want) == sum(per_step)
    for i, (body, golden) in enumerate(zip(planner_requests, want)):
        got = _record(body, slots[step_of[i]])
        got = {"call": "planner" if "n" in got["sampling"] else "judge", **got}
        assert first_difference(got, golden) is None, f"request {i} (step {step_of[i] + 1}): " \
                                                      f"{first_difference(got, golden)}"


def test_every_grounding_request_is_the_gta1_agents(episode):
    _, _, _, executor_requests = episode
    want = [r for r in _golden()["requests"] if r["call"] == "grounding"]
    assert len(executor_requests) == len(want) == 5
    assert "grounding BGR" in KNOWN
    for n, (body, golden) in enumerate(zip(executor_requests, want), start=1):
        got = {"call": "grounding", **request_record(body)}
        assert first_difference(got, channels_put_back(golden)) is None, (n, first_difference(got, golden))


def test_the_chosen_proposals_act_where_the_agent_acts(episode):
    decisions, _, _, _ = episode
    agent_actions = _golden()["agent_actions"]
    got = [[(a.type, *[getattr(a, k) for k in ("x", "y", "to_x", "to_y", "text", "key", "keys", "dy", "seconds")
                       if getattr(a, k, None) is not None]) for a in d.actions] for d in decisions]
    assert "pyautogui.click(120, 340, clicks=2" in agent_actions[0][0]  # the judge's index 7: a retried proposal
    assert got[0] == [("double_click", 120, 340)]
    assert "click(636, 396)" in agent_actions[1][0] and "write('final.txt')" in agent_actions[1][0]
    # 400/1092*1080 = 395.6: rounded as the agent rounds (the gta1 preset alone truncates)
    assert got[1] == [("click", 636, 396), ("hotkey", ["ctrl", "a"]), ("key", "backspace"), ("type", "final.txt"),
                      ("key", "enter")]
    assert got[2] == [("hotkey", ["ctrl", "s"])]
    assert "moveTo(696, 495)" in agent_actions[3][0] and got[3] == [("scroll", 696, 495, -5)]
    assert "moveTo(298, 415); pyautogui.dragTo(89, 603" in agent_actions[4][0]
    assert got[4] == [("drag", 298, 415, 89, 603)]
    assert got[5] == [("hotkey", ["shift", "down"]), ("hotkey", ["shift", "down"])]
    assert got[6] == [("wait", 1.0)]
    assert decisions[0].raw_text == STEPS_GTA1[0]["planner"][1][1]


def test_each_step_journals_its_planner_judge_and_grounding_calls(episode):
    decisions, _, _, _ = episode
    first = decisions[0]
    assert [c["role"] for c in first.meta["calls"]] == ["planner", "planner", "judge", "executor"]
    assert len(first.meta["calls"][0]["choices"]) == 8 and first.meta["proposals"] == 8
    assert first.meta["calls"][3]["description"] == "The Files icon in the dock"
    record = first.record()
    assert {c["model_id"] for c in record["calls"]} == {"o3", "gta1"}
    events = [{"kind": "decision", "session": "s", "t": float(n), "payload": d.record()}
              for n, d in enumerate(decisions)]
    by_model = costs_of(events)["s"].record()["by_model"]
    assert by_model["o3"]["decisions"] == 15 and by_model["gta1"]["decisions"] == 5  # counted per call: 8 planner + 7 judge


def test_proposals_are_judged_valid_as_the_agent_judges_them():
    from scripts.build.goldens_gta1_planner import NO_THOUGHT, NOT_ACI, proposal

    assert not gta1_aci.is_valid(NO_THOUGHT) and not gta1_aci.is_valid(NOT_ACI)
    assert not gta1_aci.is_valid(proposal("x", "y", "agent.click(instruction='The OK button')"))  # no description
    assert not gta1_aci.is_valid(proposal("x", "y", "agent.click('The OK button', clicks=2)"))  # no such argument
    assert gta1_aci.is_valid(proposal("x", "y", "agent.type(text='hi')"))  # typed where the cursor is
    assert gta1_aci.is_valid(proposal("x", "y", "agent.done()"))
    assert gta1_aci.to_actions("agent.done('42')", [])[0].message == "42"
    refused = gta1_aci.to_actions("agent.set_cell_values({'A1': 1}, 'a.xlsx', 'Sheet1')", [])
    assert "UNO" in refused[0].message
    assert "hold_keys" in gta1_aci.to_actions("agent.click('x', hold_keys=['ctrl'])", [(1, 2)])[0].message
    assert judge_index('{"explaining": "a", "index": 3}') == 3 and judge_index("none") is None


def test_the_gta1_protocol_sends_no_temperature():
    config = load_config(None, ["policy=gta1", "policy.endpoint=http://127.0.0.1:9/v1",
                                "policy.planner.endpoint=http://127.0.0.1:9/v1", "policy.planner.protocol=gta1",
                                "policy.planner.temperature=0.5"])
    with pytest.raises(UserError, match="no temperature"):
        build_model_policy(config, resolve_home(None))


@pytest.mark.parametrize("name", ["planner_system.txt", "planner_user.txt", "judge_system.txt", "retry.txt"])
def test_an_edited_stored_gta1_prompt_no_longer_matches_the_official_requests(name, monkeypatch):
    """The golden holds the official text as the agent sent it, so one changed letter of a stored file fails."""
    from conway.policies.prompt_files import PromptFolder

    real = PromptFolder.text

    def edited(self, file):
        text = real(self, file)
        if self.path.parent.name == "gta1" and file == name:
            i = text.index("e")  # one letter, placeholders intact
            return text[:i] + "E" + text[i + 1:]
        return text

    monkeypatch.setattr(PromptFolder, "text", edited)
    _, slots, planner_requests, _ = _run_episode()
    want = [r for r in _golden()["requests"] if r["call"] in ("planner", "judge")]
    step_of = [n for n, s in enumerate(STEPS_GTA1) for _ in range(len(s["planner"]) + 1)]
    found = [first_difference(_record(body, slots[step_of[i]])["messages"], golden["messages"])
             for i, (body, golden) in enumerate(zip(planner_requests, want))]
    assert any(f and "texts differ" in f for f in found), found
