"""The figures of a rollout set (`conway.evals.best_of_n`): pass@1, pass@k, best-of-N, the judge's agreement,
Wilson intervals, what each rollout and success cost, and OSWorld-Human's WES, exactly as the records imply."""

from __future__ import annotations

import json

import pytest

from conway.errors import UserError
from conway.evals.best_of_n import figures, load_reference, render_figures
from conway.evals.stats import wilson


def rec(task, sample, outcome, steps=2, prompt=100, out=10, model_s=1.0, wall_s=3.0):
    return {"task": task, "sample": sample, "outcome": outcome, "score": 1.0 if outcome == "pass" else 0.0,
            "steps": steps, "cost": {"prompt_tokens": prompt, "generated_tokens": out, "model_s": model_s,
                                     "wall_s": wall_s}}


RECORDS = [rec("a", 0, "pass"), rec("a", 1, "fail"), rec("a", 2, "pass"),   # a: 2 of 3
           rec("b", 0, "fail"), rec("b", 1, "fail"), rec("b", 2, "fail"),   # b: none
           rec("c", 0, "fail"), rec("c", 1, "pass"), rec("c", 2, "error")]  # c: 1 of 2 scored


def test_pass_at_1_pass_at_k_best_of_n_and_agreement_are_what_the_records_and_picks_imply():
    fig = figures(list(reversed(RECORDS)), {"a": 2, "b": 0, "c": 0})
    o = fig["overall"]
    assert (o["pass1"]["hits"], o["pass1"]["n"]) == (3, 8)  # the error is not scored
    assert o["pass1"]["rate"] == 0.375 and o["pass1"]["ci95"] == [round(x, 4) for x in wilson(3, 8)]
    assert (o["passk"]["hits"], o["passk"]["n"]) == (2, 3)  # a and c
    assert (o["best_of_n"]["hits"], o["best_of_n"]["n"]) == (1, 3)  # only a's pick passed
    assert (o["agreement"]["hits"], o["agreement"]["n"]) == (1, 2)  # b had no passing rollout to pick
    t = fig["tasks"]
    assert [r["sample"] for r in t["a"]["rollouts"]] == [0, 1, 2]
    assert t["a"]["pass1"] == round(2 / 3, 4) and t["c"]["pass1"] == 0.5 and t["b"]["passk"] is False
    assert t["a"]["best"] and not t["c"]["best"] and "agrees" not in t["b"] and t["c"]["agrees"] is False


def test_without_picks_there_is_no_best_of_n_and_a_task_never_scored_stays_out_of_every_rate():
    fig = figures(RECORDS + [rec("d", 0, "error"), rec("d", 1, "not-runnable")])
    o = fig["overall"]
    assert "best_of_n" not in o and "agreement" not in o
    assert o["tasks"] == 3 and o["passk"]["n"] == 3 and fig["tasks"]["d"]["pass1"] is None


def test_what_each_rollout_and_each_success_cost_with_prices():
    fig = figures(RECORDS, {"a": 0, "b": 1, "c": 1}, prices={"in": 2.0, "out": 10.0},
                  judge_costs={t: {"tokens_in": 50, "tokens_out": 5, "model_s": 0.5, "harness_s": 0.0, "steps": 0}
                               for t in "abc"})
    r = fig["tasks"]["a"]["rollouts"][0]
    assert r == {"sample": 0, "outcome": "pass", "score": 1.0, "tokens_in": 100, "tokens_out": 10, "model_s": 1.0,
                 "harness_s": 2.0, "steps": 2, "money": 0.0003}  # (100*2 + 10*10) / 1e6
    o = fig["overall"]
    assert o["cost"] == {"tokens_in": 900, "tokens_out": 90, "model_s": 9.0, "harness_s": 18.0, "steps": 18,
                         "money": 0.0027}
    assert o["cost_per_success"]["pass1"]["tokens_in"] == 300.0  # 900 tokens bought 3 passing rollouts
    # best-of-N passed a and c: every rollout's spend and the judge's over 2 successes
    assert o["cost_per_success"]["best_of_n"]["tokens_in"] == (900 + 150) / 2
    assert o["judge_cost"]["tokens_out"] == 15


def test_reference_steps_give_osworld_humans_wes():
    records = [rec("a", 0, "pass", steps=4), rec("a", 1, "fail", steps=10), rec("b", 0, "pass", steps=3)]
    fig = figures(records, reference={"a": 2}, max_steps=10)
    a = fig["tasks"]["a"]
    # WES+ = r·e/a, WES- = -(1-r)·a/M (OSWorld-Human's score.py), per rollout then per task
    assert [(x["wes_plus"], x["wes_minus"]) for x in a["rollouts"]] == [(0.5, -0.0), (0.0, -1.0)]
    assert a["wes_plus"] == 0.25 and a["wes_minus"] == -0.5 and a["steps_vs_reference"] == 3.5
    assert "reference_steps" not in fig["tasks"]["b"]
    assert fig["overall"]["efficiency"] == {"tasks": 1, "wes_plus": 0.25, "wes_minus": -0.5,
                                            "steps_vs_reference": 3.5}
    text = "\n".join(render_figures(fig))
    assert "WES+ 0.25, WES- -0.5" in text and "3.5x" in text


def test_reference_files_json_and_osworld_human_folder(tmp_path):
    (tmp_path / "ref.json").write_text(json.dumps({"a": 3}))
    assert load_reference(tmp_path / "ref.json") == {"a": 3}
    folder = tmp_path / "human" / "os"
    folder.mkdir(parents=True)
    (folder / "x.json").write_text(json.dumps({"id": "x", "human-ground-truth": {
        "single-action": ["click", "type", "enter"], "grouped-action": [["click"], ["type", "enter"]]}}))
    assert load_reference(tmp_path / "human") == {"x": 3}
    (tmp_path / "bad.json").write_text(json.dumps({"a": "three"}))
    with pytest.raises(UserError, match="positive step count"):
        load_reference(tmp_path / "bad.json")
    with pytest.raises(UserError, match="does not exist"):
        load_reference(tmp_path / "none.json")


def test_the_text_says_each_rate_with_its_interval():
    text = "\n".join(render_figures(figures(RECORDS, {"a": 2, "b": 0, "c": 0})))
    assert "pass@1 (mean over rollouts): 3/8 = 37.5%" in text
    assert "pass@k (any rollout passed): 2/3 = 66.7%" in text
    assert "best-of-N (the judged rollout passed): 1/3" in text
    assert "judge agrees with the checker" in text and ": 1/2 = 50.0%" in text
    assert "P f P" in text and "2 P" in text
