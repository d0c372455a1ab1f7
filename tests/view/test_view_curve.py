"""A learning curve (training/iterate.py's WORK/learning_curve.json, conway.evals.learning_curve) is a report:
`conway view` draws it as an inline chart with its chance line and one card per round, filtered by where the
round's held-out interval lies against chance; `conway report` prints the same per round."""

from __future__ import annotations

import re

from conway.cli.main import main
from conway.evals import chance
from conway.evals.learning_curve import write_curve_report
from conway.evals.stats import rate_record


def _s(hits: int, n: int, level: float = 1 / 3) -> dict:
    r = rate_record(hits, n)
    rate = {"hits": hits, "n": n, "rate": r["hit_rate"], "ci95": r["hit_rate_ci95"]}
    return {**rate, "chance": level, "verdict": chance.against(rate, level)["verdict"]}


def points() -> list[dict]:
    return [{"round": 0, "policy": "base", "train_success": _s(0, 8), "held_out_success": _s(1, 24),
             "mean_reward": None, "kl": None},
            {"round": 1, "policy": "grpo-r0", "train_success": _s(4, 8), "held_out_success": _s(9, 24),
             "mean_reward": 0.2, "kl": 0.01},
            {"round": 2, "policy": "grpo-r1", "train_success": _s(8, 8), "held_out_success": _s(22, 24),
             "mean_reward": 0.6, "kl": 0.03}]


def test_the_viewer_draws_the_curve_with_its_chance_line_and_a_card_per_round(conway_home, tmp_path):
    report = write_curve_report(points(), tmp_path / "learning_curve.json", title="grpo: demo")
    out = tmp_path / "site"
    assert main(["view", str(report), "--output", str(out)]) == 0
    html = (out / "index.html").read_text(encoding="utf-8")
    assert '<svg class="curve"' in html and 'class="chance"' in html and "chance 33%" in html
    assert "held-out interval above it: round 2" in html
    cards = re.findall(r'<article class="card[^"]*".*?</article>', html, re.S)
    assert [re.search(r'data-outcome="([^"]+)"', c).group(1) for c in cards] == [
        "below chance", "at chance", "above chance"]
    assert "22/24 = 91.7%" in cards[2] and "KL to the base" in cards[2]


def test_conway_report_prints_the_curve_against_chance(tmp_path, capsys):
    report = write_curve_report(points(), tmp_path / "learning_curve.json", title="grpo: demo")
    assert main(["report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "chance 33.3% (a policy acting validly at random); above chance: round 2" in out
    assert "round 1: grpo-r0: held-out 9/24 (38%" in out and "at chance" in out
