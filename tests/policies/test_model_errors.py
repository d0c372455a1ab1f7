"""The real-model path explains itself (issue 10) where a scripted FAKE server or the mock drives it:
length refusals and cut-off answers say so, waits are bounded and journaled after the fact, no sleep
past the end of a budget, and a run that never got a valid decision is its own outcome (exit 3).

(The same paths through real llama.cpp: test_context_fit_llama.py.)"""

from __future__ import annotations

import json

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer, completion
from helpers.loop_harness import of, run_script
from helpers.loop_harness import run_against as _run_against

from conway.cli.main import main
from conway.loop.control import SimulatedClock
from conway.loop.ending import RunEnd
from conway.store.journal import read_journal

WAIT = '{"thought": "nothing to do", "action": {"type": "wait"}}'
EXCEEDED = {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 5234, "n_ctx": 4096,
                      "message": "request (5234 tokens) exceeds the available context size (4096 tokens), try "
                                 "increasing it"}}


def run_against(fake: ScriptedFakeServer, steps: int, *extra: str):
    return _run_against(fake, steps, *extra, timeout_s=5)


# --- 1. a length refusal is "context exceeded (N > M tokens)", not a parse error -------------------


def test_http_400_for_length_is_context_exceeded_with_the_numbers():
    with ScriptedFakeServer(replies=[Reply(status=400, body=EXCEEDED), Reply.text(WAIT)]) as fake:
        outcome, events, _, lines = run_against(fake, 2)
    err = of(events, "error")[0]
    assert err["cause"] == "context exceeded"
    assert "context exceeded (5234 > 4096 tokens)" in err["error"]
    assert any("context exceeded (5234 > 4096 tokens)" in line for line in lines)
    assert err["context"]["budget_tokens"] > 0  # what the prompt was sized for is journaled with it


def test_a_plain_message_form_of_the_length_refusal_is_recognised_too():
    body = {"error": {"message": "request (9000 tokens) exceeds the available context size (8192 tokens)"}}
    with ScriptedFakeServer(replies=[Reply(status=400, body=body), Reply.text(WAIT)]) as fake:
        outcome, events, _, _ = run_against(fake, 1)
    assert "context exceeded (9000 > 8192 tokens)" in of(events, "error")[0]["error"]


@pytest.mark.parametrize("body, numbers", [
    ({"object": "error", "type": "BadRequestError", "code": 400,  # vLLM before 0.9: the error at top level
      "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in "
                 "the messages, 1000 in the completion). Please reduce the length of the messages or completion."},
     (5000, 4096)),
    ({"error": {"type": "BadRequestError", "code": 400,
                "message": "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context "
                           "length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500)."}},
     (4500, 4096)),
    ({"error": {"message": "This model's maximum context length is 4096 tokens. However, your request has 4200 input "
                           "tokens. Please reduce the length of the input messages."}}, (4200, 4096)),
    ({"error": {"message": "Input should be a valid string"}}, None),
])
def test_vllm_s_length_refusals_give_their_numbers(body, numbers):
    import httpx

    from conway.policies.backends.http_client import context_exceeded_from

    exceeded = context_exceeded_from(httpx.Response(400, json=body))
    assert (exceeded and (exceeded.n_tokens, exceeded.n_ctx)) == numbers


# --- 2. an answer that stopped at max_tokens says so --------------------------------------------


def test_finish_reason_length_is_output_cut_off_at_max_tokens_everywhere(tmp_path, capsys):
    cut = Reply(body=completion('{"thought": "I see a wind', finish_reason="length"))
    with ScriptedFakeServer(replies=[cut, Reply.text(WAIT)]) as fake:
        outcome, events, _, lines = run_against(fake, 2, "policy.max_tokens=48")
    err = of(events, "error")[0]
    assert err["cause"] == "cut off" and err["error"] == "output cut off at max_tokens (48)"
    assert "invalid JSON" not in json.dumps(events)
    assert any(line.endswith("output cut off at max_tokens (48)") for line in lines)
    decision = of(events, "decision")[0]
    assert decision["truncated"] is True and decision["error_cause"] == "cut off"
    # status shows the last events: the same words
    assert main(["status"]) == 0
    assert "output cut off at max_tokens (48)" in capsys.readouterr().out


