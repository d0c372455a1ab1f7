"""memory.md past its threshold in the real loop: the model writes the summary, or the marked truncation says why not.

The model is the scripted FAKE OpenAI-compatible server (tests/fixtures/scripted_server.py): it answers the
decisions with a file listing and the summary request with what each test needs (a summary, HTTP 500, a slow
answer, an empty or too long one, one that drops a pinned line). Its answers are the test's; the loop, the
HTTP client, the journal and the files are the real ones. The stop is real too: `conway stop`'s control.json
written from another thread while the summary request is in flight.
"""

from __future__ import annotations

import hashlib
import threading
import time

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer
from helpers.loop_harness import of, run_against

from conway.loop.ending import RunEnd
from conway.policies.families import FAMILIES
from conway.prompt.memory import SUMMARY_MARK, TRUNCATION_MARK, Memory
from conway.store.home import resolve_home
from conway.store.state import read_json, write_control

LIST = '{"thought": "look around", "action": {"type": "list_dir", "path": "."}}'
PIN = "!pin the owner asked: never touch ~/thesis"
SUMMARY = f"Steps 0-11: early listings of the scratch folder, nothing changed; unsure whether notes.txt exists.\n{PIN}"
MEMORY = ["memory.max_chars=500", "memory.keep_chars=300"]
TARGET = Memory(resolve_home("/nonexistent").memory, resolve_home("/nonexistent").memory_previous,
                500, 300).summary_target()
"""The summary's target: keep_chars less its header line."""


def _seed_memory() -> str:
    """Owner notes with a pinned line, just under the threshold: the run's first steps push it past."""
    home = resolve_home(None)
    home.root.mkdir(parents=True, exist_ok=True)
    lines = ["# notes", PIN] + [f"- step {i}: list_dir(path='.') → ok, nothing new" for i in range(12)]
    text = "\n".join(lines) + "\n"
    while len(text) > 480:
        lines.pop(2)
        text = "\n".join(lines) + "\n"
    home.memory.write_text(text, encoding="utf-8")
    return text


def _is_summary(body: dict) -> bool:
    content = body["messages"][0]["content"]
    return isinstance(content, str) and content.startswith("You keep the memory of a computer-use agent")


def _responder(summary_reply: Reply):
    return lambda body: summary_reply if _is_summary(body) else Reply.text(LIST)


def _run(summary_reply: Reply, steps: int = 4, *extra: str, timeout_s: float = 30.0):
    seeded = _seed_memory()
    with ScriptedFakeServer(responder=_responder(summary_reply)) as fake:
        outcome, events, _clock, lines = run_against(fake, steps, *MEMORY, *extra, timeout_s=timeout_s)
        requests = list(fake.chat_requests)
        hangups = list(fake.hangups)
    return seeded, outcome, events, lines, requests, hangups


def _memory_events(events, name):
    return [p for p in of(events, "memory") if p["event"] == name]


