"""Faithful by default: a preset's request is its official agent's (constant window, every earlier answer, the
runner's sampling, PNG, the task alone as the instruction); whatever Conway adds is a named deviation, opted into
per key and listed; a context too small for the window is refused in one line, never shrunk silently."""

from __future__ import annotations

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer
from helpers.episode import observation

from conway.config import RUN_DEVIATIONS, load_config
from conway.errors import UserError
from conway.history import PastImage, TurnHistory
from conway.policies.backends.backend import Backend
from conway.policies.backends.http_client import ChatResult
from conway.policies.base import ModelPolicy
from conway.policies.conformance import conformance_lines, sized_runtime, window_need, window_refusal
from conway.policies.conversation import qwen25_action_line, qwen_action_line
from conway.policies.deviations import deviation_lines
from conway.policies.factory import _family_adapter, _settings, build_model_policy
from conway.prompt.layout import split_parts
from conway.protocols import ContextExceeded, ContextPart, ContextWindow, DecisionContext, PolicyError
from conway.store.home import resolve_home


def cfg(*o):
    return load_config(None, list(o))


def img(n: int) -> PastImage:
    return PastImage(bytes([n]), "image/png", (28, 28), 4)


# -- the window ---------------------------------------------------------------------------------------------------


def test_the_faithful_window_is_constant_and_keeps_every_answer():
    h = TurnHistory(max_images=4, max_turns=None)  # UI-TARS: 5 screenshots a request, every answer replayed
    for n in range(1, 17):
        h.propose(f"answer {n}", img(n))
        h.commit()
        assert len(h.with_images()) == min(n, 4)  # never 3 -> 5 -> 3: one in, the oldest out
        assert [t.number for t in h.turns] == list(range(1, n + 1))
    assert [t.number for t in h.with_images()] == [13, 14, 15, 16]


def test_the_half_slide_is_the_opt_in_deviation():
    h = TurnHistory(max_images=4, max_turns=12, slide=True)
    counts = []
    for n in range(1, 17):
        h.propose(f"answer {n}", img(n))
        h.commit()
        counts.append(len(h.with_images()))
    assert counts[:8] == [1, 2, 3, 4, 2, 3, 4, 2]  # past screenshots cycle, as the cache-friendly slide does
    assert [t.number for t in h.turns][0] == 8  # 12 answers, slid to the newest 6 at the 13th


@pytest.mark.parametrize("preset,images,turns", [("uitars-1.5-7b", 4, None), ("uitars", 4, None),
                                                 ("opencua-7b", 2, None), ("qwen3-vl", 4, None),
                                                 ("qwen2.5-vl", 4, None),
                                                 ("holo3.1", 2, None)])  # the page's trim_to_last_n_images(n=3)
def test_each_preset_keeps_its_agents_window(preset, images, turns):
    assert cfg(f"policy={preset}").policy.history_window(12) == (images, turns, False)
    assert cfg(f"policy={preset}", "policy.deviations=[half_slide]").policy.history_window(12) == (images, 12, True)
    assert cfg("policy=generic").policy.history_window(12) == (0, 12, True)  # Conway's own layout
    run = cfg(f"policy={preset}", "policy.deviations=[recent_answers]").policy  # `conway run`'s: bounded, constant
    assert run.history_window(12) == (images, 12, False)


# -- sampling and encoding ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset,max_tokens,temperature,sampling,retry", [
    ("uitars-1.5-7b", 1000, 0.0, {"top_p": 0.9, "frequency_penalty": 1.0}, 0),  # run_multienv_uitars15_v1.py
    ("uitars", 1500, 1.0, {"top_p": 0.9, "frequency_penalty": 1.0}, 0),  # run_multienv_uitars.py
    ("opencua-7b", 2048, 0.0, {"top_p": 0.9}, 20),  # run_multienv_opencua.py, call_llm's finish_reason retry
    ("qwen3-vl", 32768, None, {}, 0),  # run_multienv_qwen3vl.py; the agent sends no temperature or top_p
    ("qwen2.5-vl", 1500, 1.0, {"top_p": 0.9}, 0),  # run_multienv_qwen25vl.py
])
def test_each_preset_samples_at_its_runners_defaults_and_sends_png(preset, max_tokens, temperature, sampling, retry):
    config = cfg(f"policy={preset}")
    family, _ = _family_adapter(config)
    s = _settings(config, family, {})
    assert (s.max_tokens, s.temperature, s.sampling, s.retry_unfinished) == (max_tokens, temperature, sampling, retry)
    assert s.image_encoding == "png" and s.deviations == ()
    assert deviation_lines(config) == []


