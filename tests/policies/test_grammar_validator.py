"""Grammar = validator (issue 10, item 6): the GBNF grammars and the JSON schema come from the same rules
the action validator applies (paired coordinates, one non-zero wheel axis, the GUI tool's key names,
numeric bounds), so a constrained answer always validates.

Property tests sample each grammar (tests/helpers/gbnf_sampler.py walks the GBNF itself) and check every sample
parses into valid actions through the adapter's own parser, and that each sampled action also satisfies
the JSON schema; rule-breaking actions are refused by both the validator and the schema. llama.cpp
itself accepts every grammar, and grammar-constrained sampling on the real tiny VLM validates too.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import random
from pathlib import Path

import pytest
from helpers.gbnf_sampler import GrammarSampler

from conway.actions import (
    ACTION_TYPES,
    KEY_CHOICES,
    NAMED_KEYS,
    SINGLE_KEYS,
    ActionProblem,
    action_schema,
    canonical_key,
    parse_action,
)
from conway.policies.families.generic import parse as parse_json
from conway.policies.families.generic.adapter import cap_string_lengths
from conway.policies.families.opencua import parse as parse_opencua
from conway.policies.families.uitars import parse as parse_uitars
from conway.policies.grammar import TEXT_MAX_CHARS, action_json_grammar, opencua_grammar, uitars_grammar
from conway.policies.parsed import MAX_TEXT_CHARS

FAMILIES = {
    "generic": (action_json_grammar, parse_json.parse),
    "opencua": (opencua_grammar, parse_opencua.parse),
    "uitars": (uitars_grammar, parse_uitars.parse),
}
SETUPS = [("absolute", (644, 392), (1280, 800)), ("relative", (644, 392), (1280, 800)),
          ("relative1000", (1008, 560), (1920, 1080)), ("screen", (644, 392), (1366, 768)),
          ("absolute", (28, 28), (30, 31))]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("convention,sent,captured", SETUPS)
def test_every_grammar_sample_validates(family, convention, sent, captured):
    make, parse = FAMILIES[family]
    sampler = GrammarSampler(make(None, convention=convention, sent_size=sent, captured_size=captured))
    rng = random.Random(f"{family}/{convention}/{sent}")
    for _ in range(150):
        text = sampler.sample(rng)
        if len(text) > MAX_TEXT_CHARS:  # nested MCP arguments can grow past it; max_tokens ends a reply first
            continue
        parsed = parse(text, convention=convention, sent_size=sent, captured_size=captured)
        assert parsed.ok, (text[-300:], [getattr(a, "message", a) for a in parsed.actions])


@pytest.mark.parametrize("types", [["scroll"], ["key", "hotkey"], ["wait", "shell"], ["drag", "finish"],
                                   ["read_file", "list_dir", "append_file", "replace_text", "open_browser"]])
def test_samples_of_a_restricted_action_space_stay_inside_it_and_satisfy_the_schema(types):
    import jsonschema

    grammar = action_json_grammar(types, convention="absolute", sent_size=(644, 392), captured_size=(644, 392))
    schema = cap_string_lengths(parse_json.wrapped_schema(types), TEXT_MAX_CHARS)
    validator = jsonschema.Draft202012Validator(schema)
    sampler = GrammarSampler(grammar)
    rng = random.Random(",".join(types))
    seen = set()
    for _ in range(300):
        text = sampler.sample(rng)
        value = json.loads(text)
        validator.validate(value)  # the grammar's answers are the schema's answers
        action = parse_action(value["action"])
        assert not isinstance(action, ActionProblem), (text, action)
        assert action.type in types
        seen.add(action.type)
    assert seen == set(types)


@pytest.mark.parametrize("bad", [
    {"type": "scroll", "dy": 3, "y": 40},              # a coordinate without its partner
    {"type": "scroll", "dy": 0, "dx": 0},              # scrolls nothing
    {"type": "scroll"},
    {"type": "key", "key": "hyperspace"},              # no such key
    {"type": "hotkey", "keys": ["ctrl", "banana"]},
    {"type": "wait", "seconds": 3600.5},               # past the bound
    {"type": "shell", "command": "true", "timeout_s": 0},
])
def test_rule_breaking_actions_are_refused_by_the_validator_and_the_schema(bad):
    import jsonschema

    problem = parse_action(bad)
    assert isinstance(problem, ActionProblem), bad
    schema = parse_json.wrapped_schema(None)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"thought": "", "action": bad}, schema)


def test_valid_actions_pass_both():
    import jsonschema

    schema = parse_json.wrapped_schema(None)
    for good in [{"type": "scroll", "dy": -3}, {"type": "scroll", "dx": 2, "x": 5, "y": 6},
                 {"type": "scroll", "dy": 1, "dx": 0}, {"type": "key", "key": "Return"},
                 {"type": "hotkey", "keys": ["ctrl", "shift", "t"]}, {"type": "wait", "seconds": 2.5}]:
        assert not isinstance(parse_action(good), ActionProblem), good
        if good.get("key") != "Return":  # the schema offers the lowercase spellings
            jsonschema.validate({"thought": "", "action": good}, schema)


def test_unknown_keys_are_refused_at_validation_not_at_dispatch():
    problem = parse_json.parse('{"thought": "", "action": {"type": "key", "key": "hyper_enter"}}',
                               convention="absolute", sent_size=(100, 100), captured_size=(100, 100))
    assert not problem.ok and "unknown key 'hyper_enter'" in problem.actions[0].message


def test_the_key_set_is_the_gui_tool_s():
    """NAMED_KEYS and SINGLE_KEYS mirror pyautogui's KEY_NAMES (read from its source, no display needed)."""
    spec = importlib.util.find_spec("pyautogui")
    if spec is None or spec.origin is None:
        pytest.skip("pyautogui is not installed (the gui extra)")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    names = next(ast.literal_eval(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and any(getattr(t, "id", None) == "KEY_NAMES" for t in n.targets))
    assert {k for k in names if len(k) > 1} == set(NAMED_KEYS)
    assert {k for k in names if len(k) == 1} <= SINGLE_KEYS
    assert all(canonical_key(k) is not None for k in KEY_CHOICES)


def test_every_action_type_has_a_grammar_rule_and_a_schema():
    grammar = action_json_grammar(None, convention="absolute", sent_size=(100, 100), captured_size=(100, 100))
    for name in ACTION_TYPES:
        assert f"act-{name.replace('_', '-')} ::=" in grammar
    assert set(action_schema()["discriminator"]["mapping"]) == set(ACTION_TYPES)


# --- llama.cpp itself ------------------------------------------------------------------------------------

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-vlm"


@pytest.mark.llama
def test_llama_cpp_accepts_every_grammar():
    llama_cpp = pytest.importorskip("llama_cpp")
    for family, (make, _) in FAMILIES.items():
        for convention, sent, captured in SETUPS:
            grammar = make(None, convention=convention, sent_size=sent, captured_size=captured)
            assert llama_cpp.LlamaGrammar.from_string(grammar, verbose=False) is not None, family


@pytest.mark.llama
@pytest.mark.slow
def test_grammar_constrained_sampling_on_the_tiny_vlm_validates():
    """llama.cpp samples the grammar (temperature 1, several seeds): every finished answer validates."""
    pytest.importorskip("llama_cpp")
    if not (TINY / "tiny-vlm.gguf").exists():
        pytest.skip("tiny VLM fixtures missing (python -m scripts.build.build_tiny_vlm --out tests/fixtures/tiny-vlm)")
    from conway.config import load_config
    from conway.policies.factory import build_model_policy
    from conway.readiness.checks.decision import probe_context
    from conway.store.home import resolve_home

    cfg = load_config(None, ["policy=generic", f"policy.model_path={TINY / 'tiny-vlm.gguf'}",
                             f"policy.mmproj_path={TINY / 'tiny-vlm-mmproj.gguf'}", "policy.structured_output=grammar",
                             "policy.temperature=1.0", "policy.max_tokens=2048", "runtime.n_ctx=4096",
                             "runtime.n_threads=1"])
    policy = build_model_policy(cfg, resolve_home(None))
    finished = 0
    try:
        for seed in range(5):
            policy.settings.seed = seed
            d = policy.decide(probe_context((320, 200)))
            if d.meta.get("finish_reason") == "length":
                continue
            finished += 1
            assert d.actions and all(not isinstance(a, ActionProblem) for a in d.actions), (seed, d.raw_text)
    finally:
        policy.close()
    assert finished >= 3


# --- the browser tool's URL rule (issue 32 §3.8) ---------------------------------------------------------------


def _browser_grammar() -> str:
    return action_json_grammar(["open_browser", "wait"], convention="absolute", sent_size=(644, 392),
                               captured_size=(644, 392))


def test_the_grammar_admits_only_urls_the_browser_tool_opens():
    """A tiny VLM under the grammar wrote {"type":"open_browser","url":":"} (refused: only http, https and file
    URLs): every URL the grammar admits passes the browser tool's check, and such answers are not admitted."""
    from helpers.gbnf_sampler import accepts

    from conway.tools.browser import check_url

    grammar = _browser_grammar()
    sampler = GrammarSampler(grammar)
    rng = random.Random("open_browser")
    urls = [json.loads(t)["action"]["url"] for t in (sampler.sample(rng) for _ in range(600)) if "open_browser" in t]
    assert len(urls) > 100
    assert [u for u in urls if check_url(u) is not None] == []
    assert {u.split(":", 1)[0] for u in urls} == {"http", "https", "file"}

    def answer(url: str) -> str:
        return json.dumps({"thought": "go", "action": {"type": "open_browser", "url": url}})

    for refused in [":", "javascript:alert(1)", "ftp://host/x", "http://", "file://host", "http://a b/",
                    "example.org", "http://[::1/"]:
        assert check_url(refused) is not None
        assert not accepts(grammar, answer(refused)), refused
    for url in ["https://example.org", "http://127.0.0.1:8080/v1?q=1#top", "file:///home/user/page.html"]:
        assert check_url(url) is None and accepts(grammar, answer(url)), url
