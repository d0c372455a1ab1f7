"""Chance levels (conway.evals.chance): a suite's chance is its tasks' declared chances, never guessed; a rate is
above chance only when its whole Wilson interval is; a tasks report and its view say where the rate stands."""

from __future__ import annotations

from conway.evals import chance
from conway.evals.stats import rate_record
from conway.evals.tasks_summary import summarize
from conway.view.report_tasks import summary_rows


def _records(outcomes: str, declared: float | None = 0.5) -> list[dict]:
    raw = {} if declared is None else {"chance": declared}
    return [{"task": f"t{i}", "outcome": "pass" if o == "p" else "fail", "score": 1.0 if o == "p" else 0.0,
             "raw": raw} for i, o in enumerate(outcomes)]


def test_a_suite_chance_is_the_mean_of_what_its_tasks_declare():
    assert chance.suite_chance([{"raw": {"chance": 0.5}}, {"raw": {"chance": 0.25}}]) == 0.375
    assert chance.suite_chance([{"raw": {"chance": 0.5}}, {"raw": {}}]) is None  # one undeclared: unknown
    assert chance.suite_chance([]) is None
    assert chance.task_chance({"chance": 1.5}) is None and chance.task_chance({"chance": True}) is None


def test_a_rate_is_above_chance_only_when_its_whole_interval_is():
    # 14/24 at two buttons: the rate (58%) is above 50%, its interval is not: at chance
    assert chance.verdict(rate_record(14, 24)["hit_rate_ci95"], 0.5) == chance.AT
    assert chance.verdict(rate_record(22, 24)["hit_rate_ci95"], 0.5) == chance.ABOVE
    assert chance.verdict(rate_record(2, 24)["hit_rate_ci95"], 0.5) == chance.BELOW
    assert chance.verdict([0.0, 1.0], None) is None
    assert chance.against({"ci95": [0.6, 0.9]}, 1 / 3) == {"chance": 1 / 3, "verdict": chance.ABOVE, "separated": True}


def test_a_tasks_report_states_its_chance_and_the_verdict_and_the_viewer_shows_it():
    summary = summarize(_records("ppppppppppppppppppf"), 1.0)
    assert summary["chance"] == {"chance": 0.5, "verdict": chance.ABOVE, "separated": True}
    rows = dict(summary_rows(summary))
    assert "50.0%" in rows["chance"] and "above chance" in rows["chance"]
    unknown = summarize(_records("pf", declared=None), 1.0)
    assert unknown["chance"]["chance"] is None and "chance" not in dict(summary_rows(unknown))