def test_the_acting_model_writes_the_summary_after_the_steps_result_and_the_journal_shows_it():
    seeded, outcome, events, lines, requests, _ = _run(Reply.text(SUMMARY))
    home = resolve_home(None)
    assert outcome.steps == 4 and outcome.valid_decisions == 4  # the run went on after the summary
    (asked,) = [b for b in requests if _is_summary(b)]
    # text only, for every family: one user turn, no image, no grammar, no structured output; bounded
    assert [m["role"] for m in asked["messages"]] == ["user"] and isinstance(asked["messages"][0]["content"], str)
    assert "grammar" not in asked and "response_format" not in asked
    assert asked["max_tokens"] == 150 and asked["temperature"] == 0.0
    prompt = asked["messages"][0]["content"]
    assert seeded.rstrip() in prompt and f"The pinned lines, to copy exactly:\n{PIN}" in prompt

    (request,) = _memory_events(events, "request")
    assert request["summariser"] == "the acting model" and request["model_id"] == "fake-model"
    assert request["prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest()
    assert request["prompt_chars"] == len(prompt) and request["target_chars"] == TARGET < 300
    assert request["max_tokens"] == 150 and request["timeout_s"] == 120
    (done,) = _memory_events(events, "compacted")
    assert done["outcome"] == "summarised" and done["reason"] is None
    assert done["output_chars"] == len(SUMMARY) and done["prompt_sha256"] == request["prompt_sha256"]
    assert done["input_chars"] == request["input_chars"] > 500 and done["duration_s"] >= 0
    assert done["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}

    text = home.memory.read_text()
    assert text.startswith(done["memory"]) and done["memory_chars"] == len(done["memory"])
    assert text.startswith(SUMMARY_MARK) and done["memory"].split("\n", 1)[1] == SUMMARY + "\n"
    assert home.memory_previous.read_text().startswith(seeded)  # the replaced text, as before

    # between cycles: after the last result of the step before, before the next step's observation
    kinds = [(e["kind"], e["payload"].get("event")) for e in events]
    at = kinds.index(("memory", "request"))
    assert kinds[at - 1][0] == "result" and kinds[at + 1] == ("memory", "compacted")
    assert kinds[at + 2][0] == "observation"
    # the next decision reads the new memory
    after = [b for b in requests[requests.index(asked) + 1:] if not _is_summary(b)]
    assert after and "Steps 0-11: early listings" in str(after[0]["messages"])
    assert any("memory.md summarised" in line for line in lines)


@pytest.mark.parametrize("reply, why", [
    (Reply(status=500, body={"error": {"message": "the summariser fell over"}}), "failed: "),
    (Reply.text(""), "the summary was empty"),
    (Reply.text("x" * (TARGET + 1)), f"the summary is {TARGET + 1} characters, over the target of {TARGET}"),
    (Reply.text("Steps 0-11 listed the folder.", finish_reason="length"), "cut off at its max_tokens (150"),
    (Reply.text("Steps 0-11 listed the folder; the owner's wish is gone."), "dropped 1 pinned line(s)"),
], ids=["http-500", "empty", "too-long", "cut-off", "drops-a-pin"])
def test_a_refused_or_failed_summary_falls_back_to_the_marked_truncation_with_the_reason(reply, why):
    seeded, outcome, events, _lines, _requests, _ = _run(reply)
    home = resolve_home(None)
    assert outcome.steps == 4 and outcome.valid_decisions == 4 and not outcome.failed
    (done,) = _memory_events(events, "compacted")
    assert done["outcome"] == "truncated" and why in done["reason"], done["reason"]
    if reply.status == 500:
        assert "HTTP 500" in done["reason"] and done["output_chars"] is None
    text = home.memory.read_text()
    assert text.startswith(done["memory"]) and text.startswith(TRUNCATION_MARK)
    header = text.split("\n", 1)[0]
    assert f"({done['reason'][:60]}" in header  # the mark says why (cut to fit), the journal says all of it
    assert PIN in text and len(done["memory"]) <= 300  # the pinned line survives the fallback
    assert home.memory_previous.read_text().startswith(seeded)


def test_a_summary_past_its_deadline_is_aborted_and_memory_truncated_saying_so():
    started = time.monotonic()
    _seeded, outcome, events, _lines, _requests, hangups = _run(
        Reply.text(SUMMARY, delay_s=20), 4, "memory.summary_timeout_s=0.5")
    assert time.monotonic() - started < 15 and outcome.steps == 4
    (done,) = _memory_events(events, "compacted")
    assert done["outcome"] == "truncated"
    assert done["reason"] == "the summary request timed out after 0.5 s (memory.summary_timeout_s)"
    assert done["duration_s"] < 3  # the deadline, a control poll and the abort: not the model's 20 s
    assert hangups == ["/v1/chat/completions"]  # the request's socket was shut down, not left running


def test_a_stop_during_the_summary_request_ends_the_run_within_about_a_second():
    seeded = _seed_memory()
    home = resolve_home(None)
    result: dict = {}

    def stop_during_the_summary(fake):
        deadline = time.monotonic() + 30
        while not any(_is_summary(b) for b in list(fake.chat_requests)) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # well inside the request
        result["stop_at"] = time.monotonic()
        write_control(home.control, read_json(home.state)["session"], "stop")

    with ScriptedFakeServer(responder=_responder(Reply.text(SUMMARY, delay_s=60))) as fake:
        helper = threading.Thread(target=stop_during_the_summary, args=(fake,))
        helper.start()
        outcome, events, _clock, _lines = run_against(fake, 10, *MEMORY, timeout_s=120)
        ended = time.monotonic()
        helper.join()
        deadline = time.monotonic() + 5
        while not fake.hangups and time.monotonic() < deadline:
            time.sleep(0.01)
        hangups = list(fake.hangups)
    assert ended - result["stop_at"] < 5, ended - result["stop_at"]  # about the control poll; the model takes 60 s
    assert outcome.end is RunEnd.STOP_REQUESTED and outcome.reason == "stop requested"
    assert hangups == ["/v1/chat/completions"]
    (done,) = _memory_events(events, "compacted")
    assert done["outcome"] == "aborted" and "stop requested" in done["reason"] and done["memory"] is None
    assert home.memory.read_text().startswith(seeded)  # left as it was: compacted on the next run
    assert not home.memory_previous.exists()
    assert events[-1]["kind"] == "session" and events[-1]["payload"]["event"] == "end"


def test_a_separate_summariser_endpoint_writes_it_and_the_acting_model_only_decides():
    _seed_memory()
    with ScriptedFakeServer(models=["summary-model"], replies=[Reply.text(SUMMARY, model="summary-model")]) as other, \
            ScriptedFakeServer(replies=[Reply.text(LIST)]) as acting:
        outcome, events, _clock, _lines = run_against(acting, 4, *MEMORY, f"memory.summariser.endpoint={other.base_url}")
        acting_requests, other_requests = list(acting.chat_requests), list(other.chat_requests)
    assert outcome.steps == 4 and not any(_is_summary(b) for b in acting_requests)
    (asked,) = other_requests
    assert _is_summary(asked) and asked["model"] == "summary-model"
    (request,) = _memory_events(events, "request")
    assert request["summariser"] == "memory.summariser" and request["model_id"] == "summary-model"
    (done,) = _memory_events(events, "compacted")
    assert done["outcome"] == "summarised" and done["model_id"] == "summary-model"


def test_memory_summarise_false_truncates_without_asking():
    _seeded, outcome, events, _lines, requests, _ = _run(Reply.text(SUMMARY), 4, "memory.summarise=false")
    assert not any(_is_summary(b) for b in requests) and not _memory_events(events, "request")
    (done,) = _memory_events(events, "compacted")
    assert done["outcome"] == "truncated" and done["reason"] == "no summariser: memory.summarise=false"
    assert done["duration_s"] is None and PIN in resolve_home(None).memory.read_text()


def test_memory_events_are_named_by_status_and_the_viewer_and_stay_out_of_exported_steps():
    from conway.experience.steps import steps_from_events
    from conway.session.app import _event_summary
    from conway.view.sessions import load_sessions

    _seeded, _outcome, events, _lines, _requests, _ = _run(Reply.text(""))
    home = resolve_home(None)
    request = next(e for e in events if e["kind"] == "memory" and e["payload"]["event"] == "request")
    compacted = next(e for e in events if e["kind"] == "memory" and e["payload"]["event"] == "compacted")
    assert _event_summary(request) == "summary requested (fake-model)"
    assert _event_summary(compacted) == "memory truncated (fake-model): the summary was empty"
    records = steps_from_events(events)
    assert len(records) == 4 and all(r["decision"] for r in records)  # no step made of a memory event
    (session,) = load_sessions(home.journal_dir, home.root)[0]
    shown = [r for r in session.recoveries if r["what"] == "memory"]
    assert len(shown) == 1 and shown[0]["detail"].startswith("truncated (the summary was empty), ")
    assert shown[0]["step"] == compacted["step"]


@pytest.mark.parametrize("overrides, says", [
    (["memory.summariser.endpoint=http://127.0.0.1:9/v1"], "memory.summariser: cannot reach the model server at "
                                                           "http://127.0.0.1:9/v1"),
    (["memory.summariser.endpoint=http://127.0.0.1:9/v1", "memory.summariser.api_key_env=CONWAY_TEST_UNSET_KEY"],
     "memory.summariser: api_key_env names CONWAY_TEST_UNSET_KEY, which is not set in the environment"),
    (["memory.summariser.model_path=/nonexistent/summary.gguf"],
     "memory.summariser: model file /nonexistent/summary.gguf does not exist"),
    (["memory.summariser.endpoint=http://127.0.0.1:9/v1", "memory.summariser.model_path=/x.gguf"],
     "memory.summariser: set endpoint or model_path, not both"),
    (["memory.summariser.api_key_env=SOME_KEY"], "memory.summariser.api_key_env is for an endpoint"),
    (["memory.summarise=maybe"], "memory.summarise: Input should be a valid boolean"),
])
def test_a_bad_summariser_is_refused_at_the_start_in_a_clear_error_never_a_traceback(initialized_home, overrides,
                                                                                         says):
    from conftest import run_cli
    r = run_cli("run", "--mock", "--max-steps", "1", *overrides, env={"CONWAY_TEST_UNSET_KEY": ""}, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) <= 2, r.stderr  # config errors: a title + the key
    assert not (initialized_home / "journal").exists() or not list((initialized_home / "journal").glob("*.jsonl"))


@pytest.mark.slow
def test_sigterm_to_a_real_run_during_the_summary_stops_it_within_about_a_second(initialized_home):
    import os
    import signal
    import subprocess
    import sys

    from conftest import REPO

    seeded = _seed_memory()
    with ScriptedFakeServer(responder=_responder(Reply.text(SUMMARY, delay_s=60))) as fake:
        env = {**os.environ, "CONWAY_HOME": str(initialized_home)}
        agent = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", "--endpoint", fake.base_url,
                                  "observe.source=synthetic", "tools.enabled=[files]", "policy.structured_output=none",
                                  *MEMORY], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, text=True)
        try:
            deadline = time.monotonic() + 60
            while not any(_is_summary(b) for b in list(fake.chat_requests)) and time.monotonic() < deadline \
                    and agent.poll() is None:
                time.sleep(0.02)
            assert any(_is_summary(b) for b in fake.chat_requests), agent.communicate(timeout=10)
            time.sleep(0.3)
            sent = time.monotonic()
            agent.send_signal(signal.SIGTERM)
            code = agent.wait(timeout=20)  # the summary would come only after 60 s
            latency = time.monotonic() - sent
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
        _out, err = agent.communicate()
        deadline = time.monotonic() + 5
        while not fake.hangups and time.monotonic() < deadline:
            time.sleep(0.01)
        hangups = list(fake.hangups)
    assert code == 0 and "Traceback" not in err, err
    assert latency < 5, latency
    assert hangups == ["/v1/chat/completions"]
    assert read_json(initialized_home / "state.json")["stop_reason"] == "terminated (SIGTERM)"
    from conway.store.journal import read_journal
    done = [e["payload"] for e in read_journal(initialized_home / "journal").events
            if e["kind"] == "memory" and e["payload"]["event"] == "compacted"]
    assert [d["outcome"] for d in done] == ["aborted"] and "terminated (SIGTERM)" in done[0]["reason"]
    assert (initialized_home / "memory.md").read_text().startswith(seeded)


