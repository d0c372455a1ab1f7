"""The reward demo end to end at its smallest (1 train task, 1 held-out task, 2 rollouts, 1 GRPO round): a real
desktop, the real tiny VLM through llama.cpp, real training and conversion. It checks the pipeline runs and
reports every stage, not that anything learns (the full run's figures are in docs/measurements.md)."""

from __future__ import annotations

import json

import pytest
from helpers.task_desktop import need_desktop


@pytest.mark.slow
@pytest.mark.llama
@pytest.mark.desktop
def test_the_smallest_reward_demo_reports_base_sft_and_grpo(tmp_path, capsys):
    need_desktop()
    pytest.importorskip("peft")
    pytest.importorskip("llama_cpp")
    from scripts.demos import reward_demo

    code = reward_demo.main(["--work", str(tmp_path / "w"), "--train", "1", "--held-out", "1", "--samples", "2",
                             "--rounds", "1", "--sft-seconds", "5", "--no-copy", "rl.epochs=1"])
    assert code == 0
    results = json.loads((tmp_path / "w" / "results.json").read_text())
    assert [p["round"] for p in results["curve"]] == [0, 1]
    assert results["curve"][0]["policy"] == "base" and results["curve"][0]["held_out_success"]["n"] == 1
    assert {"base", "rejection-sampling SFT"} <= set(results["held_out"])
    assert (tmp_path / "w" / "iterate" / "learning_curve.png").stat().st_size > 0
    out = capsys.readouterr().out
    assert "held-out tasks (greedy" in out and "base" in out
