"""grounding-check and candidate-eval --suite grounding on the real tiny VLM through llama.cpp.

The tiny random-weight model cannot ground anything: these tests check the
structure and the honesty of the scoring (every number recomputable from the
cases), not hit rates.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.grounding_data import write_dataset
from test_candidates import make_candidate

from conway.cli.main import main

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "fixtures" / "tiny-vlm"
MODEL, MMPROJ = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"


def _skip(backend: str) -> None:
    import importlib.util
    if not MODEL.exists() or not MMPROJ.exists():
        pytest.skip("tiny VLM fixtures are missing (scripts/build/build_tiny_vlm.py --out tests/fixtures/tiny-vlm)")
    if backend == "inprocess" and importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed ('.[llama]')")
    if backend == "server":
        from conway.config import RuntimeConfig
        from conway.errors import UserError
        from conway.runtime.server import find_program
        try:
            find_program(RuntimeConfig())
        except UserError as exc:
            pytest.skip(f"no model server program: {exc}")


def _honest(data: dict, expected: dict) -> None:
    s = data["summary"]
    hits = errors = 0
    for case in data["cases"]:
        x0, y0, x1, y1, w, h = expected[case["instruction"]]
        assert case["target"]["box"] == [x0, y0, x1, y1] and case["image"]["size"] == [w, h]
        assert case["raw_output"] is not None and case["latency_s"] > 0
        meta = case["decision_meta"]
        assert meta["captured_size"] == [w, h]
        assert meta["sent_size"][0] % 28 == 0 and meta["sent_size"][1] % 28 == 0  # the Qwen rule, on our side
        if case["error"]:
            errors += 1
            assert case["predicted"] is None and not case["hit"]
        else:
            x, y = case["predicted"]
            assert case["hit"] == (x0 <= x <= x1 and y0 <= y <= y1)
            hits += case["hit"]
    assert (s["hits"], s["errors"]) == (hits, errors)
    assert sum(g["hits"] for g in s["by_size"].values()) == hits
    assert sum(s["invalid_output"].values()) == errors


@pytest.mark.llama
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["inprocess", "server"])
def test_grounding_check_on_the_real_tiny_vlm(tmp_path: Path, backend: str):
    _skip(backend)
    expected = write_dataset(tmp_path / "ds")
    out = tmp_path / "tiny.json"
    code = main(["grounding-check", "--dataset", str(tmp_path / "ds"), "--samples", "4", "--seed", "2",
                 "--output", str(out), "--sheet", str(tmp_path / "tiny.png"), "--quiet", "--parallel", "2",
                 "policy=generic", f"policy.backend={'llama_cpp' if backend == 'inprocess' else 'http'}",
                 f"policy.model_path={MODEL}", f"policy.mmproj_path={MMPROJ}", "policy.max_tokens=48",
                 "policy.seed=0", "runtime.n_ctx=4096", "runtime.parallel=2"])
    data = json.loads(out.read_text())
    assert data["model_id"] == "tiny-vlm" and data["summary"]["cases"] == 4
    _honest(data, expected)
    # the random-weight VLM rarely answers with an action at all: that is its own outcome (exit 3), as in vision-check
    never = not any(c["action"] for c in data["cases"])
    assert code == (3 if never else 0 if data["summary"]["hits"] == 4 else 2)
    assert (data["status"] == "no valid decision") == never == ("no_valid_decision" in data["summary"])


@pytest.mark.llama
@pytest.mark.slow
def test_candidate_eval_on_grounding_uses_the_same_cases(initialized_home: Path, tmp_path: Path, capsys):
    _skip("inprocess")
    expected = write_dataset(tmp_path / "ds")
    make_candidate(initialized_home, "same", model=MODEL, mmproj=MMPROJ, base=(MODEL, MMPROJ))
    (initialized_home / "config.yaml").write_text("policy:\n  max_tokens: 48\n")
    out = tmp_path / "cand.json"
    code = main(["candidate-eval", "same", "--suite", "grounding", "--dataset", str(tmp_path / "ds"),
                 "--samples", "3", "--seed", "1", "--output", str(out), "--quiet"])
    assert code in (0, 2)
    report = json.loads(out.read_text())
    s = report["summary"]
    assert s["suite"] == "grounding" and s["cases"] == 3 and report["parameters"]["source"] == "dataset"
    assert s["base"]["model_id"] != s["candidate"]["model_id"]
    for c in report["cases"]:
        assert c["instruction"] in expected and c["id"] and len(c["image_sha256"]) == 64
        assert set(c["base"]) == set(c["candidate"]) == {"hit", "predicted", "error", "raw_output"}
    assert "3 grounding case(s)" in capsys.readouterr().out


def test_candidate_eval_grounding_needs_one_source(initialized_home: Path, tmp_path: Path, capsys):
    make_candidate(initialized_home, "c")
    out = str(tmp_path / "e.json")
    assert main(["candidate-eval", "c", "--suite", "grounding", "--output", out]) == 1
    assert "give exactly one source of cases" in capsys.readouterr().err
    assert main(["candidate-eval", "c", "--dataset", str(tmp_path), "--output", out]) == 1
    assert "--dataset and --apps belong to --suite grounding" in capsys.readouterr().err