def test_the_summary_never_outlasts_max_seconds():
    """A real clock: the summary's deadline is what --max-seconds left, then the budget ends the run."""
    from conway.config import load_config
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home
    from conway.store.journal import read_journal

    home = resolve_home(None)
    init_home(home)
    home.memory.write_text("# notes\n" + "".join(f"- step {i}: list_dir(path='.') → ok\n" for i in range(20)))
    with ScriptedFakeServer(responder=_responder(Reply.text(SUMMARY, delay_s=30))) as fake:
        cfg = load_config(home.config, ["policy=generic", f"policy.endpoint={fake.base_url}", "observe.source=synthetic",
                                        "policy.structured_output=none", "agent.max_seconds=2", *MEMORY])
        started = time.monotonic()
        outcome, session = run_agent(home, cfg, RunRequest(single_session=False), say=lambda _s: None)
        took = time.monotonic() - started
    assert took < 8 and outcome.end is RunEnd.MAX_SECONDS, (took, outcome.reason)
    done = [e["payload"] for e in read_journal(home.journal_dir).events
            if e["session"] == session and e["kind"] == "memory" and e["payload"]["event"] == "compacted"]
    assert done[0]["outcome"] == "truncated" and "(what --max-seconds left)" in done[0]["reason"], done


@pytest.mark.parametrize("kind", list(FAMILIES))  # every registered family, a new one too
def test_every_family_asks_for_the_summary_in_the_same_text_only_request(kind):
    """The summary bypasses the family's adapter: no trained prompt, no action grammar, no image, one user turn."""
    from conway.config import load_config
    from conway.policies.factory import build_policy
    from conway.policies.summariser import build_summariser

    home = resolve_home(None)
    with ScriptedFakeServer(replies=[Reply.text(SUMMARY)]) as fake:
        cfg = load_config(None, [f"policy.kind={kind}", f"policy.endpoint={fake.base_url}",
                                 "policy.structured_output=auto", "policy.seed=7"])
        policy = build_policy(cfg, home)
        try:
            model = build_summariser(cfg, home, policy)
            assert model is not None and model.where == "the acting model" and model.model_id == "fake-model"
            answer = model.complete_text("Summarise this memory: - step 1: ok", 99)
        finally:
            policy.close()
        (body,) = fake.chat_requests  # no structured-output probe either: nothing is constrained
    assert answer.text == SUMMARY and answer.finish_reason == "stop"
    assert body["messages"] == [{"role": "user", "content": "Summarise this memory: - step 1: ok"}]
    assert body["max_tokens"] == 99 and body["temperature"] == 0.0 and body["seed"] == 7
    assert not {"grammar", "response_format", "tools"} & set(body)