def test_jpeg_and_other_sampling_are_deviations_listed_one_line_each():
    config = cfg("policy=uitars-1.5-7b", "policy.deviations=[jpeg,english_thoughts]", "policy.temperature=0.5",
                 "policy.history_images=2")
    family, adapter = _family_adapter(config)
    assert _settings(config, family, {}).image_encoding == "jpeg" and adapter.language == "English"
    lines = deviation_lines(config)
    assert [line.split(":")[0] for line in lines] == ["jpeg", "english_thoughts", "smaller_window", "sampling"]
    assert "where the agent's runner sends 0.0" in lines[-1]
    assert cfg("policy=generic", "policy.temperature=0.5").policy.kind == "generic"
    assert deviation_lines(cfg("policy=generic", "policy.temperature=0.5")) == []  # Conway's own: none measured


class _Unfinished(Backend):
    """A STAND-IN backend whose answers end as scripted (finish_reason), counting the requests."""

    kind, model_id = "stub", "stand-in"

    def __init__(self, script):
        self.script, self.asked = list(script), []

    def structured_support(self):
        return []

    def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
        self.asked.append((temperature, dict(sampling or {})))
        text, reason = self.script[len(self.asked) - 1]
        return ChatResult(text=text, reasoning=None, finish_reason=reason, model=self.model_id, usage={})


def _policy(preset: str, backend: Backend, *o: str) -> ModelPolicy:
    config = cfg(f"policy={preset}", *o)
    family, adapter = _family_adapter(config)
    return ModelPolicy(adapter, backend, _settings(config, family, {}))


def _context(*parts: ContextPart, history: TurnHistory | None = None) -> DecisionContext:
    return DecisionContext(parts=list(parts) or [ContextPart("goals.md", "Open the file.")], observation=observation(1),
                           step=1, action_types=["click", "wait", "finish"],
                           history=history or TurnHistory(max_images=2, max_turns=None))


OPENCUA = "## Thought:\nI click.\n## Action:\nClick.\n## Code:\n```python\npyautogui.click(x=10, y=20)\n```"


def test_opencua_asks_again_until_an_answer_ends_with_stop_as_its_agent_does():
    backend = _Unfinished([("## Thought:\ncut", "length"), (OPENCUA, "stop")])
    decision = _policy("opencua-7b", backend).decide(_context())
    assert len(backend.asked) == 2 and decision.actions
    assert backend.asked[0] == (0.0, {"top_p": 0.9})
    same = _Unfinished([("cut", "length"), ("cut", "length"), ("x", "stop")])
    with pytest.raises(PolicyError, match="did not finish"):  # the same answer again: asking more changes nothing
        _policy("opencua-7b", same).decide(_context())
    assert len(same.asked) == 2


def test_an_http_request_carries_the_runners_parameters_and_no_temperature_where_the_agent_sends_none():
    answer = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", "time": 1}}\n</tool_call>'
    with ScriptedFakeServer(replies=[Reply.text(answer)]) as fake:
        with build_model_policy(cfg("policy=qwen3-vl", f"policy.endpoint={fake.base_url}"),
                                resolve_home(None)) as policy:
            policy.decide(_context())
        body = fake.chat_requests[-1]
    assert body["max_tokens"] == 32768 and "temperature" not in body and "top_p" not in body
    url = body["messages"][-1]["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")


# -- what the instruction slot carries --------------------------------------------------------------------------------


PARTS = [ContextPart("constitution.md", "I am the owner's agent."), ContextPart("action space", "(calls)"),
         ContextPart("goals.md", "Open the report."), ContextPart("memory.md", "- step 1: opened"),
         ContextPart("host facts", "Linux"), ContextPart("untrusted data", "data is data"),
         ContextPart("latest result", "clicked → ok")]


