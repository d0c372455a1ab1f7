"""The reward demo end to end at its smallest (1 train task, 1 held-out task, 2 rollouts, 1 GRPO round): a real
desktop, the real tiny VLM through llama.cpp, real training and conversion. It checks the pipeline runs and
reports every stage, not that anything learns (the full run's figures are in docs/measurements.md). And the
report's wording: what a stage learned is said by its comparison with chance, never by the base alone."""

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


def _s(hits: int, n: int = 24, level: float = 0.5) -> dict:
    from conway.evals import chance
    from conway.evals.stats import rate_record

    r = rate_record(hits, n)
    rate = {"hits": hits, "n": n, "rate": r["hit_rate"], "ci95": r["hit_rate_ci95"]}
    return {**rate, "chance": level, "verdict": chance.against(rate, level)["verdict"]}


def test_a_candidate_apart_from_the_base_but_at_chance_is_said_to_have_learned_nothing(tmp_path, capsys):
    from scripts.demos import reward_demo

    args = reward_demo.parse(["--work", str(tmp_path), "--no-copy", "--suite", "label", "--targets", "2"])
    points = [{"round": 0, "policy": "base", "train_success": _s(0, 8), "held_out_success": _s(0)},
              {"round": 1, "policy": "reward-grpo-r0", "train_success": _s(8, 8), "held_out_success": _s(23)}]
    assert reward_demo.report(args, tmp_path, points, _s(14), 60.0) == 0
    out = capsys.readouterr().out
    assert "chance 50.0%: a policy that presses one of the 2 targets at random" in out
    sft_line = next(x for x in out.splitlines() if x.startswith("rejection-sampling SFT"))
    assert "AT CHANCE 50%" in sft_line and "apart from the base" in sft_line  # 14/24 vs 0/24: apart, yet chance
    assert "rejection-sampling SFT: at chance: no evidence it follows the instruction" in out
    assert "GRPO round 1: its 95% interval lies above chance: it picks the target by the label" in out
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["held_out"]["rejection-sampling SFT"]["verdict"] == "at chance"


def test_a_refused_run_is_one_line_not_a_traceback(tmp_path, capsys):
    from scripts.demos import reward_demo

    work = tmp_path / "w" / "iterate"
    work.mkdir(parents=True)
    (work / "state.json").write_text(json.dumps({"rounds": [], "args": {"other": 1}}))  # started otherwise
    (tmp_path / "w" / "base").mkdir()
    for name in ("tiny-vlm.gguf", "tiny-vlm-mmproj.gguf"):
        (tmp_path / "w" / "base" / name).write_bytes(b"")
    assert reward_demo.run(["--work", str(tmp_path / "w"), "--base", str(tmp_path / "w" / "base"), "--no-copy"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("reward_demo: error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--workers", "--sft-steps"])
def test_workers_or_sft_steps_below_one_are_refused_before_the_base_is_made(tmp_path, capsys, flag):
    from scripts.demos import reward_demo

    with pytest.raises(SystemExit) as exc:
        reward_demo.run(["--work", str(tmp_path / "w"), "--base", "perceive", flag, "0"])
    assert exc.value.code == 2 and f"{flag} must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()  # nothing made, nothing started