def test_the_summarisers_key_never_reaches_the_shell(monkeypatch):
    from helpers.loop_harness import run_script
    monkeypatch.setenv("SUMMARISER_KEY", "not-for-the-shell-1234")  # a name no credential pattern catches
    with ScriptedFakeServer(models=["summary-model"]) as other:
        run = run_script([{"action": {"type": "shell", "command": "env"}}], overrides=[
            "agent.max_steps=1", f"memory.summariser.endpoint={other.base_url}",
            "memory.summariser.api_key_env=SUMMARISER_KEY", "tools.shell_env_keep=[SUMMARISER_KEY]"])
    (result,) = [p for p in run.payloads("result") if p["action"]["type"] == "shell"]
    assert result["ok"] and "PATH=" in result["output"]
    assert "SUMMARISER_KEY" not in result["output"] and "not-for-the-shell" not in result["output"]


def test_exports_redact_the_summarisers_key_too(monkeypatch, initialized_home):
    from conway.cli.commands import _known_secrets
    from conway.store.home import resolve_home as home_of
    monkeypatch.setenv("SUMMARISER_KEY", "summary-secret-98765")
    (initialized_home / "config.yaml").write_text("memory:\n  summariser:\n    endpoint: http://127.0.0.1:9/v1\n"
                                                  "    api_key_env: SUMMARISER_KEY\n")
    assert "summary-secret-98765" in _known_secrets(home_of(str(initialized_home)))