def test_the_official_request_carries_the_task_alone_and_each_addition_only_under_its_key():
    ctx = _context(*PARTS)
    assert split_parts(ctx, "", ()) == ("Open the report.", "")  # no frames, no constitution, no latest result
    task, tail = split_parts(ctx, "", RUN_DEVIATIONS)
    assert '<file name="constitution.md">' in task and '<file name="goals.md">' in task and "memory.md" in task
    assert "Linux" not in task and "clicked" not in tail
    task, tail = split_parts(ctx, "", ("latest_result",))
    assert "Open the report." in task and "clicked → ok" in tail and "## untrusted data" in task  # data: its rule
    assert "constitution" not in task


def test_conway_run_turns_on_the_seeds_deviations_and_evaluations_none():
    pol = cfg("policy=uitars-1.5-7b").policy
    assert pol.resolved_deviations() == [] and pol.resolved_deviations(continuous=True) == list(RUN_DEVIATIONS)
    assert cfg("policy=uitars-1.5-7b", "policy.deviations=[]").policy.resolved_deviations(continuous=True) == []
    with pytest.raises(Exception, match="deviations"):
        cfg("policy=uitars-1.5-7b", "policy.deviations=[no_such_thing]")


def test_uitars_asks_thoughts_in_the_runners_language_and_replays_1_0_answers_raw():
    answer = "Thought: go\nAction: click(start_box='(10,20)')"
    history = TurnHistory(max_images=4, max_turns=None)
    history.propose(answer, img(1))
    history.commit()
    for preset, replayed in (("uitars-1.5-7b", [{"type": "text", "text": answer.replace(
            "'(10,20)'", "'<|box_start|>(10,20)<|box_end|>'")}]), ("uitars", answer)):
        backend = _Unfinished([("Thought: ok\nAction: wait()", "stop")])
        sent = []
        backend.complete = lambda messages, _b=backend, **kw: (sent.append(messages), _Unfinished.complete(
            _b, messages, **kw))[1]
        _policy(preset, backend).decide(_context(history=history))
        assert "Use Chinese in `Thought` part." in sent[0][1]["content"][0]["text"]
        assert sent[0][3] == {"role": "assistant", "content": replayed}


def test_qwen3vl_names_a_step_without_an_action_line_as_its_agent_does():
    call = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1, 2]}}\n' \
           '</tool_call>'
    assert qwen_action_line(call) == "Performing click action"  # the agent's pyautogui name, not left_click
    assert qwen_action_line(call.replace("left_click", "double_click")) == "Performing doubleClick action"
    assert qwen25_action_line(call) == "Performing click action"


# -- a context that fits, or a refusal ------------------------------------------------------------------------------


def test_a_context_too_small_for_the_window_is_refused_in_one_line_with_both_ways_out():
    config = cfg("policy=uitars-1.5-7b")
    need = window_need(config)
    assert need.image_tokens == 2691 and need.images == 5  # 1932x1092 by UI-TARS' 28-px rule
    line = window_refusal(config, 8192, "llama-server /props")
    assert line and "\n" not in line and str(need.total) in line and "8192" in line
    assert "llama-server -c" in line and f"policy.history_images={need.fits(8192)}" in line
    assert window_refusal(config, need.total, "llama-server /props") is None
    assert window_refusal(cfg("policy=uitars-1.5-7b", "policy.deviations=[half_slide]"), 8192, "x") is None
    assert window_refusal(cfg("policy=generic"), 1024, "x") is None


def test_a_model_conway_runs_gets_the_context_its_window_needs():
    config = cfg("policy=qwen3-vl", "policy.model_path=/m.gguf")
    sized = sized_runtime(config)
    assert sized.runtime.n_ctx >= window_need(config, in_process=True).total > 8192
    assert sized_runtime(cfg("policy=qwen3-vl", "policy.model_path=/m.gguf", "runtime.n_ctx=4096")).runtime.n_ctx == 4096


def test_run_refuses_a_server_whose_context_is_too_small_before_any_decision():
    props = {"default_generation_settings": {"n_ctx": 8192}, "modalities": {"vision": True}}
    with ScriptedFakeServer(props=props, owned_by="llamacpp") as fake:
        with pytest.raises(UserError, match=r"needs \d+ tokens .* allows 8192: raise the server's context"):
            build_model_policy(cfg("policy=uitars-1.5-7b", f"policy.endpoint={fake.base_url}"), resolve_home(None))
        assert not fake.chat_requests


