"""Config → policy: backend choice, adapter defaults, API keys from the environment."""

from __future__ import annotations

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer

from conway.config import load_config
from conway.errors import UserError
from conway.policies.factory import backend_choice, build_model_policy
from conway.policies.families import get_resize_rule
from conway.store.home import resolve_home

WAIT = '{"thought": "", "action": {"type": "wait"}}'


def cfg(*o):
    return load_config(None, list(o))


def test_backend_choice():
    assert backend_choice(cfg("policy=generic", "policy.endpoint=http://127.0.0.1:1/v1")) == "endpoint"
    assert backend_choice(cfg("policy=generic", "policy.model_path=/m.gguf")) == "inprocess"
    assert backend_choice(cfg("policy=generic", "policy.model_path=/m.gguf", "policy.backend=llama_cpp")) == "inprocess"
    assert backend_choice(cfg("policy=generic", "policy.model_path=/m.gguf", "policy.backend=http")) == "server"
    with pytest.raises(UserError, match="needs a model"):
        backend_choice(cfg("policy=generic"))
    with pytest.raises(UserError, match="drop one of them"):
        backend_choice(cfg("policy=generic", "policy.endpoint=http://x:1", "policy.backend=llama_cpp"))


@pytest.mark.parametrize("preset,kind,convention,rule,reply,temperature,image_cap,factor", [
    ("generic", "generic", "absolute", "qwen2.5-vl", 512, 0.0, 16384, 28),
    ("opencua-7b", "opencua", "absolute", "opencua", 2048, 0.0, 16384, 28),  # run_multienv_opencua.py --max_tokens
    ("uitars-1.5-7b", "uitars", "absolute", "uitars", 1000, 0.0, 16384, 28),  # OSWorld's UI-TARS-1.5 runtime_conf
    ("qwen3-vl", "qwen3vl", "relative999", "qwen3-vl", 32768, None, 12800, 32),  # run_multienv_qwen3vl.py; 12800
])
def test_adapter_defaults_per_family(preset, kind, convention, rule, reply, temperature, image_cap, factor):
    with ScriptedFakeServer() as fake:
        with build_model_policy(cfg(f"policy={preset}", f"policy.endpoint={fake.base_url}"),
                                resolve_home(None)) as policy:
            assert policy.adapter.name == kind
            assert policy.settings.convention.value == convention and policy.settings.resize_rule == rule
            assert policy.settings.max_tokens == reply and policy.settings.temperature == temperature
            assert policy.settings.image_max_tokens == image_cap
            assert policy.rule.max_pixels == min(image_cap * factor ** 2, get_resize_rule(rule).max_pixels)


def test_a_4k_screen_is_sent_at_the_family_cap_not_4096_tokens():
    with ScriptedFakeServer() as fake:
        with build_model_policy(cfg("policy=opencua-7b", f"policy.endpoint={fake.base_url}"),
                                resolve_home(None)) as policy:
            assert policy.rule.target_size((3840, 2160)) == (3836, 2156)  # not 2380x1344 (the old 4096 cap)
            assert policy.rule.target_size((2560, 1440)) == (2548, 1428)


def test_explicit_config_values_win_over_the_family():
    with ScriptedFakeServer() as fake:
        c = cfg("policy=opencua-7b", f"policy.endpoint={fake.base_url}", "policy.max_tokens=64",
                "policy.temperature=0.7", "policy.image_max_tokens=1024")
        with build_model_policy(c, resolve_home(None)) as policy:
            assert policy.settings.max_tokens == 64 and policy.settings.temperature == 0.7
            assert policy.settings.image_max_tokens == 1024 and policy.rule.max_pixels == 1024 * 28 * 28


def test_in_process_the_unset_image_cap_is_held_to_libmtmds_limit():
    pol = cfg("policy=uitars-1.5-7b").policy
    assert pol.image_token_cap() == 16384 and pol.image_token_cap(in_process=True) == 4096
    pinned = cfg("policy=uitars-1.5-7b", "policy.image_max_tokens=8192").policy
    assert pinned.image_token_cap(in_process=True) == 8192  # an explicit value wins, in-process too
    # where Conway runs the model, an unset cap also leaves half the window to the text
    assert pol.image_token_cap(window=8192) == 4096 and pol.image_token_cap(window=65536) == 16384
    assert pinned.image_token_cap(window=8192) == 8192


def test_overrides_and_bad_resize_name():
    with ScriptedFakeServer() as fake:
        c = cfg("policy=uitars-1.5-7b", f"policy.endpoint={fake.base_url}", "policy.convention=relative1000",
                "policy.resize=none")
        with build_model_policy(c, resolve_home(None)) as policy:
            assert policy.settings.convention.value == "relative1000" and policy.rule.passthrough
        with pytest.raises(UserError, match="unknown resize rule 'qwen9'"):
            build_model_policy(cfg("policy=generic", f"policy.endpoint={fake.base_url}", "policy.resize=qwen9"),
                               resolve_home(None))


def test_api_key_comes_from_the_named_environment_variable(monkeypatch):
    with ScriptedFakeServer(replies=[Reply.text(WAIT)]) as fake:
        c = cfg("policy=generic", f"policy.endpoint={fake.base_url}", "policy.api_key_env=CONWAY_TEST_KEY",
                "policy.structured_output=none")
        with pytest.raises(UserError, match="CONWAY_TEST_KEY, but it is not set"):
            build_model_policy(c, resolve_home(None))
        monkeypatch.setenv("CONWAY_TEST_KEY", "test-key-123")
        from conway.readiness.checks.decision import probe
        with build_model_policy(c, resolve_home(None)) as policy:
            assert probe(policy).ok
        assert fake.chat_headers[-1]["Authorization"] == "Bearer test-key-123"


def test_requested_structured_mode_that_is_not_honoured_is_a_policy_error():
    from conway.readiness.checks.decision import probe
    with ScriptedFakeServer(replies=[Reply.text('{"nothing": 1}')]) as fake:
        c = cfg("policy=generic", f"policy.endpoint={fake.base_url}", "policy.structured_output=json_schema")
        with build_model_policy(c, resolve_home(None)) as policy:
            report = probe(policy)
    assert not report.ok and "policy.structured_output=json_schema" in report.error