def test_vision_check_reports_and_sheet_say_cut_off(tmp_path):
    cut = Reply(body=completion('{"thought": "the red', finish_reason="length"))
    with ScriptedFakeServer(replies=[cut]) as fake:
        out, sheet = tmp_path / "v.json", tmp_path / "sheet.png"
        code = main(["vision-check", "--samples", "2", "--size", "640x400", "--output", str(out), "--quiet",
                     "--sheet", str(sheet), "--endpoint", fake.base_url, "policy=generic",
                     "policy.structured_output=none", "policy.max_tokens=20"])
    data = json.loads(out.read_text())
    assert code == 3 and data["summary"]["model_errors"] == {"cut off": 2}
    assert all(c["error"] == "output cut off at max_tokens (20)" for c in data["cases"])
    from conway.evals.report_render import render_report
    text = render_report(out)
    assert "output cut off at max_tokens (20)" in text and "2 × cut off" in text
    assert sheet.exists()


# --- 3. waits are bounded, and journaled after they happen ---------------------------------------


def test_a_model_wait_is_capped_and_the_cap_is_shown_to_the_model():
    steps = [{"action": {"type": "wait", "seconds": 1616.76}}, {"action": {"type": "list_dir", "path": "."}}]
    run = run_script(steps, overrides=["agent.max_steps=2", "agent.max_model_wait_s=30"])
    (waited,) = [p for p in run.payloads("result") if "idle_wait_s" in p]
    assert waited["idle_wait_s"] == 30 and waited["capped_at_s"] == 30
    assert sum(run.clock.sleeps) == 30
    space = next(p.text for p in run.policy.last_context.parts if p.name == "action space")
    assert "A wait lasts at most 30 s" in space
    assert any("asked 1616.76 s, capped at 30 s" in line for line in run.lines)


def test_the_cap_defaults_to_the_idle_cap():
    run = run_script([{"action": {"type": "wait", "seconds": 3000}}, {"action": {"type": "list_dir"}}],
                     overrides=["agent.max_steps=2"])
    assert [p["idle_wait_s"] for p in run.payloads("result") if "idle_wait_s" in p] == [60]


def test_the_journal_records_the_time_actually_waited_when_a_stop_cuts_the_wait(conway_home):
    clock = SimulatedClock()

    def stop_after_5s(now: float) -> None:
        if now - 1_000_000.0 >= 5:
            from conway.store.state import StateStore, write_control
            state, _ = StateStore(conway_home / "state.json", conway_home / "state.previous.json").load()
            write_control(conway_home / "control.json", state["session"], "stop")

    clock.on_sleep = stop_after_5s
    run = run_script([{"action": {"type": "wait", "seconds": 50}}], overrides=["agent.max_steps=3"], clock=clock)
    (res,) = [p for p in run.payloads("result") if "idle_wait_s" in p]
    assert res["idle_wait_s"] == 5 and res["planned_wait_s"] == 50 and res["ended_by"] == "stop requested"
    kinds = run.kinds()
    assert kinds.index("result") > kinds.index("decision")  # written after the wait, not before


# --- 4. no sleeping past the end ---------------------------------------------------------------------


def test_the_last_decision_s_wait_is_not_slept_and_retries_still_happen_before_it():
    # errors do not use up --max-steps (answers do): their backoffs are real retries; the one decision
    # allowed is a wait, and after it the run is over, so nothing is slept for it
    run = run_script([{"error": "HTTP 500"}] * 3 + [{"action": {"type": "wait", "seconds": 40}}],
                     overrides=["agent.max_steps=1"])
    assert run.outcome.reason == "max-steps budget (1) reached"
    assert sum(run.clock.sleeps) == 15  # backoffs 5 and 10 before the answer; its 40 s wait is not slept
    (res,) = [p for p in run.payloads("result") if "idle_wait_s" in p]
    assert res["idle_wait_s"] == 0 and res["ended_by"] == "max-steps budget (1) reached"


def test_a_backoff_that_would_outlast_max_seconds_ends_the_run_at_once():
    run = run_script([{"error": "HTTP 500"}] * 10, overrides=["agent.max_seconds=30"])
    assert run.outcome.reason.startswith("max-seconds budget (30 s) reached")
    assert sum(run.clock.sleeps) == 15  # 5 + 10; the 20 s backoff would end past 30 s: not slept
    assert not any("retrying in 20" in line for line in run.lines)