def test_a_faithful_window_that_outgrows_the_context_mid_run_is_refused_not_shrunk():
    history = TurnHistory(max_images=4, max_turns=None)
    for n in range(1, 5):
        history.propose(f"Thought: {n}\nAction: wait()", PastImage(bytes([n]), "image/png", (1932, 1092), 2691))
        history.commit()
    backend = _Unfinished([("Thought: ok\nAction: wait()", "stop")])
    backend.context_window = lambda: ContextWindow(12000, "a stand-in window")
    with pytest.raises(ContextExceeded, match="policy.history_images="):
        _policy("uitars-1.5-7b", backend, "policy.max_tokens=100").decide(_context(history=history))
    assert len(history.with_images()) == 4 and not backend.asked


def test_conformance_lists_window_tokens_sampling_encoding_and_deviations():
    lines = conformance_lines(cfg("policy=uitars-1.5-7b"), 8192, "llama-server /props")
    text = "\n".join(lines)
    assert "5 screenshot(s)" in text and "every earlier answer" in text and "TOO SMALL" in text
    assert "temperature 0, top_p 0.9, frequency_penalty 1" in text and "PNG" in text and "Chinese" in text
    assert lines[-1] == "deviations: none"
    lines = conformance_lines(cfg("policy=opencua-7b", "policy.deviations=[constitution]"), 65536, "x")
    assert lines[-2] == "deviations: 1" and lines[-1].startswith("  - constitution:")


def test_preflight_fails_the_context_check_with_the_refusal():
    from conway.readiness.checks.context_fit import context_check

    check = context_check(cfg("policy=opencua-7b"), 8192, "llama-server /props (per-slot n_ctx)", None)
    assert check.status == "fail" and "llama-server -c" in check.detail and "policy.history_images=" in check.detail
    assert context_check(cfg("policy=opencua-7b"), 32768, "llama-server /props", None).status == "ok"


# -- in the real loop: what is journaled, `conway run` against `start --task` ----------------------------------------


def _session_and_requests(home, *args: str) -> tuple[dict, list[dict]]:
    from conftest import run_cli

    from conway.store.journal import read_journal

    answer = "Thought: the screen is idle.\nAction: wait()"
    props = {"default_generation_settings": {"n_ctx": 32768}, "modalities": {"vision": True}}
    with ScriptedFakeServer(owned_by="llamacpp", props=props, replies=[Reply.text(answer)]) as fake:
        proc = run_cli(*args, "--max-steps", "1", "policy=uitars-1.5-7b", f"policy.endpoint={fake.base_url}",
                       "observe.source=synthetic", "tools.enabled=[files]", timeout=120)
        requests = fake.chat_requests
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    starts = [e["payload"] for e in read_journal(home / "journal").events
              if e["kind"] == "session" and e["payload"].get("event") == "start"]
    return starts[-1], requests


def test_conway_run_lists_the_seeds_deviations_and_start_task_sends_the_task_alone(initialized_home):
    start, requests = _session_and_requests(initialized_home, "run")
    assert [d.split(":")[0] for d in start["deviations"]] == ["constitution", "goals", "memory", "recent_answers"]
    assert '<file name="constitution.md">' in requests[-1]["messages"][1]["content"][0]["text"]
    start, requests = _session_and_requests(initialized_home, "start", "--task", "Open the report.")
    assert start["deviations"] == []
    prompt = requests[-1]["messages"][1]["content"][0]["text"]
    assert prompt.endswith("## User Instruction\nOpen the report.\n") and "constitution" not in prompt
    assert requests[-1]["top_p"] == 0.9 and requests[-1]["frequency_penalty"] == 1.0


def test_models_conformance_prints_one_line_each_and_fails_a_context_too_small():
    from conftest import run_cli

    proc = run_cli("models", "--conformance", "policy=uitars-1.5-7b", "policy.model_path=/absent.gguf")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("preset: uitars") and "b5007a93" in lines[0]
    assert any(line.startswith("tokens needed:") and "sized by Conway" in line for line in lines)
    assert lines[-1] == "deviations: none"
    proc = run_cli("models", "--conformance", "policy=uitars-1.5-7b", "policy.model_path=/absent.gguf",
                   "runtime.n_ctx=8192", "policy.deviations=[latest_result]")
    assert proc.returncode == 1 and "refused: the uitars window needs" in proc.stdout
    assert "  - latest_result: the latest result or error, after the current screenshot" in proc.stdout
    assert run_cli("models", "--conformance", "--screen", "wide", "policy=uitars-1.5-7b").returncode == 1


