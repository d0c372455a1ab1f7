"""`conway candidate-eval NAME --suite tasks --tasks SUITE`: held-out tasks on base and candidate, each once on
its own disposable desktop, success by the task's checker, Wilson intervals; the result is what the promotion
gate reads. Real desktops, two real tiny GGUF models through llama.cpp, the real named-buttons checker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.task_desktop import need_desktop

from conway.cli.main import main
from conway.evals.candidates import write_manifest

REPO = Path(__file__).resolve().parents[2]


def test_the_tasks_suite_needs_its_tasks(initialized_home, tmp_path, capsys):
    folder = initialized_home / "candidates" / "c"
    (folder / "gguf").mkdir(parents=True)
    (folder / "gguf" / "model.gguf").write_bytes(b"GGUF")
    write_manifest(folder, {"name": "c", "base_model": {"gguf": {"model": "/b.gguf"}},
                            "gguf": {"model": "gguf/model.gguf"}})
    assert main(["candidate-eval", "c", "--suite", "tasks", "--output", str(tmp_path / "e.json")]) == 1
    err = capsys.readouterr().err
    assert "--suite tasks needs --tasks SUITE" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.llama
@pytest.mark.desktop
def test_candidate_eval_on_held_out_tasks(initialized_home, tmp_path, capsys):
    need_desktop()
    pytest.importorskip("llama_cpp")
    from scripts.build import build_tiny_vlm as b
    from scripts.demos.named_buttons import write_suite

    models = {}
    for name, seed in (("base", 0), ("other", 7)):
        settings = b.load_settings(REPO / "configs" / "tiny_vlm_demo.yaml")
        settings.seed = seed
        b.build(tmp_path / name, settings)
        models[name] = (tmp_path / name / b.MODEL_FILE, tmp_path / name / b.MMPROJ_FILE)
    folder = initialized_home / "candidates" / "other"
    (folder / "gguf").mkdir(parents=True)
    (folder / "gguf" / "model.gguf").write_bytes(models["other"][0].read_bytes())
    (folder / "gguf" / "mmproj.gguf").write_bytes(models["other"][1].read_bytes())
    write_manifest(folder, {"name": "other", "base_model": {"gguf": {"model": str(models["base"][0]),
                                                                     "mmproj": str(models["base"][1])}},
                            "gguf": {"model": "gguf/model.gguf", "mmproj": "gguf/mmproj.gguf"},
                            "policy": {"kind": "generic"}})
    (initialized_home / "config.yaml").write_text("policy:\n  max_tokens: 48\ntools:\n  gui_failsafe: false\n")
    _, held = write_suite(tmp_path / "suite", train=0, held_out=3, buttons=2)
    out = tmp_path / "eval.json"
    code = main(["candidate-eval", "other", "--suite", "tasks", "--tasks", str(held), "--max-steps", "1",
                 "--screen", "84x84", "--output", str(out), "--quiet"])
    assert code in (0, 2)
    report = json.loads(out.read_text())
    s = report["summary"]
    assert s["suite"] == "tasks" and s["cases"] == 3
    for side in ("base", "candidate"):
        assert 0 <= s[side]["hits"] <= 3 and len(s[side]["hit_rate_ci95"]) == 2
    assert [c["task"] for c in report["cases"]] == ["held-out-000", "held-out-001", "held-out-002"]
    assert all(c["base"]["session"] and c["candidate"]["session"] for c in report["cases"])
    evals = (folder / "evals.jsonl").read_text().splitlines()
    assert json.loads(evals[-1])["suite"] == "tasks"
    assert "95% CI" in capsys.readouterr().out
