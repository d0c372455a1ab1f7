"""The generic policy over HTTP inside the real loop, against a scripted FAKE server.

Each protocol failure ends up as the journal events and waits the design asks
for: pre-dispatch errors with recovery backoff, 429 waits that say so,
reasoning recorded but never sent back. (Real inference: test_runtime_server.py.)
"""

from __future__ import annotations

import json

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer, completion
from helpers.loop_harness import of, run_against

from conway.errors import UserError

WAIT = '{"thought": "nothing to do", "action": {"type": "wait"}}'


def test_decisions_record_model_sizes_convention_usage_and_timings():
    reply = Reply(body=completion(WAIT, timings={"cache_n": 30, "prompt_n": 8, "prompt_ms": 1.0,
                                                 "predicted_n": 4, "predicted_ms": 2.0}))
    with ScriptedFakeServer(replies=[reply]) as fake:
        outcome, events, _, _ = run_against(fake, 2)
    decisions = of(events, "decision")
    assert len(decisions) == 2
    d = decisions[0]
    assert d["model_id"] == "fake-model" and d["policy"] == "generic" and d["backend"] == "http"
    assert d["captured_size"] == [640, 400] and d["sent_size"] == [644, 392]  # qwen2.5-vl smart resize
    assert d["convention"] == "absolute" and d["resize_rule"] == "qwen2.5-vl"
    assert d["usage"]["cached_tokens"] == 30 and d["timings"]["prompt_ms"] == 1.0
    assert d["actions"] == [{"type": "wait", "seconds": None}]


def test_timeouts_are_pre_dispatch_errors_with_recovery_backoff():
    with ScriptedFakeServer(replies=[Reply.text(WAIT, delay_s=1.5)] * 3 + [Reply.text(WAIT)]) as fake:
        outcome, events, clock, lines = run_against(fake, 1, "agent.idle_backoff_start_s=1")
    errors = of(events, "error")
    assert [e["consecutive"] for e in errors] == [1, 2, 3]
    assert all("did not answer within 0.5 s" in e["error"] and e["cause"] == "timeout" for e in errors)
    assert [e["backoff_s"] for e in errors] == [0.0, 5.0, 10.0]
    assert sum(clock.sleeps) == pytest.approx(15.0)  # the backoffs; the one decision's wait ends the run at once
    assert len(of(events, "decision")) == 1  # timed-out requests do not use up --max-steps


def test_a_dead_server_is_bounded_by_max_seconds_not_max_steps():
    with ScriptedFakeServer(replies=[Reply(status=500, body={"error": {"message": "down"}})]) as fake:
        outcome, events, clock, lines = run_against(fake, 1, "agent.max_seconds=40")
    assert "max-seconds" in outcome.reason
    assert len(of(events, "error")) >= 3 and not of(events, "decision")


def test_http_500_then_recovery():
    replies = [Reply(status=500, body={"error": {"message": "model crashed"}}),
               Reply(status=500, body={"error": {"message": "model crashed"}}), Reply.text(WAIT)]
    with ScriptedFakeServer(replies=replies) as fake:
        outcome, events, clock, _ = run_against(fake, 1)
    errors = of(events, "error")
    assert len(errors) == 2 and all("HTTP 500: model crashed" in e["error"] for e in errors)
    assert errors[1]["backoff_s"] == 5.0
    assert len(of(events, "decision")) == 1


def test_429_waits_what_retry_after_says_and_journals_it():
    replies = [Reply(status=429, body={"error": {"message": "too many"}}, headers={"Retry-After": "7"}),
               Reply.text(WAIT)]
    with ScriptedFakeServer(replies=replies) as fake:
        outcome, events, clock, lines = run_against(fake, 1, "agent.idle_backoff_start_s=1")
    err = of(events, "error")[0]
    assert err["rate_limited"] is True and err["retry_after_s"] == 7 and err["wait_s"] == 7
    assert clock.sleeps[:1] and sum(clock.sleeps[: len(clock.sleeps)]) >= 7
    assert any("rate limited" in line and "7 s" in line for line in lines)
    assert len(of(events, "decision")) == 1


def test_truncated_json_is_a_pre_dispatch_error():
    body = json.dumps(completion(WAIT))
    with ScriptedFakeServer(replies=[Reply(body=body[:40]), Reply.text(WAIT)]) as fake:
        outcome, events, _, _ = run_against(fake, 1)
    errors = of(events, "error")
    assert len(errors) == 1 and "not valid JSON" in errors[0]["error"]
    assert len(of(events, "decision")) == 1


