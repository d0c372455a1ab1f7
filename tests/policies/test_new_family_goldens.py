"""The newer families' presets send, over a 16-step episode at 1920x1080, the requests their official agents send.

The goldens (`tests/data/goldens_new/<preset>.json`) were recorded from the unmodified official code by
`scripts/build/goldens_new_families.py` (each names its source, commit, runner and the agent's arguments): every
request whole, images described by size, encoding, pixels and the step they show. Here Conway runs the same
episode through `ModelPolicy.decide`, built from the preset as `conway run policy=<preset>` builds it, with a
RECORDING backend (a stand-in: no model is asked; the point is the request) that plays the same answers, and each
request is compared whole with the golden's, field by field, the first difference named.

The history is `TurnHistory` as a run keeps it (the agents' constant window: the newest N-1 screenshots, every
answer kept), and the instruction slot holds the task's instruction (the goals part's frame is replaced by the
instruction before comparing). What still differs is listed per preset in `KNOWN`, each with its reason, and
asserted to be exactly that: a new difference fails, and so does a listed one that went away.

The agents' presets are also run the whole way a task run sends them
(`test_the_episode_over_http_as_a_task_run_sends_it_is_the_official_agents`): the preset's config alone, its own
structured output, the loop's `ContextBuilder` with the task as the session's task, over HTTP to a recording fake
server; nothing is rewritten before the comparison.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conway.config import load_config
from conway.history import TurnHistory
from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.policies.base import ModelPolicy
from conway.policies.factory import _family_adapter, _settings
from conway.prompt.layout import split_parts
from conway.protocols import ContextPart, DecisionContext, Observation
from scripts.build.golden_episode import first_difference  # the one comparator: number types kept
from scripts.build.goldens_new_families import (
    ANSWERS,
    HOLO2_TARGETS,
    INSTRUCTION,
    JEDI_PLANNER,
    SCREEN,
    STEPS,
    request_record,
    screenshot,
)

GOLDENS = Path(__file__).resolve().parents[1] / "data" / "goldens_new"
TYPES = ["click", "double_click", "triple_click", "right_click", "move", "drag", "type", "key", "hotkey", "scroll",
         "wait", "finish"]

KNOWN: dict[str, set[str]] = {
    # the Venus framework declares its screenshot `data:image;base64,` (no subtype); Conway says image/png: the
    # bytes are the same PNG (Family.known_differences says so in every report)
    "ui-venus-1.5": {"declared"},
}
"""Per preset, the kinds of image difference that remain (`size`, `pixels`, `jpeg`, `declared`), each with its
reason."""


class Recording(Backend):
    """A STAND-IN backend: plays the golden's answers and keeps each request's messages and sampling."""

    kind = "stub"
    model_id = "stand-in"

    def __init__(self, answers: list[str]):
        self.answers, self.sent = list(answers), []

    def structured_support(self):
        return []

    def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
        self.sent.append({"messages": json.loads(json.dumps(messages)), "max_tokens": max_tokens,
                          "temperature": temperature, "sampling": dict(sampling or {})})
        return ChatResult(text=self.answers[len(self.sent) - 1], reasoning=None, finish_reason="stop",
                          model=self.model_id, usage={})

    def close(self):
        pass


def _observation(step: int) -> Observation:
    return Observation(png=screenshot(step), captured_size=SCREEN, source="synthetic", content_hash=f"h{step}",
                       change_key=f"k{step}")


def conway_requests(preset: str, tasks: list[str], steps: list[int] | None = None
                    ) -> tuple[list[dict], list[str], object]:
    """Conway's request bodies for the episode (one a task, on the screenshot of `steps`, by default 1, 2 …), the
    text each put in the instruction slot, and the family."""
    config = load_config(None, [f"policy={preset}", "policy.structured_output=none"])
    family, adapter = _family_adapter(config)
    backend = Recording(ANSWERS[preset])
    policy = ModelPolicy(adapter, backend, _settings(config, family, {}))
    images = config.policy.history_images or family.conversation.history_images
    history = TurnHistory(max_images=images - 1, max_turns=None, keep_reasoning=config.policy.keeps_reasoning)  # as a run keeps it: the agents' constant window, every answer kept
    slots = []
    for step, task in zip(steps or range(1, len(tasks) + 1), tasks):
        ctx = DecisionContext(parts=[ContextPart("goals.md", task)], observation=_observation(step), step=step,
                              action_types=TYPES, history=history)
        slots.append(split_parts(ctx, adapter.action_space(ctx))[0])
        decision = policy.decide(ctx)
        assert decision.actions and decision.actions[0].type != "finish", (preset, step, decision)
        history.commit()
    bodies = []
    for sent in backend.sent:
        body = {"model": "any", "messages": sent["messages"],  # what the policy sent, None fields left out as HTTP does
                **{k: sent[k] for k in ("max_tokens", "temperature") if sent[k] is not None}, **sent["sampling"]}
        bodies.append(body)
    return bodies, slots, family


def _with_instruction(record: dict, slot: str, instruction: str) -> dict:
    return json.loads(json.dumps(record).replace(json.dumps(slot)[1:-1], json.dumps(instruction)[1:-1]))


def _images(messages: list) -> list[dict]:
    return [p["image_url"]["url"] if "image_url" in p else p["image"] for m in messages
            if isinstance(m["content"], list) for p in m["content"]
            if isinstance(p, dict) and (p.get("type") == "image_url" or "image" in p)]


def as_dashscope(body: dict) -> dict:
    """Conway's OpenAI-form request in DashScope's message form, the parts renamed as a DashScope client renames them
    (`{"text": …}`, `{"image": url}`), so it compares with a golden of GUI-Owl's default engine (`"api":
    "dashscope"`): what an OpenAI-compatible server is sent and what DashScope is sent are the same parts."""
    def part(p: dict) -> dict:
        return {"text": p["text"]} if p.get("type") == "text" else {"image": p["image_url"]["url"]}
    messages = [{"role": m["role"], "content": [{"text": m["content"]}] if isinstance(m["content"], str) else
                 [part(p) for p in m["content"]]} for m in body["messages"]]
    return {**body, "messages": messages}


def _without_known(record: dict, known: set[str]) -> tuple[dict, set[str]]:
    """The record with the listed kinds of image difference taken out (compared separately), and which were."""
    out = json.loads(json.dumps(record))
    for image in _images(out["messages"]):
        for kind, key in (("size", "size"), ("pixels", "pixels_sha256"), ("jpeg", "encoding"), ("jpeg", "declared"),
                          ("declared", "declared")):
            if kind in known:
                image.pop(key, None)
        if "size" in known:
            image.pop("pixels_sha256", None)  # another size is other pixels
    return out, known


def _kinds(got: dict, want: dict) -> set[str]:
    """Which kinds of image difference there are between two records of the same request."""
    kinds = set()
    for a, b in zip(_images(got["messages"]), _images(want["messages"])):
        if a["size"] != b["size"]:
            kinds.add("size")
        elif a["pixels_sha256"] != b["pixels_sha256"] and a["encoding"] == b["encoding"] == "png":
            kinds.add("pixels")
        if a["encoding"] != b["encoding"]:
            kinds.add("jpeg")
        elif a["declared"] != b["declared"]:
            kinds.add("declared")  # the same encoding, the data URL's type said otherwise
        elif a["encoding"] == "jpeg" and a["pixels_sha256"] != b["pixels_sha256"]:
            kinds.update({"jpeg", "pixels"})
    return kinds


def _golden(preset: str) -> dict:
    golden = json.loads((GOLDENS / f"{preset}.json").read_text(encoding="utf-8"))
    assert golden["answers"] == ANSWERS[preset] and golden["instruction"] == INSTRUCTION
    assert any(commit in golden["source"] for commit in ("b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6", "2ba89619",
                                                          "4dd07b9e910a294f001452e888514d912b96cc41",
                                                          "c3a1442c3c4501af18c124458dbbddcbda5c2c6f"))
    return golden


@pytest.mark.parametrize("preset", ["evocua", "evocua-s1", "gui-owl-1.5", "gui-owl-1.5-openai", "kimi-k2.5",
                                    "jedi-7b", "jedi-3b", "holo2", "mai-ui", "ui-venus-1.5"])
def test_every_request_of_the_episode_is_the_official_agents(preset):
    golden = _golden(preset)
    wanted = [r for r in golden["requests"] if r["call"] != "planner"]  # Jedi's executor; the planner is below
    steps = None
    if preset.startswith("jedi"):  # the executor is asked on the steps whose planned action points somewhere
        grounded = [(n, c) for n, c in enumerate(JEDI_PLANNER, start=1) if "pyautogui.click" in c or
                    "pyautogui.doubleClick" in c]
        steps, tasks = [n for n, _ in grounded], [c.split("# ", 1)[1].split("\n", 1)[0] for _, c in grounded]
    elif preset == "holo2":
        tasks = HOLO2_TARGETS
    else:
        tasks = [INSTRUCTION] * STEPS
    assert len(wanted) == len(tasks)
    bodies, slots, _ = conway_requests(preset, tasks, steps)
    if golden.get("api") == "dashscope":
        bodies = [as_dashscope(b) for b in bodies]
    seen: set[str] = set()
    for step, (body, slot, task, want) in enumerate(zip(bodies, slots, tasks, wanted), start=1):
        got = _with_instruction(request_record(body), slot, task)
        want = {"messages": want["messages"], "sampling": want["sampling"]}
        kinds = _kinds(got, want)
        seen |= kinds
        assert kinds <= KNOWN.get(preset, set()), f"{preset} request {step}: unlisted image difference {kinds}"
        a, _ = _without_known(got, kinds)
        b, _ = _without_known(want, kinds)
        assert first_difference(a, b) is None, f"{preset} request {step}: {first_difference(a, b)}"
    assert seen == KNOWN.get(preset, set()), f"{preset}: a listed difference went away: {KNOWN[preset] - seen}"


SENT_FILES = [("evocua", "evocua", "s2_system.txt"), ("evocua", "evocua", "computer_use.json"),
              ("evocua", "evocua", "s2_instruction.txt"), ("evocua-s1", "evocua", "s1_system.txt"),
              ("evocua-s1", "evocua", "s1_instruction.txt"), ("gui-owl-1.5", "guiowl", "system.txt"),
              ("gui-owl-1.5", "guiowl", "instruction.txt"), ("kimi-k2.5", "kimi", "system_non_thinking.txt"),
              ("kimi-k2.5", "kimi", "instruction.txt"), ("jedi-7b", "jedi", "grounder_system.txt"),
              ("holo2", "holo2", "localization.txt"), ("mai-ui", "maiui", "system.txt"),
              ("ui-venus-1.5", "uivenus", "instruction.txt")]
"""Every stored prompt file a preset sends: (preset, family folder, file)."""


@pytest.mark.parametrize("preset, folder, name", SENT_FILES)
def test_an_edited_stored_prompt_no_longer_matches_the_official_request(preset, folder, name, monkeypatch):
    """The goldens hold the official text as the agent sent it, so one changed letter of a stored file fails."""
    from conway.policies.prompt_files import PromptFolder

    real = PromptFolder.text

    def edited(self, file):
        text = real(self, file)
        if self.path.parent.name == folder and file == name:
            i = text.index("e")  # one letter, JSON and placeholders intact
            return text[:i] + "E" + text[i + 1:]
        return text

    golden = _golden(preset)
    want = next(r for r in golden["requests"] if r["call"] != "planner")
    task = HOLO2_TARGETS[0] if preset == "holo2" else INSTRUCTION
    steps = None
    if preset == "jedi-7b":
        steps, task = [1], JEDI_PLANNER[0].split("# ", 1)[1].split("\n", 1)[0]
    def texts(record: dict) -> list:  # the messages with each image reduced to the step it shows
        out = json.loads(json.dumps(record["messages"]))
        for image in _images(out):
            for key in [k for k in image if k != "step"]:
                del image[key]
        return out

    form = as_dashscope if golden.get("api") == "dashscope" else (lambda b: b)
    body, slot = (x[0] for x in conway_requests(preset, [task], steps)[:2])
    body = form(body)
    assert first_difference(texts(_with_instruction(request_record(body), slot, task)), texts(want)) is None
    monkeypatch.setattr(PromptFolder, "text", edited)
    body, slot = (x[0] for x in conway_requests(preset, [task], steps)[:2])
    body = form(body)
    found = first_difference(texts(_with_instruction(request_record(body), slot, task)), texts(want))
    assert found is not None and "texts differ" in found, found


AGENT_PRESETS = ["evocua", "evocua-s1", "gui-owl-1.5", "gui-owl-1.5-openai", "kimi-k2.5", "mai-ui", "ui-venus-1.5"]


def task_run_requests(preset: str, answers: list[str], tmp_path: Path) -> list[dict]:
    """The episode's request bodies the whole way a task run sends them, nothing set or rewritten: the preset's
    config alone (its own structured output), the loop's `ContextBuilder` with the task as the session's task, over
    HTTP to the RECORDING fake server of `test_request_goldens.py` playing `answers`."""
    from fixtures.scripted_server import ScriptedFakeServer
    from test_request_goldens import GuiToolbox, Recorder

    from conway.policies.factory import build_model_policy
    from conway.prompt.decision import ContextBuilder
    from conway.prompt.memory import Memory
    from conway.store.home import Home, init_home

    recorder = Recorder(answers)
    home = Home(tmp_path / "home")
    init_home(home)
    with ScriptedFakeServer(responder=recorder) as fake:
        config = load_config(home.config, [f"policy={preset}", f"policy.endpoint={fake.base_url}"])
        config = config.for_task_formats({"osworld"})  # an OSWorld task, as `tasks run` runs one
        with build_model_policy(config, home) as policy:
            builder = ContextBuilder(home, config, GuiToolbox(), policy,  # type: ignore[arg-type]
                                     Memory(home.memory, home.memory_previous), say=lambda line: None)
            goals, _ = builder.goals(INSTRUCTION)
            for step in range(1, STEPS + 1):
                decision = policy.decide(builder.build(goals, _observation(step), step))
                assert decision.actions and not hasattr(decision.actions[0], "message"), (preset, step)
                builder.note(step, decision.actions[0].summary(), "ok")
    return recorder.requests


@pytest.mark.slow
@pytest.mark.parametrize("preset", AGENT_PRESETS)
def test_the_episode_over_http_as_a_task_run_sends_it_is_the_official_agents(preset, tmp_path):
    """The whole way a task run sends it (`task_run_requests`), compared with the golden as it reaches an
    OpenAI-compatible server."""
    golden = _golden(preset)
    requests = task_run_requests(preset, ANSWERS[preset], tmp_path)
    form = as_dashscope if golden.get("api") == "dashscope" else (lambda b: b)
    assert len(requests) == len(golden["requests"]) == STEPS
    for step, (body, want) in enumerate(zip(requests, golden["requests"]), start=1):
        got = request_record(form(body))
        want = {"messages": want["messages"], "sampling": want["sampling"]}
        kinds = _kinds(got, want)  # only a listed image difference, taken out; everything else compared as sent
        assert kinds == KNOWN.get(preset, set()), f"{preset} request {step}: image differences {kinds}"
        got, want = _without_known(got, kinds)[0], _without_known(want, kinds)[0]
        assert first_difference(got, want) is None, f"{preset} request {step}: {first_difference(got, want)}"


@pytest.mark.parametrize("plant", ["answers replayed as written", "seed 41"])
def test_a_planted_change_to_mai_uis_request_is_caught(plant, monkeypatch):
    """MAI-UI's agent re-writes each past answer (compact JSON, its point scaled back with int(): 63 becomes 62) and
    sends seed 42: Conway replaying the answers as written, or another seed, no longer matches the golden."""
    import conway.policies.families.maiui.parse as parse_maiui
    from conway.policies.families import FAMILIES

    if plant == "seed 41":
        family = FAMILIES["maiui"]
        monkeypatch.setitem(FAMILIES, "maiui", type(family)(**{**family.__dict__, "sampling": tuple(
            (k, 41 if k == "seed" else v) for k, v in family.sampling)}))
    else:
        monkeypatch.setattr(parse_maiui, "replayed", lambda answer: answer)
    golden = _golden("mai-ui")
    bodies, slots, _ = conway_requests("mai-ui", [INSTRUCTION] * STEPS)
    found = [first_difference(_with_instruction(request_record(b), s, INSTRUCTION),
                              {"messages": w["messages"], "sampling": w["sampling"]})
             for b, s, w in zip(bodies, slots, golden["requests"])]
    assert any(f is not None for f in found), plant
    assert ("seed" in next(f for f in found if f)) == (plant == "seed 41")


def test_ui_venus_without_its_kept_thinking_no_longer_matches():
    """The Venus framework replays each step's `<think>` in its previous actions, where the other agents drop hidden
    reasoning: a history that drops it (the default) no longer matches the golden from the second request on."""
    from conway.policies.families import FAMILIES

    family = FAMILIES["uivenus"]
    golden = _golden("ui-venus-1.5")
    conversation = type(family.conversation)(**{**family.conversation.__dict__, "keeps_reasoning": False})
    import pytest as _pytest

    with _pytest.MonkeyPatch.context() as mp:
        mp.setitem(FAMILIES, "uivenus", type(family)(**{**family.__dict__, "conversation": conversation}))
        bodies, slots, _ = conway_requests("ui-venus-1.5", [INSTRUCTION] * STEPS)
    found = [first_difference(_without_known(_with_instruction(request_record(b), s, INSTRUCTION), {"declared"})[0],
                              _without_known({"messages": w["messages"], "sampling": w["sampling"]}, {"declared"})[0])
             for b, s, w in zip(bodies, slots, golden["requests"])]
    assert found[0] is None and found[1] is not None and "texts differ" in found[1], found[:2]
