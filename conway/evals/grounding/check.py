"""The `conway grounding-check` command: build the cases, run them through the policy, write the report.

Exit codes (`conway.errors.ExitCode`): 0 every case hit; 2 misses or
errors; 3 the model never produced a valid decision (every case it was asked
came back without a usable action); 1 setup errors (bad arguments, a missing
dataset folder, no harvestable target, an unreachable model).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conway.args.command import CommandPiece, Subparsers, add_model_args, add_overrides, cmd
from conway.args.pool import add_pool_args
from conway.args.resolve import home_of, model_config_of
from conway.config import ConwayConfig
from conway.errors import ExitCode, UserError, exit_codes_text
from conway.evals.clicks import parallel_notes, serial_lock
from conway.evals.grounding.cases import SIZE_BUCKETS, GroundingCase, ImageCache, run_case, summarize
from conway.evals.pool import Pool, pool_of
from conway.evals.report import Report, write_new_file
from conway.evals.runner import (
    SuiteResult,
    check_outputs,
    check_parallel,
    click_verdict,
    run_suite,
    suite_policy,
)
from conway.evals.sheet import Tile, contact_sheet
from conway.protocols import Policy
from conway.readiness.checks.model_runtime import effective_backend
from conway.store.home import Home

SCORING = ("hit = click inside the target box (x0 <= x <= x1 and y0 <= y <= y1, screenshot pixels; the "
           "ScreenSpot rule); distance to the box centre; nothing executed")


@dataclass
class GroundingSuite:
    """Instructions on real screenshots (dataset rows or live screens) through one policy, scored as clicks."""

    config: ConwayConfig
    lock: threading.Lock | None = None
    """Held around each request when the policy answers one at a time but cases run K at a time."""
    cache: ImageCache = field(default_factory=ImageCache)
    kind = "grounding-check"

    def run_case(self, policy: Policy, case: GroundingCase) -> dict[str, Any]:
        return run_case(policy, self.config, case, self.cache, self.lock)

    def summarize(self, records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
        return summarize(records, wall_s)

    def verdict(self, records: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[ExitCode, str]:
        return click_verdict(records, summary, summary["invalid_output"])


def draw_sheet(records: list[dict[str, Any]], cases: list[GroundingCase], thumb_w: int = 480) -> bytes | None:
    """Contact sheet of misses and errors: screenshot, target box (green), the click (magenta)."""
    by_index = {c.index: c for c in cases}
    tiles = []
    for rec in records:
        if rec.get("hit") or rec["index"] not in by_index:
            continue
        case = by_index[rec["index"]]
        what = case.instruction if len(case.instruction) <= 48 else case.instruction[:47] + "…"
        outcome = (f"miss by {rec['distance_px']:.0f} px" if rec.get("predicted")
                   else str(rec.get("error") or "no click")[:48])
        tiles.append(Tile(load=case.load_image, box=case.box, predicted=rec.get("predicted"),
                          caption=f"#{rec['index']} {what}", detail=f"{case.source} / {case.type}: {outcome}"))
    return contact_sheet(tiles, thumb_w, cols_max=3)


def check_source(dataset: str | None, apps: str | None, desktop: bool, samples: int | None,
                 per_screen: int | None) -> str:
    """The one source of cases asked for ("--dataset", "--apps" or "--desktop"); UserError otherwise."""
    chosen = [name for name, on in (("--dataset", dataset), ("--apps", apps), ("--desktop", desktop)) if on]
    if len(chosen) != 1:
        raise UserError("give exactly one source of cases: --dataset DIR, --apps SUITE or --desktop"
                        + (f" (got {', '.join(chosen)})" if chosen else ""))
    if samples is not None and samples < 1:
        raise UserError(f"--samples must be at least 1 (got {samples})")
    if per_screen is not None and per_screen < 1:
        raise UserError(f"--per-screen must be at least 1 (got {per_screen})")
    return chosen[0]


def prepare_cases(out: Path, *, dataset: str | None = None, apps: str | None = None, desktop: bool = False,
                  samples: int | None = None, seed: int = 0, per_screen: int | None = None,
                  bbox_format: str = "auto", say: Callable[[str], None] = print
                  ) -> tuple[list[GroundingCase], dict[str, Any], Callable[[], None] | None]:
    """(cases, report parameters, cleanup on failure) from one source; live screenshots go beside `out`."""
    source = check_source(dataset, apps, desktop, samples, per_screen)
    params: dict[str, Any] = {"source": source.lstrip("-"), "scoring": SCORING,
                              "size_buckets": [name for name, _ in SIZE_BUCKETS],
                              "size_bucket_rule": "target area / screen area"}
    if dataset:
        from conway.evals.grounding.dataset import load_dataset_dir, sample_cases

        loaded = load_dataset_dir(dataset, bbox_format=bbox_format)
        cases = sample_cases(loaded.cases, samples, seed)
        params.update(dataset=str(loaded.root), rows=loaded.total_rows, usable=len(loaded.cases),
                      samples=len(cases), bbox_format=bbox_format, files=[f.record() for f in loaded.files],
                      skipped_count=len(loaded.skipped), skipped=loaded.skipped[:200])
        for f in loaded.files:
            say(f"{f.file}: {f.rows} row(s), {f.used} used" + (f"; bbox {f.bbox_format}: {f.why}" if f.bbox_format
                                                                 else ""))
        if loaded.skipped:
            say(f"skipped {len(loaded.skipped)} malformed row(s) (listed in the report), e.g. "
                + "; ".join(f"{s['file']} row {s['row']}: {s['reason']}" for s in loaded.skipped[:3]))
        return cases, params, None
    from conway.evals.grounding.live import harvest_for_check

    harvest = harvest_for_check(out, suite=apps, desktop=desktop, per_screen=per_screen, seed=seed,
                                samples=samples, say=say)
    params.update(harvest.parameters)
    return harvest.cases, params, harvest.discard


def grounding_check(home: Home, config: ConwayConfig, *, output: str, dataset: str | None = None,
                    apps: str | None = None, desktop: bool = False, samples: int | None = None, seed: int = 0,
                    per_screen: int | None = None, bbox_format: str = "auto", parallel: int = 1,
                    sheet: str | None = None, argv: list[str] | None = None, progress: bool = True,
                    policy: Policy | None = None, say: Callable[[str], None] = print, pool: Pool | None = None,
                    resume: str | None = None) -> int:
    """The whole command; returns the exit code (UserError for setup problems).

    With `pool` the cases run in its workers: their screenshots are read where the case names them, so on a
    Ray cluster a dataset must be at the same path on every node."""
    check_source(dataset, apps, desktop, samples, per_screen)
    check_parallel(parallel)
    out, sheet_path = check_outputs(output, home, sheet)
    cases, params, cleanup = prepare_cases(out, dataset=dataset, apps=apps, desktop=desktop, samples=samples,
                                           seed=seed, per_screen=per_screen, bbox_format=bbox_format, say=say)
    params.update(parallel=parallel, backend=effective_backend(config))
    suite = GroundingSuite(config, None if pool else serial_lock(config, parallel))
    sheet_written = None

    def draw(result: SuiteResult) -> dict[str, Any]:
        nonlocal sheet_written
        if sheet_path is not None:
            png = draw_sheet(result.records, cases)
            if png is not None:
                write_new_file(sheet_path, png)
                sheet_written = str(sheet_path)
        return {"sheet": sheet_written}

    asked = False
    try:
        with suite_policy(config, home, policy, pool) as policy:
            asked = True
            for note in parallel_notes(config, parallel):
                say(note)
            report = Report("grounding-check", out, argv=argv, config=config, seed=seed,
                            expected_cases=len(cases), parameters=params)
            result = run_suite(suite, policy, cases, report, parallel=parallel, progress=progress, extra=draw,
                               pool=pool, resume=resume)
    except BaseException:
        if cleanup and not asked:  # no model to ask: the live screenshots taken for it are not kept
            cleanup()
        raise
    for line in summary_lines(result.summary):
        say(line)
    if result.summary.get("interrupted"):
        say(f"{result.summary['interrupted']}: the report is partial")
    say(f"report: {out}" + (f"; sheet: {sheet_written}" if sheet_written else
                            ("; sheet: none (no misses)" if sheet_path else "")))
    return result.code


def summary_lines(summary: dict[str, Any]) -> list[str]:
    ci = summary["hit_rate_ci95"]
    lines = [f"grounding-check: {summary['hits']}/{summary['cases']} hit ({summary['hit_rate']:.1%}, 95% CI "
             f"{ci[0]:.1%}–{ci[1]:.1%}), {summary['misses']} missed, {summary['errors']} error(s)"]
    if summary["invalid_output"]:
        lines.append("errors: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["invalid_output"].items())))
    for key, title in (("by_size", "by target size"), ("by_type", "by type"), ("by_source", "by source")):
        groups = summary.get(key) or {}
        if len(groups) > 1 or key == "by_size":
            lines.append(f"{title}: " + ", ".join(f"{k} {g['hits']}/{g['n']}" for k, g in groups.items()))
    lat = summary["latency_s"]
    if lat["p50"] is not None:
        dist = summary["distance_px"]["median"]
        lines.append(f"latency p50 {lat['p50']:.3f} s, p95 {lat['p95']:.3f} s"
                     + (f"; distance to the box centre median {dist:.0f} px" if dist is not None else ""))
    verdict = (summary.get("pattern") or {}).get("verdict")
    if verdict and verdict != "no misses":
        lines.append(f"pattern: {verdict}")
    if summary.get("no_valid_decision"):
        lines.append(summary["no_valid_decision"])
    return lines


# --- its command, `conway grounding-check` (registered with its kind in conway.evals.suites) ---


def _add_parser(sub: Subparsers) -> None:
    p = cmd(sub, "grounding-check", "score the model's clicks on real screens: live apps or a ScreenSpot-style dataset",
            "Instruction -> real screenshot -> target box, through the configured policy's own resize and\n"
            "coordinate pipeline; nothing is clicked. Cases come from --dataset DIR (ScreenSpot / v2 / Pro JSON or\n"
            "a datasets folder), --apps SUITE (starts the suite's apps, targets from the accessibility tree) or\n"
            "--desktop (the current desktop).\n" + exit_codes_text("all hit", "misses or errors"))
    add_model_args(p)
    p.add_argument("--dataset", metavar="DIR", help="a local ScreenSpot-style folder (never downloaded)")
    p.add_argument("--apps", metavar="SUITE", help="a grounding suite file (YAML), e.g. evals/grounding/stock-linux.yaml")
    p.add_argument("--desktop", action="store_true", help="harvest targets from the applications on this desktop")
    p.add_argument("--samples", type=int, metavar="N", help="at most N cases (seeded sample; default all)")
    p.add_argument("--per-screen", type=int, metavar="N", help="live: at most N targets per screen (default: the suite's)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sample and the harvest (default 0)")
    p.add_argument("--bbox-format", default="auto", choices=("auto", "xywh", "xyxy"),
                   help="dataset boxes: [x, y, w, h] or [x1, y1, x2, y2] (default: detected per file)")
    p.add_argument("--parallel", type=int, default=1, metavar="K",
                   help="send K requests at once (for servers with several slots)")
    add_pool_args(p)
    p.add_argument("--sheet", metavar="FILE.png", help="also draw a contact sheet of the misses")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_overrides(p)


def _run_command(args) -> int:
    home = home_of(args)
    cfg = model_config_of(args, home)
    return grounding_check(home, cfg, output=args.output, dataset=args.dataset, apps=args.apps, desktop=args.desktop,
                           samples=args.samples, seed=args.seed, per_screen=args.per_screen,
                           bbox_format=args.bbox_format, parallel=args.parallel, sheet=args.sheet, argv=args._argv,
                           progress=not args.quiet, pool=pool_of(args, cfg, home), resume=args.resume)


COMMAND = CommandPiece("grounding-check", _add_parser, _run_command, after="vision-check")
