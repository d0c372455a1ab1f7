"""`probe(policy)` and `conway probe` / `conway models` (protocol paths; real llama.cpp in test_runtime_server.py)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from fixtures.scripted_server import Reply, ScriptedFakeServer

from conway.config import load_config
from conway.policies.factory import build_model_policy
from conway.policies.mock import MockPolicy
from conway.readiness.checks.decision import probe
from conway.store.home import resolve_home

CLICK = '{"thought": "the window", "action": {"type": "click", "x": 322, "y": 196}}'


def honour_grammar(body):
    """FAKE server behaviour: echo what a probe grammar forces, else a scripted click."""
    if "grammar" in body and body["grammar"].startswith('root ::= "{\\"probe'):
        return Reply.text(json.loads(body["grammar"].split("::=", 1)[1].strip()))
    return Reply.text(CLICK)


def policy_for(url, *extra):
    cfg = load_config(None, ["policy=generic", f"policy.endpoint={url}", *extra])
    return build_model_policy(cfg, resolve_home(None))


def test_probe_the_mock_never_touches_anything():
    report = probe(MockPolicy())
    assert report.ok and report.model_id == "conway-mock" and report.actions == ["wait()"]


def test_probe_reports_structured_support_sizes_and_the_action():
    with ScriptedFakeServer(responder=honour_grammar) as fake:
        with policy_for(fake.base_url) as policy:
            report = probe(policy)
        last = fake.chat_requests[-1]
    assert report.ok, report.render()
    assert report.structured_support == ["grammar"] and report.structured_output == "grammar"
    assert report.structured_detail["json_object"].startswith("ignored")
    assert report.sent_size == [644, 392] and report.captured_size == [640, 400] and report.convention == "absolute"
    assert report.actions == ["click(x=320.0, y=200.0, button='left')"]  # 322x196 of 644x392 sent → 640x400 captured
    assert "grammar" in last and last["messages"][-1]["content"][-1]["image_url"]["url"].startswith("data:image/jpeg")
    text = report.render()
    assert "probe: PASS" in text and "uses grammar" in text and "640x400 → sent 644x392" in text


def test_probe_fails_on_an_answer_that_does_not_parse():
    with ScriptedFakeServer(replies=[Reply.text("Sure! I will click it.")]) as fake:
        with policy_for(fake.base_url, "policy.structured_output=none") as policy:
            report = probe(policy)
    assert not report.ok and "no JSON action found" in report.problems[0]


def test_probe_reports_a_server_error_without_raising():
    with ScriptedFakeServer(replies=[Reply(status=500, body={"error": {"message": "boom"}})]) as fake:
        with policy_for(fake.base_url, "policy.structured_output=none") as policy:
            report = probe(policy)
    assert not report.ok and "HTTP 500: boom" in report.error


def test_conway_probe_exit_codes():
    with ScriptedFakeServer(responder=honour_grammar) as fake:
        ok = run_cli("probe", "--endpoint", fake.base_url)
        as_json = run_cli("probe", "--endpoint", fake.base_url, "--json")
    assert ok.returncode == 0, ok.stderr
    assert "probe: PASS" in ok.stdout and "model id:          fake-model" in ok.stdout
    assert json.loads(as_json.stdout)["ok"] is True
    with ScriptedFakeServer(replies=[Reply.text("no idea")]) as fake:
        bad = run_cli("probe", "--endpoint", fake.base_url, "policy.structured_output=none")
    assert bad.returncode == 2 and "probe: FAIL" in bad.stdout and "probe failed" in bad.stderr


def test_conway_models_lists_served_models_and_local_files(tmp_path):
    from helpers.gguf_files import projector, vlm_text_model
    model, mmproj = vlm_text_model(tmp_path / "vlm.gguf"), projector(tmp_path / "mmproj.gguf")
    with ScriptedFakeServer(models=["a-model", "b-model"], owned_by="llamacpp") as fake:
        proc = run_cli("models", "--endpoint", fake.base_url, f"policy.model_path={model}",
                       f"policy.mmproj_path={mmproj}")
    assert proc.returncode == 0, proc.stderr
    assert f"endpoint {fake.base_url} (llama-server) serves:" in proc.stdout  # not "(llama-server server)"
    assert "  a-model" in proc.stdout and "  b-model" in proc.stdout
    assert "policy.model_path" in proc.stdout and "qwen2vl" in proc.stdout and "policy.mmproj_path" in proc.stdout
    assert "memory: estimated" in proc.stdout


@pytest.mark.parametrize("preset, family, applied", [
    ("generic", "generic", "grammar"), ("opencua-7b", "opencua", "grammar"), ("uitars", "uitars", "grammar"),
    ("gta1", "gta1", "none"), ("holo1.5", "holo", "none")])
def test_probe_says_which_constraint_each_family_really_gets(preset, family, applied):
    # the FAKE server honours grammars; gta1 has none and holo only a JSON schema: nothing holds their answers
    with ScriptedFakeServer(responder=honour_grammar) as fake:
        cfg = load_config(None, [f"policy={preset}", f"policy.endpoint={fake.base_url}",
                                 "policy.structured_output=grammar"])
        with build_model_policy(cfg, resolve_home(None)) as policy:
            report = probe(policy)
        last = fake.chat_requests[-1]
    text = report.render()
    assert report.structured_output == applied, text
    assert ("grammar" in last) == (applied == "grammar")  # what the request really carried
    if applied == "none":
        assert "uses grammar" not in text
        assert f"uses none (policy.structured_output=grammar is not applied: the {family} family has no grammar" \
               in text
    else:
        assert "uses grammar" in text and report.structured_note is None
