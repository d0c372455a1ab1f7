"""`conway export`: the journal's steps (or a report's cases) written out as training-ready data.

Stages, each in its own module: `conway.experience.steps` (journal → step records, labels,
screenshots), `conway.policies.target_turns` (a step's target turn in a model
family's format), `conway.experience.export_writers` (JSONL, `datasets` folder,
ShareGPT). This module chooses and runs them and says what it left out; a report's records
(`--from-report`) are read by the report's kind (`conway.evals.export_report`) and handed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from conway.errors import UserError
from conway.experience.export_writers import _refuse_existing, write_hf, write_jsonl
from conway.experience.steps import check_screenshots, collect_records, mark_missing_images
from conway.policies.families import FAMILIES
from conway.redact import redact_known
from conway.store.state import STDOUT


@dataclass
class ExportResult:
    written: int
    skipped_lines: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    """NUL runs inside the journal's files, skipped: "FILE: skipped N unreadable bytes at offset O"."""
    missing: list[str] = field(default_factory=list)
    """Steps left out for a missing screenshot (--skip-missing)."""
    unrendered: list[str] = field(default_factory=list)
    """Steps with no target turn in the --style family's form (jsonl: written without `target`; hf: left out)."""
    targets: int | None = None
    """jsonl with --style: records written with a target turn."""
    labelled: int = 0
    images_missing: list[str] = field(default_factory=list)
    """Steps kept without their screenshot (observation.image null, image_missing true)."""
    left_out_of_images: int = 0
    """--format hf: steps without an image left out of the image training data."""
    no_conversation: list[str] = field(default_factory=list)
    """--format hf: steps left out because they make no whole conversation (no screenshot recorded)."""
    redacted: int = 0
    """Secret values (known ones from the environment, and key shapes) replaced by <redacted>."""


def export(journal_dir: Path, output: Path, *, include_dry_runs: bool = False, include_uncertain: bool = False,
           fmt: str = "jsonl", style: str | None = None, skip_missing: bool = False,
           home_root: Path | None = None, report_records: Callable[[], list[dict]] | None = None,
           secret_values: list[str] | None = None) -> ExportResult:
    """Export the journal (or a report's records: `report_records`, `conway.evals.export_report`) as JSONL or an
    hf dataset folder.

    Every string is scanned for `secret_values` (the API key and other credential-looking variables'
    values; see `conway.redact.known_secret_values`) and key shapes; each is replaced by <redacted>.
    """
    if fmt not in ("jsonl", "hf"):
        raise UserError(f"unknown --format {fmt!r}; use jsonl or hf")
    if style is not None and style not in FAMILIES:
        raise UserError(f"unknown --style {style!r}; use one of {', '.join(FAMILIES)}")
    if output == STDOUT and fmt == "hf":
        raise UserError("--format hf writes a folder; give --output a new folder, not standard output")
    _refuse_existing(output)
    root = home_root if home_root is not None else journal_dir.parent
    if report_records is not None:
        records, skipped, unreadable = report_records(), [], []
        labelled = len(records)
    else:
        records, skipped, unreadable, labelled = collect_records(
            journal_dir, include_dry_runs=include_dry_runs, include_uncertain=include_uncertain, home_root=root)
    if not records:
        raise UserError("nothing to export: no step is left to write (dry runs and uncertain steps are left out "
                        "unless --include-dry-runs / --include-uncertain)")
    missing: list[str] = []
    if skip_missing:
        records, missing = check_screenshots(records, root, skip_missing=True)
    images_missing = mark_missing_images(records, root)
    records, redacted = redact_known(records, secret_values or [])
    no_conversation: list[str] = []
    if fmt == "hf":
        unrendered, no_conversation = write_hf(records, output, root, style or "generic")
        left_out = len(images_missing)
        written = len(records) - len(unrendered) - left_out - len(no_conversation)
    else:
        unrendered = write_jsonl(records, output, style)  # records without a target turn are still written
        written = len(records)
        left_out = 0
    return ExportResult(written=written, targets=written - len(unrendered) if style and fmt == "jsonl" else None,
                        skipped_lines=skipped, unreadable=unreadable, missing=missing, unrendered=unrendered, labelled=labelled,
                        images_missing=images_missing, left_out_of_images=left_out,
                        no_conversation=no_conversation, redacted=redacted)
