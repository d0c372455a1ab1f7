"""The model's own past turns under the opt-in half slide (`half_slide`): bounded windows that slide by half, a
prefix that only grows between slides, the oldest screenshots first out of a short window; a server's image limit
learned once, bad answers refused. The faithful default (a constant window, every answer): `test_faithful.py`."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from fixtures.scripted_server import Reply, ScriptedFakeServer, completion
from helpers.episode import ANSWERS, Recording, observation, parts

from conway.geometry import Convention
from conway.history import PastImage, TurnHistory
from conway.policies.base import ModelPolicy
from conway.policies.families import get_family
from conway.policies.retry import server_image_limit
from conway.policies.settings import PolicySettings
from conway.protocols import ContextPart, ContextWindow, DecisionContext
from conway.store.journal import read_journal

TYPES = ["click", "double_click", "right_click", "move", "drag", "type", "key", "hotkey", "scroll", "wait", "finish"]
SETTINGS = {"uitars": (Convention.ABSOLUTE, "uitars"), "opencua": (Convention.ABSOLUTE, "opencua"),
            "qwen3vl": (Convention.RELATIVE999, "qwen3-vl"), "generic": (Convention.ABSOLUTE, "qwen2.5-vl")}
GENERIC = ['{"thought": "t%d", "action": {"type": "click", "x": 100, "y": %d}}' % (i, 100 + i) for i in range(6)]


def img(n: int) -> PastImage:
    return PastImage(bytes([n]), "image/jpeg", (28, 28), 4)


HALF_SLIDE = ("constitution", "goals", "latest_result", "half_slide")
"""The deviations the cache-friendly episodes below run under."""


def test_both_windows_only_grow_then_slide_by_half_and_only_the_windows_screenshots_stay():
    h = TurnHistory(max_images=4, max_turns=6, slide=True)
    slid = []
    for n in range(1, 8):
        h.propose(f"answer {n}", img(n))
        slid.append(h.commit())
    assert slid == [False, False, False, False, True, False, True]
    assert [t.number for t in h.turns] == [5, 6, 7]  # answers: 6 kept, then the newest 3
    assert [t.number for t in h.with_images()] == [5, 6, 7]  # images: 4, slid to 2, then one more
    assert h.commit() is False  # nothing pending: committing again keeps nothing twice
    h.propose("held", img(9))
    h.discard()
    assert h.commit() is False and [t.answer for t in h.turns][-1] == "answer 7"


def test_a_history_without_room_for_images_keeps_answers_only():
    h = TurnHistory(max_images=0, max_turns=3)
    h.propose("a", None)
    h.commit()
    assert h.image_cap == 0 and h.turns[0].image is None


def episode(family: str, steps: int, answers: list[str] | None = None, window: int | None = None):
    fam = get_family(family)
    scripted = answers or ANSWERS[family]
    backend = Recording([scripted[i % len(scripted)] for i in range(steps)])
    if window:
        backend.context_window = lambda: ContextWindow(window, "a stand-in window")
    convention, rule = SETTINGS[family]
    policy = ModelPolicy(fam.adapter(), backend, PolicySettings(convention=convention, resize_rule=rule,
                                                                structured_output="none", max_tokens=256,
                                                                deviations=HALF_SLIDE))
    history = TurnHistory(max_images=max(fam.conversation.history_images, 3) - 1, max_turns=12, slide=True)
    slides, decisions, contexts = [], [], []
    for step in range(1, steps + 1):
        latest = ContextPart("latest result", f"wait() → ok (cycle {step})")  # changes every cycle: goes last
        ctx = DecisionContext(parts=parts()[:3] + [latest], observation=observation((step - 1) % 6 + 1),
                              step=step, action_types=TYPES, history=history)
        decisions.append(policy.decide(ctx))
        contexts.append(ctx)
        slides.append(history.commit())
    return backend.sent, slides, decisions, contexts


def _same_head(a: list, b: list) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.mark.parametrize("family", ["uitars", "opencua", "qwen3vl", "generic"])
def test_consecutive_prompts_share_a_growing_prefix_except_at_slides(family):
    sent, slides, _, _ = episode(family, 14, GENERIC if family == "generic" else None)
    grew = 0
    for k, (old, new) in enumerate(zip(sent, sent[1:])):
        if slides[k]:
            continue  # the turn just committed made a window slide: the prefix changes here, once
        head = _same_head(old, new)
        assert head >= len(old) - 1, (family, k + 1)  # every message but the last is sent again unchanged
        if family != "generic":  # the last one's screenshot comes back in the same place, its text gone
            shot = [p for p in old[-1]["content"] if p["type"] == "image_url"]
            assert [p for p in new[len(old) - 1]["content"] if p["type"] == "image_url"] == shot, (family, k + 1)
            assert new[len(old) - 1]["content"][0] == old[-1]["content"][0]  # the screenshot first: cached too
            assert f"(cycle {k + 1})" in json.dumps(old[-1]) and f"(cycle {k + 1})" not in json.dumps(new)
        assert len(new) > len(old)
        grew += 1
    assert grew >= 6 and sum(slides) >= 2  # OpenCUA's 3 screenshots (2 past) slide every other step


def test_a_short_window_lets_the_oldest_screenshots_go_first_and_says_so():
    sent, _, decisions, contexts = episode("uitars", 5)
    full = decisions[-1].meta["prompt_tokens_estimate"]
    sent, _, decisions, contexts = episode("uitars", 5, window=full + 256 - 2 * 1200)
    past = [d.meta["history"]["past_images"] for d in decisions]
    cut = [n for n, c in enumerate(contexts) if any("past screenshot(s) (cut to fit" in d for d in c.dropped)]
    assert cut and past[-1] < 4 and decisions[-1].meta["history"]["past_answers"] == 4, past
    assert len(cut) == 1 and max(past[cut[0]:]) <= past[cut[0]]  # held to what fitted: it slides from then on
    assert all("goals.md" in json.dumps(m) for m in sent)  # text was not cut for the screenshots


def test_the_generic_family_keeps_its_one_screenshot_conversation_by_default():
    assert get_family("generic").conversation.history_images == 1
    h = TurnHistory(max_images=0, max_turns=12)
    backend = Recording(GENERIC)
    policy = ModelPolicy(get_family("generic").adapter(), backend, PolicySettings(
        convention=Convention.ABSOLUTE, resize_rule="qwen2.5-vl", structured_output="none"))
    for step in (1, 2):
        policy.decide(DecisionContext(parts=parts()[:3], observation=observation(step), step=step,
                                      action_types=TYPES, history=h))
        h.commit()
    assert [m["role"] for m in backend.sent[1]] == ["system", "user"]


@pytest.mark.parametrize("message,n", [("At most 2 image(s) may be provided in one request.", 2),
                                       ("maximum of 3 images per request", 3), ("something else", None)])
def test_a_servers_image_limit_is_read_from_its_refusal(message, n):
    assert server_image_limit(message) == n


def _uitars_server(limit: int) -> ScriptedFakeServer:
    def respond(body):
        images = sum(1 for m in body["messages"] if isinstance(m["content"], list)
                     for p in m["content"] if p["type"] == "image_url")
        if images > limit:
            return Reply(status=400, body={"error": {"message": f"At most {limit} image(s) may be provided in one "
                                                                "request.", "type": "BadRequestError"}})
        return Reply(body=completion("Thought: the screen is idle.\nAction: wait()"))
    return ScriptedFakeServer(models=["uitars-fake"], responder=respond)


def test_a_server_refusing_several_images_shrinks_the_history_once_said_and_journaled(initialized_home):
    with _uitars_server(2) as fake:
        proc = run_cli("run", "--max-steps", "6", "policy=uitars-1.5-7b", f"policy.endpoint={fake.base_url}",
                       "observe.source=synthetic", "tools.enabled=[files]", "agent.idle_backoff_start_s=0.01",
                       "agent.idle_backoff_max_s=0.02", timeout=120)
        requests = fake.chat_requests
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    said = [line for line in proc.stdout.splitlines() if "takes at most 2 image(s)" in line]
    assert len(said) == 1, proc.stdout
    ds = [e["payload"] for e in read_journal(initialized_home / "journal").events if e["kind"] == "decision"]
    assert len(ds) == 6 and all(d["actions"] and "problem" not in d["actions"][0] for d in ds)
    noted = [d for d in ds if d["history"].get("notes")]
    assert len(noted) == 1 and "At most 2 image(s)" in noted[0]["history"]["notes"][0]
    assert [d["history"]["past_images"] for d in ds][-1] <= 1
    assert len(requests) == 7  # one refusal in the whole run, then every request fits
    assert "error" not in [e["kind"] for e in read_journal(initialized_home / "journal").events]


def test_a_tool_calls_answer_with_unknown_arguments_is_refused_naming_them():
    from conway.policies.backends.http_client import HTTPBackend, OpenAIClient

    call = {"id": "c1", "type": "function", "function": {"name": "computer_use", "arguments": json.dumps(
        {"action": "left_click", "coordinate": [500, 500], "force": True})}}
    body = completion("")
    body["choices"][0]["message"]["tool_calls"] = [call]
    broken = completion("")
    broken["choices"][0]["message"]["tool_calls"] = [{"function": {"name": "computer_use", "arguments": "{oops"}}]
    with ScriptedFakeServer(models=["qwen-fake"], replies=[Reply(body=body), Reply(body=broken)]) as fake:
        backend = HTTPBackend(OpenAIClient(fake.base_url), "qwen-fake")
        policy = ModelPolicy(get_family("qwen3vl").adapter(), backend, PolicySettings(
            convention=Convention.RELATIVE999, resize_rule="qwen3-vl", structured_output="none"))
        history = TurnHistory(max_images=4, max_turns=12)
        for step in (1, 2):
            ctx = DecisionContext(parts=parts()[:3], observation=observation(1), step=step, action_types=TYPES,
                                  history=history)
            d = policy.decide(ctx)
            assert len(d.actions) == 1 and not hasattr(d.actions[0], "type"), d.actions
            record = d.record()
            assert "problem" in record["actions"][0] and record["raw_text"].startswith("<tool_call>")
            assert history.pending is None  # a refused answer is never replayed
            if step == 1:
                assert "force" in d.actions[0].message
            else:
                assert "JSON" in d.actions[0].message or "json" in d.actions[0].message


# --- in the real loop: what is committed, and what a restart gets back from the journal -----------------


def _run_uitars(fake: ScriptedFakeServer, steps: int, scene: str = "") -> tuple[list[str], list[dict]]:
    from helpers.loop_harness import ArchivingObserver

    from conway.config import load_config
    from conway.loop.control import SimulatedClock
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home, resolve_home

    home = resolve_home(None)
    init_home(home)
    cfg = load_config(home.config, ["policy=uitars-1.5-7b", f"policy.endpoint={fake.base_url}",
                                    f"agent.max_steps={steps}", "tools.enabled=[files]"])
    lines: list[str] = []
    observer = ArchivingObserver(home.root)
    if scene:  # another screen than the first run's (its archived copies keep their own names)
        observer.label_for_step = lambda step: f"{scene} {step}"
    _, session = run_agent(home, cfg, RunRequest(single_session=False, clock=SimulatedClock(),
                                                 observer=observer), say=lines.append)
    ds = [e["payload"] for e in read_journal(home.journal_dir).events
          if e["session"] == session and e["kind"] == "decision"]
    return lines, ds


def _assistant_texts(body: dict) -> list[str]:
    return [m["content"][0]["text"] for m in body["messages"] if m["role"] == "assistant"]


def _images(body: dict) -> list[str]:
    return [p["image_url"]["url"] for m in body["messages"] if isinstance(m["content"], list)
            for p in m["content"] if p["type"] == "image_url"]


UITARS_SCRIPT = ["Thought: first.\nAction: wait()", "not an answer at all", "Thought: third.\nAction: wait()",
                 "Thought: fourth.\nAction: wait()"]


def test_only_answers_the_loop_acted_on_are_replayed_and_a_restart_gets_them_back(conway_home):
    replies = [Reply.text(t) for t in UITARS_SCRIPT] + [Reply.text("Thought: after.\nAction: wait()")]
    with ScriptedFakeServer(models=["uitars-fake"], replies=replies) as fake:
        _, first = _run_uitars(fake, 4)
        before = list(fake.chat_requests)
        lines, second = _run_uitars(fake, 1)
        after = fake.chat_requests[len(before):]
    assert _assistant_texts(before[3]) == ["Thought: first.\nAction: wait()", "Thought: third.\nAction: wait()"]
    assert len(_images(before[3])) == 3  # the refused answer's screenshot went with it
    restored = after[0]
    assert _assistant_texts(restored) == [UITARS_SCRIPT[0], UITARS_SCRIPT[2], UITARS_SCRIPT[3]]
    assert set(_images(restored)[:-1]) <= set(_images(before[3]))  # read back from the archive: the bytes once sent
    assert len(_images(restored)) == 4 and second[0]["history"]["past_answers"] == 3


def test_a_past_screenshot_that_cannot_be_read_again_is_let_go_said_once_and_journaled(conway_home):
    replies = [Reply.text(f"Thought: step {i}.\nAction: wait()") for i in range(6)]
    with ScriptedFakeServer(models=["uitars-fake"], replies=replies) as fake:
        _run_uitars(fake, 3)
        for shot in (conway_home / "screenshots").iterdir():
            shot.write_bytes(b"not an image")  # every archived copy broken
        lines, second = _run_uitars(fake, 2, scene="after the restart")
        restored = fake.chat_requests[3]
    assert len(_assistant_texts(restored)) == 3 and len(_images(restored)) == 1  # answers kept, images let go
    said = [line for line in lines if "cannot be read again" in line]
    assert said and len(said) == len(set(said)) and all("its answer is replayed without it" in s for s in said)
    assert second[0]["history"]["notes"] and second[1]["history"].get("notes") is None
    assert all(d["actions"] and "problem" not in d["actions"][0] for d in second)


def _refuses_over_two_images(body):
    images = sum(1 for m in body["messages"] if isinstance(m["content"], list)
                 for p in m["content"] if p["type"] == "image_url")
    if images > 2:  # as a server without /props (vLLM) refuses a prompt over its context
        return Reply(status=400, body={"object": "error", "type": "BadRequestError", "code": 400,
                                       "message": "This model's maximum context length is 4096 tokens. However, you "
                                                  "requested 5000 tokens (4000 in the messages, 1000 in the "
                                                  "completion). Please reduce the length of the messages or "
                                                  "completion."})
    return Reply(body=completion("Thought: idle.\nAction: wait()"))


def _uitars_over_length_refusals(deviations: tuple[str, ...], history: TurnHistory, steps: int = 5):
    from conway.policies.backends.http_client import HTTPBackend, OpenAIClient

    with ScriptedFakeServer(models=["uitars-fake"], responder=_refuses_over_two_images) as fake:
        policy = ModelPolicy(get_family("uitars").adapter(), HTTPBackend(OpenAIClient(fake.base_url), "uitars-fake"),
                             PolicySettings(convention=Convention.ABSOLUTE, resize_rule="uitars",
                                            structured_output="none", deviations=deviations))
        ds = []
        for step in range(1, steps + 1):
            ds.append(policy.decide(DecisionContext(parts=parts()[:3], observation=observation(step), step=step,
                                                    action_types=TYPES, history=history)))
            history.commit()
    return ds


def test_a_length_refusal_without_props_is_one_line_with_the_numbers_and_the_window_stays():
    from conway.protocols import ContextExceeded

    history = TurnHistory(max_images=4, max_turns=12)
    with pytest.raises(ContextExceeded) as refused:
        _uitars_over_length_refusals((), history)
    said = str(refused.value)
    assert "\n" not in said and said.startswith("context exceeded (5000 > 4096 tokens): the window (3 screenshots")
    assert "allows 4096" in said and "to at least 5000" in said and "policy.history_images=" in said
    # nothing was let go behind the user's back: both past screenshots still there, no shrink noted, none learned
    assert len(history.with_images()) == 2 and not history.notes and history.server_images is None


def test_a_length_refusal_under_the_opt_in_half_slide_lets_the_older_half_go_and_asks_again():
    ds = _uitars_over_length_refusals(("half_slide",), TurnHistory(max_images=4, max_turns=12))
    assert all(d.actions and not hasattr(d.actions[0], "message") for d in ds)
    assert [d.meta["history"]["past_images"] for d in ds] == [0, 1, 1, 1, 1]  # held to 2 screenshots a request
    assert [d.meta["history"]["past_answers"] for d in ds] == [0, 1, 2, 3, 4]  # the answers all stay
    assert "refused the prompt for length" in ds[2].meta["history"]["notes"][0]
    assert all("notes" not in d.meta["history"] for d in ds[3:])  # learned once: no refusal after the first


def test_the_context_builder_keeps_a_turn_only_once_the_loop_acted_on_it(tmp_path):
    from conway.config import load_config
    from conway.policies.mock import MockPolicy, MockScript
    from conway.prompt.decision import ContextBuilder
    from conway.prompt.memory import Memory
    from conway.store.home import Home, init_home
    from conway.tools.registry import build_toolbox

    home = Home(tmp_path / "home")
    init_home(home)
    cfg = load_config(home.config, ["policy=uitars-1.5-7b", "tools.enabled=[files]"])
    said: list[str] = []
    builder = ContextBuilder(home, cfg, build_toolbox(cfg.tools, home.scratch, gui=False),
                             MockPolicy(MockScript.model_validate({"steps": []})),
                             Memory(home.memory, home.memory_previous), say=said.append)
    assert builder.history.max_images == 4 and builder.history.max_turns is None  # the agent's: every answer
    assert not builder.history.slide

    def answered(step: int) -> DecisionContext:
        ctx = builder.build("goals", observation(1), step)
        ctx.history.propose(f"answer {step}", img(step))  # what ModelPolicy.decide does with a valid answer
        return ctx

    answered(1)
    builder.note(1, "wait()", "ok")  # acted on: kept
    answered(2)
    builder.note_error(2, "invalid action: …")  # refused before dispatch: not kept
    answered(3)  # a stop or a pause held it: the next build lets it go
    ctx = answered(4)
    ctx.history.notes.append("the model server takes at most 2 image(s) in one request (…)")
    builder.note(4, "wait()", "ok")
    builder.build("goals", observation(1), 5)
    assert [t.answer for t in builder.history.turns] == ["answer 1", "answer 4"]
    assert said == ["the model server takes at most 2 image(s) in one request (…)"]  # said once
    builder.build("goals", observation(1), 6)
    assert len(said) == 1


def test_the_history_takes_at_most_half_of_the_texts_room_in_the_budget():
    backend = Recording(GENERIC)
    backend.context_window = lambda: ContextWindow(8192, "a stand-in window")
    policy = ModelPolicy(get_family("uitars").adapter(), backend, PolicySettings(
        convention=Convention.ABSOLUTE, resize_rule="uitars", structured_output="none", max_tokens=256))
    alone = policy.text_budget((1280, 800), TYPES)
    history = TurnHistory(max_images=4, max_turns=12)
    for n in range(4):
        history.propose("Thought: x\nAction: wait()", PastImage(b"x", "image/jpeg", (1288, 812), 1300))
        history.commit()
    policy.budget.history = history
    shared = policy.text_budget((1280, 800), TYPES)
    assert shared.history_tokens == alone.text_tokens // 2 and shared.text_tokens >= alone.text_tokens // 2
    assert "history_tokens" in shared.record()


def test_history_images_takes_the_familys_number_unless_set_and_refuses_nonsense():
    from conway.config import load_config

    assert load_config(None, ["policy=uitars-1.5-7b"]).policy.resolved_history_images == 5
    assert load_config(None, ["policy=opencua-7b"]).policy.resolved_history_images == 3
    assert load_config(None, ["policy=qwen3-vl"]).policy.resolved_history_images == 5
    assert load_config(None, ["policy=generic"]).policy.resolved_history_images == 1
    assert load_config(None, ["policy=uitars-1.5-7b", "policy.history_images=2"]).policy.resolved_history_images == 2
    for bad in ("0", "-3", "many"):
        proc = run_cli("config", "--check", f"policy.history_images={bad}")
        assert proc.returncode != 0 and "policy.history_images" in proc.stderr + proc.stdout
        assert "Traceback" not in proc.stderr


def test_the_model_tables_history_lengths_are_the_families():
    from pathlib import Path

    from conway.config import load_config

    doc = (Path(__file__).resolve().parents[2] / "docs" / "running-models.md").read_text(encoding="utf-8")
    section = doc.split("## Conversations and history", 1)[1].split("\n## ", 1)[0]
    from conway.policies.families import FAMILIES

    rows = [line for line in section.splitlines() if line.startswith("| `policy=")]
    kinds = set()
    for line in rows:
        preset = line.split("`policy=", 1)[1].split("`", 1)[0]
        history = line.split(" | ")[2].strip()
        policy = load_config(None, [f"policy={preset}"]).policy
        assert history == str(policy.resolved_history_images), preset
        kinds.add(policy.kind)
    assert kinds == set(FAMILIES)  # every family has its row (a second preset of a family only where it differs)


def test_hidden_reasoning_never_comes_back_in_a_later_request():
    answers = ["<think>the secret plan</think>Thought: go.\nAction: click(start_box='(120,340)')",
               "Thought: again.\nAction: wait()", "Thought: more.\nAction: wait()"]
    sent, _, decisions, _ = episode("uitars", 3, answers)
    assert decisions[0].reasoning and "the secret plan" in decisions[0].reasoning  # kept in the journal's record
    later = json.dumps(sent[1:])
    assert "the secret plan" not in later and "<think>" not in later
    assert "Thought: go.\\nAction: click(start_box='<|box_start|>(120,340)<|box_end|>')" in later


def test_a_restart_reads_back_only_this_familys_answers_that_were_acted_on(tmp_path):
    from conway.prompt.history_journal import journaled_turns
    from conway.store.home import Home, init_home
    from conway.store.journal import Journal, make_event

    home = Home(tmp_path / "home")
    init_home(home)
    journal = Journal(home.journal_dir)

    def step(n: int, policy: str, text: str, after: str, **extra) -> None:
        journal.append(make_event("s1", n, "observation", {"screenshot": f"screenshots/shot-{n}.png"}))
        journal.append(make_event("s1", n, "decision", {"raw_text": text, "actions": [{"type": "wait"}],
                                                        "policy": policy, "sent_size": [28, 28],
                                                        "captured_size": [28, 28], **extra}))
        journal.append(make_event("s1", n, after, {"stage": "pre-dispatch"} if after == "error" else {}))

    step(1, "uitars", "Thought: a\nAction: wait()", "result")
    step(2, "generic", '{"action": {"type": "wait"}}', "result")  # another family: what came before is not ours
    step(3, "uitars", "Thought: b\nAction: wait()", "result")
    step(4, "uitars", "Thought: c\nAction: wait()", "error")  # refused before dispatch
    step(5, "uitars", "Thought: d\nAction: wait()", "control", discarded=True)  # a pause held it
    step(6, "uitars", "<think>x</think>Thought: e\nAction: wait()", "result")
    journal.close()
    turns = journaled_turns(home, "uitars")
    assert [t[0] for t in turns] == ["Thought: b\nAction: wait()", "<think>x</think>Thought: e\nAction: wait()"]
    assert turns[1][1].path == str(home.root / "screenshots" / "shot-6.png")
    history = TurnHistory(max_images=1, max_turns=12)
    history.restore(turns)
    assert [t.answer for t in history.turns] == ["Thought: b\nAction: wait()", "Thought: e\nAction: wait()"]
    assert [t.image is not None for t in history.turns] == [False, True]  # only the window's newest