def test_models_conformance_against_an_unreachable_endpoint_says_why_the_context_is_not_known():
    # it said "not known (no server asked)" and dropped the connection error
    import socket

    from conftest import run_cli

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run_cli("models", "--conformance", "policy=uitars-1.5-7b", f"policy.endpoint=http://127.0.0.1:{port}/v1")
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("tokens needed:")]
    assert "no server asked" not in line
    assert f"the context: not known: cannot reach the model server at http://127.0.0.1:{port}/v1: connection " \
           "refused" in line, line


def test_every_report_lists_the_deviations_and_its_text_says_them(tmp_path):
    from conway.evals.report import Report
    from conway.evals.report_render import header_lines

    report = Report("tasks", tmp_path / "r.json", argv=[], config=cfg("policy=uitars-1.5-7b", "policy.top_p=0.5"))
    assert [d.split(":")[0] for d in report.data["deviations"]] == ["sampling"]
    lines = header_lines(report.data)
    assert "  deviations from the official request: " in lines and any("top_p 0.5" in line for line in lines)
    assert Report("tasks", tmp_path / "g.json", argv=[], config=cfg("policy=generic")).data["deviations"] is None
    faithful = Report("tasks", tmp_path / "f.json", argv=[], config=cfg("policy=opencua-7b")).data
    assert faithful["deviations"] == [] and "  deviations from the official request: none" in header_lines(faithful)


def test_every_shipped_preset_has_no_deviation_at_its_defaults_but_its_known_ones():
    from pathlib import Path

    from conway.policies.families import FAMILIES

    presets = Path(__file__).resolve().parents[2] / "configs" / "policy"
    for preset in sorted(p.stem for p in presets.glob("*.yaml") if p.stem != "mock"):
        known = FAMILIES[cfg(f"policy={preset}").policy.kind].known_differences
        assert deviation_lines(cfg(f"policy={preset}")) == [f"known: {k}" for k in known], preset
        assert cfg(f"policy={preset}").policy.resolved_deviations() == [], preset


@pytest.mark.parametrize("preset, source", [("holo1.5", "hai-cookbook holo1_5/"), ("holo2", "hai-cookbook holo2/"),
                                            ("gta1", "mm_agents/gta1/gta1_agent.py"),
                                            ("jedi-7b", "mm_agents/jedi_7b_agent.py")])
def test_conformance_of_a_grounding_preset_names_its_source_and_a_request_that_stands_alone(preset, source):
    lines = conformance_lines(cfg(f"policy={preset}"), screen=(1920, 1080))
    assert source in lines[0]
    assert lines[1].endswith("replayed: nothing (each request stands alone: one screenshot and the target)")
    assert "replayed answers" not in lines[2]
    holo = preset.startswith("holo")
    assert ("max_tokens not sent (the server's default;" in lines[3]) is holo
    assert cfg(f"policy={preset}", "policy.max_tokens=64").policy.resolved_max_tokens_sent


def test_a_family_that_sends_no_max_tokens_leaves_it_out_of_the_http_body_and_sends_its_schema_field():
    with ScriptedFakeServer(replies=[Reply.text('{"action": "click_absolute", "x": 1, "y": 2}')] * 2) as fake:
        for extra, sent in (((), False), (("policy.max_tokens=64",), True)):
            config = load_config(None, ["policy=holo1.5", f"policy.endpoint={fake.base_url}", *extra])
            with build_model_policy(config, resolve_home(None)) as policy:
                policy.decide(DecisionContext(parts=[ContextPart("goals.md", "the OK button")],
                                              observation=observation(1), step=1, action_types=["click"]))
            body = fake.chat_requests[-1]
            assert ("max_tokens" in body) is sent and body.get("max_tokens", 64) == 64
            assert body["structured_outputs"]["json"]["title"] == "ClickAbsoluteAction"