def test_a_wait_that_would_outlast_max_seconds_ends_the_run_at_once():
    run = run_script([{"action": {"type": "wait", "seconds": 50}}], overrides=["agent.max_seconds=20",
                                                                               "agent.max_model_wait_s=50"])
    assert run.outcome.reason.startswith("max-seconds budget (20 s) reached")
    assert sum(run.clock.sleeps) == 0


# --- 7. never answered is its own outcome ---------------------------------------------------------------


def test_a_run_whose_model_never_answers_exits_3_and_says_why(initialized_home, capsys):
    fail = Reply(status=500, body={"error": {"message": "model crashed"}})
    with ScriptedFakeServer(replies=[fail]) as fake:
        code = main(["run", "--endpoint", fake.base_url, "--max-seconds", "1", "observe.source=synthetic",
                     "policy.structured_output=none", "agent.recovery_backoff_start_s=0.01",
                     "agent.recovery_backoff_max_s=0.02"])
    out = capsys.readouterr().out
    assert code == 3
    end = [e for e in read_journal(initialized_home / "journal").events
           if e["kind"] == "session" and e["payload"].get("event") == "end"][-1]["payload"]
    n = end["steps"]
    assert n >= 2 and end["model_errors"] == {"HTTP 500": n} and end["valid_decisions"] == 0
    assert f"no valid decision in {n} step(s): {n} × HTTP 500" in out


def test_a_task_session_that_never_got_a_decision_is_not_verified_0_of_n_but_exit_3(tmp_path, initialized_home,
                                                                                      capsys):
    task = tmp_path / "task.md"
    task.write_text("---\nacceptance:\n  - file_exists: out.txt\n---\nWrite out.txt.\n")
    out = tmp_path / "session.json"
    replies = [Reply(status=500, body={"error": {"message": "boom"}}), Reply(status=503, body="busy"),
               Reply(body=completion("no json here"))]
    with ScriptedFakeServer(replies=replies) as fake:
        code = main(["start", "--task-file", str(task), "--execute", "--endpoint", fake.base_url, "--max-steps", "4",
                     "--output", str(out), "observe.source=synthetic", "policy.structured_output=none",
                     "agent.recovery_backoff_start_s=0.01", "agent.recovery_backoff_max_s=0.02"])
    assert code == 3
    data = json.loads(out.read_text())
    s = data["summary"]
    assert data["status"] == "no valid decision" and data["exit_code"] == 3
    # failed requests do not use up --max-steps (4 answers do): 6 steps in all
    assert s["model_errors"] == {"HTTP 500": 1, "HTTP 503": 1, "unparseable": 4}
    assert s["no_valid_decision"] == "no valid decision in 6 step(s): 4 × unparseable, 1 × HTTP 500, 1 × HTTP 503"
    printed = capsys.readouterr().out
    assert "no valid decision in 6 step(s)" in printed
    from conway.evals.report_render import render_report
    assert "1 × HTTP 500" in render_report(out)


# --- 25.3: failures that retrying cannot cure end the run ----------------------------------------


@pytest.mark.parametrize("reply, cause", [
    (Reply(status=501, body={"error": {"message": "not implemented"}}), "HTTP 501"),
    (Reply(status=404, body={"error": {"message": "model 'nope' not found"}}), "HTTP 404"),
    (Reply(status=400, body=EXCEEDED), "context exceeded"),
])
def test_a_failure_retrying_cannot_cure_ends_the_run_after_three_in_a_row(reply, cause):
    with ScriptedFakeServer(replies=[reply]) as fake:  # every request fails the same way
        outcome, events, clock, lines = run_against(fake, 3, "agent.max_seconds=100000")
        asked = len(fake.chat_requests)
    assert outcome.end is RunEnd.PERMANENT_FAILURE and asked == 3
    assert f"failed 3 times in a row ({cause}), which retrying cannot cure" in outcome.reason
    assert sum(clock.sleeps) < 60  # no 300 s backoffs towards an end already decided
    assert any("failed 3 times in a row" in line for line in lines)
    assert [e["cause"] for e in of(events, "error")] == [cause] * 3


def test_transient_failures_keep_backing_off_and_a_different_one_restarts_the_count():
    replies = [Reply(status=501, body={}), Reply(status=501, body={}), Reply(status=500, body={}),
               Reply(status=501, body={}), Reply(status=501, body={}), Reply.text(WAIT)]
    with ScriptedFakeServer(replies=replies) as fake:
        outcome, events, _, _ = run_against(fake, 1)
    assert outcome.end is RunEnd.MAX_STEPS
    assert [e["cause"] for e in of(events, "error")] == ["HTTP 501", "HTTP 501", "HTTP 500", "HTTP 501", "HTTP 501"]


