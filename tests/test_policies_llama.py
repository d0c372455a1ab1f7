"""Real llama.cpp in-process (llama-cpp-python) on the tiny random-weight VLM: image in, action out.

The tiny VLM (tests/fixtures/tiny-vlm, built offline by scripts/build_tiny_vlm.py)
has random weights: its answers mean nothing, but they go through the real
multimodal path (libmtmd vision encoder, Qwen2-VL M-RoPE, the GGUF's chat
template) and a real GBNF grammar, so a valid action comes back only if the
whole pipeline works.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conway.actions import _Action
from conway.config import load_config
from conway.home import resolve_home

TINY = Path(__file__).resolve().parent / "fixtures" / "tiny-vlm"
MODEL, MMPROJ = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def require_llama():
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.skip("llama-cpp-python is not installed (pip install -e '.[llama]')")
    if not MODEL.exists() or not MMPROJ.exists():
        pytest.skip("tiny VLM fixtures missing (python scripts/build_tiny_vlm.py --out tests/fixtures/tiny-vlm)")


def tiny_config(*extra: str):
    return load_config(None, ["policy=generic", f"policy.model_path={MODEL}", f"policy.mmproj_path={MMPROJ}",
                              "runtime.n_ctx=8192", "runtime.n_threads=1", "policy.max_tokens=1536", *extra])


@pytest.fixture(scope="module")
def inprocess_policy():
    require_llama()
    from conway.policies.factory import build_model_policy
    policy = build_model_policy(tiny_config(), resolve_home(None))
    yield policy
    policy.close()


def test_image_request_returns_a_grammar_constrained_action_that_parses(inprocess_policy):
    from conway.probe import probe_context
    ctx = probe_context((640, 400))
    d = inprocess_policy.decide(ctx)
    assert d.meta["backend"] == "llama_cpp" and d.meta["structured_output"] == "grammar"
    assert d.actions and all(isinstance(a, _Action) for a in d.actions), (d.raw_text, d.actions)
    assert d.actions[0].type in ctx.action_types
    assert d.raw_text.startswith('{"thought": "')
    assert d.meta["sent_size"] == [644, 392] and d.meta["image_tokens"] == 23 * 14
    t = d.meta["timings"]
    assert t["image_encode_ms"] > 0 and t["decode_ms"] > 0 and t["prompt_evaluated_n"] > 322
    assert d.usage["prompt_tokens"] > 322 and d.usage["cached_tokens"] == 0  # the vision handler resets the cache
    assert d.model_id == "tiny-vlm"


def test_opencua_and_uitars_formats_under_their_grammars():
    require_llama()
    from conway.policies.factory import build_model_policy
    from conway.probe import probe_context
    for kind, conv in (("opencua", "absolute"), ("uitars", "relative1000")):
        cfg = tiny_config(f"policy.kind={kind}", f"policy.convention={conv}", "policy.structured_output=grammar")
        with build_model_policy(cfg, resolve_home(None)) as policy:
            d = policy.decide(probe_context((640, 400)))
        assert d.actions and all(isinstance(a, _Action) for a in d.actions), (kind, d.raw_text, d.actions)
        assert d.meta["policy"] == kind and d.meta["convention"] == conv


def test_json_object_schema_mode_in_process(inprocess_policy):
    """The second structured mode llama-cpp-python honours in-process: a JSON schema via json_object."""
    from conway.policies.base import ModelPolicy, PolicySettings
    from conway.probe import probe_context
    s = inprocess_policy.settings
    policy = ModelPolicy(inprocess_policy.adapter, inprocess_policy.backend,
                         PolicySettings(convention=s.convention, resize_rule=s.resize_rule,
                                        structured_output="json_object", max_tokens=1536))
    d = policy.decide(probe_context((320, 200)))
    assert d.meta["structured_output"] == "json_object"
    # llama.cpp's schema converter ignores numeric bounds, so a coordinate may land outside the image:
    # then the parser says so; either way the answer is JSON of the schema's shape.
    assert d.raw_text.lstrip().startswith("{")
    assert d.actions


def test_inprocess_probe_cli_passes(initialized_home):
    require_llama()
    from conftest import run_cli
    proc = run_cli("probe", "policy=generic", f"policy.model_path={MODEL}", f"policy.mmproj_path={MMPROJ}",
                   "runtime.n_ctx=8192", "runtime.n_threads=1", "policy.max_tokens=1536", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "probe: PASS" in proc.stdout and "in-process" in proc.stdout and "uses grammar" in proc.stdout
    assert "llama_cpp" in proc.stdout
    log = (initialized_home / "llama-runtime.log").read_text()
    assert "conway loads" in log and "OMP_WAIT_POLICY=PASSIVE" in log
