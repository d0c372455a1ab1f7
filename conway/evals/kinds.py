"""What a suite kind is: one `SuiteKind` record per report kind, registered once (as `register()` in simonw/llm).

A report's `kind` (vision-check, grounding-check, tasks, sweep …) is looked up here by everything that treats
kinds differently: `conway report`'s text (`conway.evals.report_render`), the viewer's report pages
(`conway.view.reports`), `conway sweep` (`conway.evals.sweep`) and `conway export --from-report`
(`conway.evals.export_report`). None of them names a kind; each reads the facet it needs from the record.
The records are registered in `conway.evals.suites`, one `register(...)` line per kind, and read from there.

This module holds the record types only; it imports no suite, so any suite module may use them. A suite's
command piece is `conway.args.command.CommandPiece` (the command line assembles the parser from them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from conway.args.command import CommandPiece

Case = dict[str, Any]
ReportData = dict[str, Any]

TextRender = Callable[[ReportData, list[Case], int], list[str]]
"""(report, cases, max rows) -> the lines `conway report` prints below the report's header."""
ExportRecords = Callable[[Path, ReportData, list[Case]], list[dict[str, Any]]]
"""(report path, report, cases) -> `conway-traj/1` records, each labelled (`conway export --from-report`)."""


@dataclass(frozen=True)
class ReportView:
    """How the viewer draws the kind's report (`conway view REPORT`): the case filters and which card layout.

    The HTML itself is drawn by the viewer's `layout` (`conway.view.reports.LAYOUTS`: click, pair, task, cell),
    so this record stays free of HTML and the viewer free of kind names."""

    layout: str
    """The card and summary layout in `conway.view.reports.LAYOUTS`."""
    outcome: Callable[[Case], str]
    outcomes: tuple[str, ...]
    """Every outcome, in the filter's order."""
    error_outcomes: tuple[str, ...]
    """Where the `e` key jumps."""
    next_error: str
    """What the `e` key is called."""
    sort_value: Callable[[Case], str]
    """What the report's `kind` filter sorts a case by."""
    sort_label: str
    caption: Callable[[Case], str] | None = None
    """The click layout's caption of a case's image."""
    screenshots: bool = False
    """Cases name a screenshot file (grounding); otherwise the image is regenerated from the report's seed."""
    pixel_boxes: bool = True
    """Target boxes are inclusive pixel boxes (False: spans, the ScreenSpot rule)."""
    big: bool = False


@dataclass(frozen=True)
class SweepMetric:
    """What `conway sweep` runs for the kind and where its rate is in the report's summary."""

    command: str
    """The command words a cell runs (`vision-check`, `tasks run`)."""
    rate: str
    ci95: str
    successes: str
    cases: str
    """Keys into the summary (a dotted key reaches into a part of it)."""
    not_taken: tuple[str, ...] = ()
    """Grid keys the command has no flag for."""
    suite_first: str = ""
    """What the command's leading suite words are, when its args begin with them (its overrides then follow
    the suite); empty when the command takes no suite words."""


@dataclass(frozen=True)
class SuiteKind:
    """One report kind: the command that writes it and every way Conway reads it back."""

    name: str
    """The report's `kind`."""
    run: Callable[..., Any] | None = None
    """The function that runs the suite and writes its report."""
    text: TextRender | None = None
    """`conway report`'s lines; without one the summary and cases are printed as JSON."""
    view: ReportView | None = None
    """`conway view REPORT`; without one the viewer refuses the report."""
    sweep: SweepMetric | None = None
    """`conway sweep`; without one a sweep cannot run the kind."""
    records: ExportRecords | None = None
    """`conway export --from-report`; without one the export refuses the report."""
    command: CommandPiece | None = None
    """Its `conway` subcommand (parser and handler, declared in the suite's module); None: the command line owns
    the kind's command (`conway/cli/`), or it has none."""