FAST = ["observe.source=synthetic", "policy.structured_output=none", "agent.idle_backoff_start_s=0.01",
        "agent.idle_backoff_max_s=0.02", "agent.recovery_backoff_start_s=0.01", "agent.recovery_backoff_max_s=0.02"]
NOT_FOUND = Reply(status=404, body={"error": {"message": "model 'nope'\nnot found"}})
NOT_FOUND_ADVICE = "check --endpoint / policy.endpoint and policy.model"


def _session_end(home) -> dict:
    return [e for e in read_journal(home / "journal").events
            if e["kind"] == "session" and e["payload"].get("event") == "end"][-1]["payload"]


def test_a_run_the_model_server_stopped_after_valid_decisions_exits_1_with_the_reason_and_advice(initialized_home,
                                                                                                 capsys):
    with ScriptedFakeServer(replies=[Reply.text(WAIT), Reply.text(WAIT), NOT_FOUND]) as fake:
        code = main(["run", "--endpoint", fake.base_url, "--max-steps", "10", *FAST])
        asked = len(fake.chat_requests)
    err = capsys.readouterr().err
    assert code == 1 and asked == 5  # two answers, then three 404s in a row end the run
    end = _session_end(initialized_home)
    assert end["valid_decisions"] == 2 and end["model_errors"] == {"HTTP 404": 3}
    (line,) = err.splitlines()  # one line, the server's two-line message folded into it
    assert line.startswith("conway: error: the run ended: the model request failed 3 times in a row (HTTP 404), "
                           "which retrying cannot cure: ")
    assert "model 'nope' not found" in line and NOT_FOUND_ADVICE in line and "(journal: " in line


def test_a_run_the_model_server_stopped_before_any_valid_decision_exits_1_too(initialized_home, capsys):
    # it exited 3, where the README says 1 and a server refusing every path (discovery included) gave 1
    with ScriptedFakeServer(replies=[NOT_FOUND]) as fake:
        code = main(["run", "--endpoint", fake.base_url, "--max-steps", "10", *FAST])
    captured = capsys.readouterr()
    assert code == 1
    assert "no valid decision in 3 step(s): 3 × HTTP 404" in captured.out
    (line,) = captured.err.splitlines()
    assert line.startswith("conway: error: the run ended: the model request failed 3 times in a row (HTTP 404)")
    assert NOT_FOUND_ADVICE in line


def test_an_html_error_page_is_its_words_in_the_one_line(initialized_home, capsys):
    # a plain web server's 501 page: its markup filled the one line
    page = ("<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Error response</title>\n"
            "<style>body { color: red }</style></head>\n<body>\n<h1>Error response</h1>\n<p>Error code: 501</p>\n"
            "<p>Message: Unsupported method (&#x27;POST&#x27;).</p>\n</body>\n</html>\n")
    with ScriptedFakeServer(replies=[Reply(status=501, body=page, content_type="text/html")]) as fake:
        code = main(["run", "--endpoint", fake.base_url, "--max-steps", "10", *FAST])
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 1
    assert "answered HTTP 501: Error response Error code: 501 Message: Unsupported method ('POST')." in line
    assert "<" not in line and "color: red" not in line


@pytest.mark.parametrize("answers, expected", [(1, 1), (0, 1)])
def test_a_task_session_the_model_server_stopped_exits_1_with_or_without_valid_decisions(tmp_path, initialized_home,
                                                                                     capsys, answers, expected):
    out = tmp_path / "session.json"
    with ScriptedFakeServer(replies=[Reply.text(WAIT)] * answers + [NOT_FOUND]) as fake:
        code = main(["start", "--task", "do it", "--execute", "--endpoint", fake.base_url, "--max-steps", "10",
                     "--output", str(out), *FAST])
    err = capsys.readouterr().err
    data = json.loads(out.read_text())
    assert code == expected and data["exit_code"] == expected
    assert data["summary"]["valid_decisions"] == answers and data["summary"]["model_errors"] == {"HTTP 404": 3}
    (line,) = err.splitlines()
    assert line.startswith("conway: error: the session ended: the model request failed 3 times in a row "
                           "(HTTP 404)") and NOT_FOUND_ADVICE in line and "(journal: " in line
    if not answers:
        assert data["status"] == "no valid decision"
