"""`conway preflight` says who writes memory's summary and tries a configured summariser as `run` would meet it.

The endpoint is the scripted FAKE OpenAI-compatible server (its /v1/models only); the local GGUF is the tiny
VLM's language model, read from its real file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.scripted_server import ScriptedFakeServer

from conway.cli.main import main

TINY_MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-vlm" / "tiny-vlm.gguf"


def _summariser(tmp_path: Path, *overrides: str) -> tuple[int, dict]:
    out = tmp_path / "pf.json"
    code = main(["preflight", "--output", str(out), "--mock", *overrides])
    checks = {c["check"]: c for c in json.loads(out.read_text())["cases"]}
    return code, checks["memory summariser"]


@pytest.mark.parametrize("overrides, detail", [
    ([], "the mock policy has no model: past memory.max_chars, memory.md is truncated (marked)"),
    (["memory.summarise=false"], "memory.summarise=false: past memory.max_chars, memory.md is truncated (marked)"),
])
def test_without_a_summariser_preflight_says_the_truncation_is_used(tmp_path, initialized_home, overrides, detail):
    code, check = _summariser(tmp_path, *overrides)
    assert code == 0 and check["status"] == "ok" and check["detail"] == detail


def test_a_summariser_endpoint_that_serves_its_model_is_ready(tmp_path, initialized_home):
    with ScriptedFakeServer(models=["notes-model", "other"]) as fake:
        code, check = _summariser(tmp_path, f"memory.summariser.endpoint={fake.base_url}",
                                  "memory.summariser.model=notes-model")
    assert code == 0 and check["status"] == "ok", check
    assert check["detail"] == f"memory.summariser: {fake.base_url} serves notes-model (unknown server)"


@pytest.mark.parametrize("overrides, says", [
    (["memory.summariser.endpoint=http://127.0.0.1:9/v1"], "memory.summariser: cannot reach the model server"),
    (["memory.summariser.endpoint=http://127.0.0.1:9/v1", "memory.summariser.api_key_env=CONWAY_TEST_UNSET_KEY"],
     "memory.summariser.api_key_env names CONWAY_TEST_UNSET_KEY, which is not set"),
    (["memory.summariser.model_path=/nonexistent/notes.gguf"],
     "memory.summariser: model file /nonexistent/notes.gguf does not exist"),
])
def test_a_summariser_run_would_refuse_fails_preflight_with_the_reason(tmp_path, initialized_home, monkeypatch,
                                                                         overrides, says):
    monkeypatch.delenv("CONWAY_TEST_UNSET_KEY", raising=False)
    code, check = _summariser(tmp_path, *overrides)
    assert code == 2 and check["status"] == "fail" and says in check["detail"], check


def test_a_local_summariser_gguf_is_read_and_its_fit_reported(tmp_path, initialized_home):
    if not TINY_MODEL.exists():
        pytest.skip("tiny VLM fixtures missing (python -m scripts.build.build_tiny_vlm --out tests/fixtures/tiny-vlm)")
    code, check = _summariser(tmp_path, f"memory.summariser.model_path={TINY_MODEL}")
    assert code == 0 and check["status"] == "ok", check
    assert check["detail"].startswith(f"memory.summariser: {TINY_MODEL} (qwen2vl), in-process; estimated ")