def test_slow_answer_inside_the_timeout_is_a_decision_with_its_latency():
    with ScriptedFakeServer(replies=[Reply.text(WAIT, delay_s=0.3)]) as fake:
        outcome, events, _, _ = run_against(fake, 1, "policy.request_timeout_s=5")
    (d,) = of(events, "decision")
    assert d["latency_s"] >= 0.3 and not of(events, "error")


def test_several_served_models_need_model_and_model_is_used():
    with ScriptedFakeServer(models=["qwen-a", "qwen-b"]) as fake:
        with pytest.raises(UserError, match=r"serves 2 models; choose one with --model ID: qwen-a, qwen-b"):
            run_against(fake, 1)
        outcome, events, _, _ = run_against(fake, 1, "policy.model=qwen-b")
        assert fake.chat_requests[-1]["model"] == "qwen-b"
    assert of(events, "decision")[0]["model_id"] == "qwen-b"


def test_reasoning_is_recorded_and_never_sent_back():
    replies = [Reply.text('<think>secret plan A</think>{"thought": "visible", "action": {"type": "wait"}}',
                          reasoning="hidden chain B")]
    with ScriptedFakeServer(replies=replies) as fake:
        outcome, events, _, _ = run_against(fake, 3)
        sent = json.dumps(fake.chat_requests)
    d = of(events, "decision")[0]
    assert "hidden chain B" in d["reasoning"] and "secret plan A" in d["reasoning"]
    assert d["thought"] == "visible"
    assert len(fake.chat_requests) == 3
    assert "hidden chain B" not in sent and "secret plan A" not in sent


def test_unparseable_answers_are_invalid_actions_shown_next_time():
    with ScriptedFakeServer(replies=[Reply.text("I would click the button."), Reply.text(WAIT)]) as fake:
        outcome, events, _, _ = run_against(fake, 2)
        second = fake.chat_requests[1]["messages"][-1]["content"][0]["text"]
    err = of(events, "error")[0]
    assert err["cause"] == "unparseable" and "no JSON action found" in err["error"]
    assert "ERROR: unparseable: no JSON action found" in second  # the latest result is shown next time


def _rate_limited(value: str) -> Reply:
    return Reply(status=429, body={"error": {"message": "too many"}}, headers={"Retry-After": value})


@pytest.mark.parametrize("value,wait,why", [("0", 1.0, "raised to the 1 s minimum"),
                                            ("-5", 1.0, "raised to the 1 s minimum"),
                                            ("86400", 300.0, "capped to the 300 s backoff cap"),
                                            ("1e12", 300.0, "capped to the 300 s backoff cap"),
                                            ("nan", 10.0, "no delay given")])
def test_a_bad_retry_after_never_makes_conway_hammer_or_stall(value, wait, why):
    with ScriptedFakeServer(replies=[_rate_limited(value), Reply.text(WAIT)]) as fake:
        outcome, events, clock, lines = run_against(fake, 1, "agent.idle_backoff_start_s=1")
        requests = len(fake.chat_requests)
    err = of(events, "error")[0]
    assert err["wait_s"] == wait and why in err["why"], err
    assert clock.sleeps and sum(clock.sleeps) >= wait
    assert requests == 2  # one 429, one answer: nothing sent while waiting
    assert any(f"waiting {wait:g} s" in line and why in line for line in lines)


def test_repeated_429s_count_toward_recovery_backoff():
    with ScriptedFakeServer(replies=[_rate_limited("0")] * 5 + [Reply.text(WAIT)]) as fake:
        outcome, events, clock, lines = run_against(fake, 1, "agent.idle_backoff_start_s=1")
    errors = of(events, "error")
    assert [e["consecutive"] for e in errors] == [1, 2, 3, 4, 5]
    assert [e["wait_s"] for e in errors] == [1, 5, 10, 20, 40]  # 1 s floor, then 5, 10, 20 … backoff
    assert "recovery backoff" in errors[1]["why"]


def test_rate_limited_cycles_do_not_use_up_max_steps():
    with ScriptedFakeServer(replies=[_rate_limited("1"), _rate_limited("1"), Reply.text(WAIT)]) as fake:
        outcome, events, clock, lines = run_against(fake, 3, "agent.idle_backoff_start_s=1")
    assert len(of(events, "error")) == 2
    assert len(of(events, "decision")) == 3  # three real decisions, as --max-steps 3 asked
    assert "max-steps budget (3)" in outcome.reason


def test_help_says_max_steps_counts_model_decisions():
    from conway.cli.main import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    text = " ".join(sub.choices["run"].format_help().split())
    assert "stop after the model has made N decisions" in text and "rate limits" in text