@pytest.mark.parametrize("edit", ["append", "rewrite"])
def test_the_owners_edit_during_the_summary_is_kept(edit):
    """An appended line follows the new summary; any other edit wins and the compaction is skipped (retried later)."""
    _seed_memory()
    home = resolve_home(None)
    mine = "- the owner, meanwhile: the printer is in room 4\n"

    def responder(body):
        if not _is_summary(body):
            return Reply.text(LIST)
        if edit == "append":
            with open(home.memory, "a", encoding="utf-8") as fh:
                fh.write(mine)
        else:
            home.memory.write_text("# rewritten by the owner\n" + mine, encoding="utf-8")
        return Reply.text(SUMMARY)

    with ScriptedFakeServer(responder=responder) as fake:
        outcome, events, _clock, _lines = run_against(fake, 3, *MEMORY)
    assert outcome.steps == 3
    done = _memory_events(events, "compacted")
    text = home.memory.read_text()
    if edit == "append":
        assert [d["outcome"] for d in done] == ["summarised"]
        assert text.startswith(done[0]["memory"]) and done[0]["memory"].endswith(SUMMARY + "\n" + mine)
    else:
        assert done[0]["outcome"] == "skipped" and "edited during the summary" in done[0]["reason"]
        assert done[0]["memory"] is None and text.startswith("# rewritten by the owner\n" + mine)
        assert not home.memory_previous.exists()


def test_a_summary_prompt_over_the_models_window_is_refused_before_it_is_sent():
    from conway.policies.backends.http_client import HTTPBackend, OpenAIClient
    from conway.policies.summariser import BackendText
    from conway.protocols import ContextExceeded

    props = {"default_generation_settings": {"n_ctx": 1024}}
    with ScriptedFakeServer(owned_by="llamacpp", props=props) as fake:
        backend = HTTPBackend(OpenAIClient(fake.base_url), "fake-model", server="llama-server")
        model = BackendText(backend, where="the acting model")
        with pytest.raises(ContextExceeded, match=r"the summary prompt needs ~\d+ tokens and its reply up to 200, "
                                                  r"but llama-server /props \(per-slot n_ctx\) allows 1024"):
            model.complete_text("x " * 3000, 200)
        assert model.complete_text("short", 200).finish_reason == "stop"  # one that fits goes out
        sent = list(fake.chat_requests)
        backend.close()
    assert [b["messages"][0]["content"] for b in sent] == ["short"]
