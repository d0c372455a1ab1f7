"""Every suite kind Conway knows, registered once: one `register(SuiteKind(...))` per kind.

A new eval suite is its module (its run, its text render, its records, its command: a `CommandPiece` with its
parser and handler, `conway.args.command`) plus one `register` line here, nothing in `conway/cli/`; the
viewer draws it with one of its layouts (`conway.view.reports.LAYOUTS`). What each field means:
`conway.evals.kinds`. Everything that treats kinds differently reads `KINDS` (through `suite_kind` and
`having`): `conway report`, `conway view REPORT`, `conway sweep`, `conway export --from-report`, and the
command line (`conway.cli.parsers.parser_pieces`, `conway.cli.commands.run_command`).
"""

from __future__ import annotations

from conway.evals import acceptance_check as acceptance
from conway.evals import case_outcomes as co
from conway.evals import learning_curve, report_text
from conway.evals import preflight as preflight_suite
from conway.evals import vision_check as vision
from conway.evals.candidates import candidate_eval
from conway.evals.grounding import check as grounding
from conway.evals.grounding.records import records_from_grounding
from conway.evals.grounding.render import render_grounding
from conway.evals.judge import run as judge_run
from conway.evals.kinds import ReportView, SuiteKind, SweepMetric
from conway.evals.replay import replay
from conway.evals.sweep_table import render_sweep
from conway.evals.tasks_run import tasks_run
from conway.evals.tasks_summary import render_tasks
from conway.evals.vision_records import records_from_vision_check
from conway.experience.task_records import records_from_tasks

KINDS: dict[str, SuiteKind] = {}
"""Report kind -> its record, in registration order (the order every list of kinds is shown in)."""


def register(kind: SuiteKind) -> SuiteKind:
    if kind.name in KINDS:
        raise ValueError(f"suite kind {kind.name!r} is registered twice")
    KINDS[kind.name] = kind
    return kind


def suite_kind(name: object) -> SuiteKind | None:
    return KINDS.get(str(name))


def having(facet: str) -> list[SuiteKind]:
    """The registered kinds that have `facet` (text, view, sweep, records), in registration order."""
    return [k for k in KINDS.values() if getattr(k, facet) is not None]


_CLICKS = dict(outcome=co.click_outcome, outcomes=co.CLICK_OUTCOMES, error_outcomes=("error", "miss"),
               next_error="miss")
_HIT_RATE = dict(rate="hit_rate", ci95="hit_rate_ci95", successes="hits", cases="cases")

register(SuiteKind(
    "vision-check", run=vision.vision_check, text=report_text.render_vision, command=vision.COMMAND,
    view=ReportView("click", **_CLICKS, sort_value=co.target_colour, sort_label="target colour",
                    caption=co.shape_caption),
    sweep=SweepMetric("vision-check", **_HIT_RATE), records=records_from_vision_check))
register(SuiteKind(
    "grounding-check", run=grounding.grounding_check, text=render_grounding, command=grounding.COMMAND,
    view=ReportView("click", **_CLICKS, sort_value=co.target_type, sort_label="type",
                    caption=co.grounding_caption, screenshots=True, pixel_boxes=False),
    sweep=SweepMetric("grounding-check", **_HIT_RATE), records=records_from_grounding))
register(SuiteKind(
    "candidate-eval", run=candidate_eval, text=report_text.render_candidate_eval,
    view=ReportView("pair", co.pair_outcome, co.PAIR_OUTCOMES, ("neither", "only-base"), "loss",
                    co.target_colour, "target colour", big=True)))
register(SuiteKind(
    "tasks", run=tasks_run,
    text=lambda data, cases, max_rows: render_tasks(data.get("summary") or {}, cases, data, max_rows),
    view=ReportView("task", co.task_outcome, co.TASK_OUTCOMES, ("error", "fail"), "failure", co.task_domain,
                    "domain", screenshots=True),
    sweep=SweepMetric("tasks run", "success.hit_rate", "success.hit_rate_ci95", "success.hits", "success.n",
                      not_taken=("seed",),
                      suite_first="a folder, task files or an OSWorld test_*.json index"),
    records=records_from_tasks))
register(SuiteKind(
    "sweep", text=render_sweep,
    view=ReportView("cell", co.cell_outcome, co.CELL_OUTCOMES, ("unfinished", "below"), "cell below the best",
                    co.cell_preset, "preset")))
register(SuiteKind(
    learning_curve.KIND, text=learning_curve.render_curve,
    view=ReportView("curve", learning_curve.round_outcome, learning_curve.OUTCOMES, ("below chance", "at chance"),
                    "round not above chance", learning_curve.round_policy, "policy", screenshots=True)))
register(SuiteKind("preflight", run=preflight_suite.preflight, text=report_text.render_checks,
                   command=preflight_suite.COMMAND))
register(SuiteKind("acceptance-check", run=acceptance.acceptance_check, text=report_text.render_acceptance,
                   command=acceptance.COMMAND))
register(SuiteKind("session", text=report_text.render_session))
register(SuiteKind("replay", run=replay, text=report_text.render_replay))
register(SuiteKind(
    judge_run.KIND, run=judge_run.judge, text=judge_run.render_judged, command=judge_run.COMMAND,
    view=ReportView("judged", judge_run.judged_outcome, judge_run.JUDGED_OUTCOMES, ("error", "missed"), "wrong pick",
                    lambda c: str(c.get("task") or ""), "task", screenshots=True),
    sweep=SweepMetric("judge", "best_of_n.rate", "best_of_n.ci95", "best_of_n.hits", "best_of_n.n",
                      not_taken=("seed",), suite_first="the rollout set's folder")))
