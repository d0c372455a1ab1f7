"""`conway vision-check`: can this setup click what the model sees?

Each case is a generated image (seeded): one coloured target shape of random
size and place among distractors of other colours, and an instruction naming
it ("Click the red square."). The image goes through the configured policy's
own `decide()` inside a `DecisionContext` exactly like a screenshot in the
loop, so the adapter's resize rule, the server's image limit and the
coordinate convention all take part. The proposed click comes back in
screenshot pixels and is scored without executing anything: a hit when it
lies inside the target's box (inclusive), plus the distance to its centre.

Exit codes (`conway.errors.ExitCode`): 0 every case hit; 2 misses or
errors; 3 the model never produced a valid decision; 1 setup errors (bad
arguments, an unreachable model).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

from conway.args.command import CommandPiece, Subparsers, add_model_args, add_overrides, cmd
from conway.args.pool import add_pool_args
from conway.args.resolve import home_of, model_config_of
from conway.config import ConwayConfig
from conway.errors import ExitCode, UserError, exit_codes_text
from conway.evals.clicks import CaseError, ask, decision_fields, first_click, parallel_notes, serial_lock
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
from conway.evals.stats import percentile, wilson
from conway.observe.vision_cases import (
    DEFAULT_SIZE,
    GENERATOR,
    VisionCase,
    generate_case,
    get_profile,
    references,
)
from conway.observe.vision_cases import (
    PROFILES as VISION_PROFILES,
)
from conway.prompt.click_check import click_check_context
from conway.protocols import Decision, DecisionContext, Policy, describe_causes
from conway.readiness.checks.model_runtime import effective_backend
from conway.store.home import Home

# --- one case through the policy ---------------------------------------------------


def decision_context(case: VisionCase, config: ConwayConfig) -> DecisionContext:
    """The context the loop would build around this image (fixed prompt; the goal names the target)."""
    return click_check_context("vision-check", case.png, case.size, case.index, case.instruction, config)


def score(case: VisionCase, decision: Decision) -> dict[str, Any]:
    """hit / predicted point / distance from a decision's first action (nothing is executed)."""
    point, action, error = first_click(decision)
    out: dict[str, Any] = {"predicted": None, "action": action, "hit": False, "distance_px": None, "error": error}
    if isinstance(error, CaseError) and error.cause:
        out["error_cause"] = error.cause
    if point is None:
        return out
    x, y = point
    cx, cy = case.target.centre
    out.update(predicted=[round(x, 2), round(y, 2)], hit=case.target.contains(x, y),
               distance_px=round(math.hypot(x - cx, y - cy), 2))
    return out


def run_case(policy: Policy, config: ConwayConfig, seed: int, index: int, size: tuple[int, int],
             lock: threading.Lock | None = None, profile: str = "standard") -> dict[str, Any]:
    case = generate_case(seed, index, size, profile)
    ctx = decision_context(case, config)
    record: dict[str, Any] = {"index": index, "instruction": case.instruction, "target": case.target.record(),
                              "distractors": len(case.distractors),
                              "image": {"size": list(case.size), "sha256": case.sha256}}
    decision, error, seconds = ask(policy, ctx, lock)
    if decision is None:
        result = {"predicted": None, "action": None, "hit": False, "distance_px": None, "error": error,
                  "error_cause": (error.cause if isinstance(error, CaseError) else None) or "model error"}
    else:
        result = score(case, decision)
    record["latency_s"] = round(seconds, 6)
    record.update(result)
    record.update(decision_fields(decision, policy))
    return record


# --- the summary -----------------------------------------------------------------


def miss_pattern(records: list[dict[str, Any]]) -> dict[str, Any]:
    """What the answered points say about the setup: shifted, scaled, clustered or scattered."""
    pts = [(r["predicted"], r["target"]["centre"], r["target"]["box"]) for r in records if r.get("predicted")]
    misses = sum(1 for r in records if r.get("predicted") and not r.get("hit"))
    out: dict[str, Any] = {"answered": len(pts), "misses": misses}
    if len(pts) < 3:
        out["verdict"] = "too few answered cases to see a pattern" if misses else None
        return out
    px = [p[0][0] for p in pts]
    py = [p[0][1] for p in pts]
    cx = [p[1][0] for p in pts]
    cy = [p[1][1] for p in pts]
    dx = [a - b for a, b in zip(px, cx)]
    dy = [a - b for a, b in zip(py, cy)]
    n = len(pts)

    def mean(v: list[float]) -> float:
        return sum(v) / len(v)

    def sd(v: list[float]) -> float:
        m = mean(v)
        return math.sqrt(sum((x - m) ** 2 for x in v) / len(v))

    half = mean([(b[2] - b[0] + b[3] - b[1]) / 4 for _, _, b in pts])  # typical half-size of a target
    kx = sum(a * b for a, b in zip(px, cx)) / max(1e-9, sum(b * b for b in cx))
    ky = sum(a * b for a, b in zip(py, cy)) / max(1e-9, sum(b * b for b in cy))
    raw_rms = math.sqrt(sum(a * a + b * b for a, b in zip(dx, dy)) / n)
    scaled_rms = math.sqrt(sum((a - kx * c) ** 2 + (b - ky * d) ** 2 for a, b, c, d in zip(px, py, cx, cy)) / n)
    spread_pred = math.hypot(sd(px), sd(py))
    spread_target = math.hypot(sd(cx), sd(cy))
    out.update(mean_offset_px=[round(mean(dx), 1), round(mean(dy), 1)],
               offset_sd_px=[round(sd(dx), 1), round(sd(dy), 1)], scale_fit=[round(kx, 3), round(ky, 3)],
               rms_error_px=round(raw_rms, 1), rms_after_scale_fit_px=round(scaled_rms, 1),
               spread_predicted_px=round(spread_pred, 1), spread_targets_px=round(spread_target, 1),
               target_half_size_px=round(half, 1))
    same, same_n = _most_common_point(px, py)
    out["most_common_point"] = {"point": list(same), "count": same_n}
    if misses == 0:
        out["verdict"] = "no misses"
    elif same_n >= 3 and same_n * 2 >= n:
        out["verdict"] = (f"clustered: {same_n} of {n} answers are the same point ({same[0]:.0f}, {same[1]:.0f}) "
                          "whatever the target; the model is not using the image (is the image reaching it? "
                          "mmproj loaded?) or cannot ground at all")
    elif spread_target > 0 and spread_pred < 0.25 * spread_target:
        out["verdict"] = (f"clustered: the answers barely move with the target (spread {spread_pred:.0f} px vs "
                          f"{spread_target:.0f} px); the model is not using the image (is the image reaching "
                          "it? mmproj loaded?) or cannot ground at all")
    elif (abs(kx - 1) > 0.05 or abs(ky - 1) > 0.05) and scaled_rms < 0.5 * raw_rms:
        out["verdict"] = (f"scaled: answers ≈ ({kx:.2f}·x, {ky:.2f}·y) of the targets; the coordinate space "
                          "does not match: the server resized the image (llama.cpp image-token limit) or the "
                          "convention is wrong (absolute vs relative / 0–1000)")
    elif math.hypot(mean(dx), mean(dy)) > 2 * half and math.hypot(sd(dx), sd(dy)) < 0.5 * math.hypot(mean(dx), mean(dy)):
        out["verdict"] = (f"shifted: answers are offset by about ({mean(dx):+.0f}, {mean(dy):+.0f}) px; an origin "
                          "problem (monitor origin, cropping, window decorations) rather than the model")
    else:
        out["verdict"] = "scattered: misses without a systematic pattern; the model's grounding is weak here"
    return out


def _most_common_point(xs: list[float], ys: list[float], tolerance_px: float = 2.0) -> tuple[tuple[float, float], int]:
    """The answered point repeated most often (within `tolerance_px`) and how often."""
    best, best_n = (xs[0], ys[0]), 0
    for x, y in zip(xs, ys):
        n = sum(1 for a, b in zip(xs, ys) if abs(a - x) <= tolerance_px and abs(b - y) <= tolerance_px)
        if n > best_n:
            best, best_n = (x, y), n
    return best, best_n


def summarize(records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    n = len(records)
    hits = sum(1 for r in records if r.get("hit"))
    errors = sum(1 for r in records if r.get("error"))
    answered = [r["latency_s"] for r in records if r.get("raw_output") is not None]
    lo, hi = wilson(hits, n)
    dists = [r["distance_px"] for r in records if r.get("distance_px") is not None]
    causes: dict[str, int] = {}
    for r in records:
        if r.get("error_cause"):
            causes[r["error_cause"]] = causes.get(r["error_cause"], 0) + 1
    return {
        "cases": n, "hits": hits, "misses": n - hits - errors, "errors": errors,
        "valid_decisions": sum(1 for r in records if r.get("action") is not None), "model_errors": causes,
        "hit_rate": hits / n if n else 0.0, "hit_rate_ci95": [round(lo, 4), round(hi, 4)],
        "latency_s": {"p50": percentile(answered, 50), "p95": percentile(answered, 95),
                      "mean": round(sum(answered) / len(answered), 6) if answered else None, "n": len(answered),
                      "over": "cases that got an answer from the model"},
        "distance_px": {"median": percentile(dists, 50), "p95": percentile(dists, 95)},
        "wall_s": round(wall_s, 3), "cases_per_s": round(n / wall_s, 4) if wall_s > 0 else None,
        "pattern": miss_pattern(records),
        "references": references(records) if records else None,
    }


# --- sizes, sheet, the command ------------------------------------------------------


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().replace("×", "x").split("x"))
    except ValueError:
        raise UserError(f"--size must look like WIDTHxHEIGHT, e.g. 1920x1080 (got {text!r})") from None
    if not (64 <= w <= 16384 and 64 <= h <= 16384):
        raise UserError(f"--size {w}x{h} is outside 64..16384 per side")
    return w, h


def screen_size(timeout_s: float = 15.0) -> tuple[int, int] | None:
    """The primary monitor's captured size, asked in a time-limited subprocess; None without a display."""
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
        return None
    code = ("import mss\nwith mss.MSS() as m:\n    s = m.grab(m.monitors[1]).size\n    print(s.width, s.height)")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    try:
        w, h = (int(v) for v in proc.stdout.split())
    except ValueError:
        return None
    return (w, h) if w >= 64 and h >= 64 else None


def resolve_size(explicit: str | None) -> tuple[tuple[int, int], str]:
    if explicit:
        return parse_size(explicit), "--size"
    real = screen_size()
    if real:
        return real, "the primary screen's captured size"
    return DEFAULT_SIZE, f"default {DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]} (no display found)"


def draw_sheet(records: list[dict[str, Any]], seed: int, size: tuple[int, int], thumb_w: int = 360,
               profile: str = "standard") -> bytes | None:
    """A contact sheet of misses and errors: image, target box (green), predicted point (magenta)."""
    tiles = []
    for rec in (r for r in records if not r.get("hit")):
        case = generate_case(seed, rec["index"], size, profile)
        what = case.instruction[10:-1]
        if rec.get("predicted"):
            label = f"#{rec['index']} {what}: miss by {rec.get('distance_px', 0):.0f} px"
        else:
            label = f"#{rec['index']} {what}: {str(rec.get('error') or 'no click')[:40]}"
        tiles.append(Tile(load=lambda png=case.png: png, box=case.target.box, predicted=rec.get("predicted"),
                          caption=label, detail=f"predicted {rec.get('predicted') or '-'}"))
    return contact_sheet(tiles, thumb_w)


@dataclass
class VisionSuite:
    """Generated colour-target images (case = index) through one policy, scored as clicks."""

    config: ConwayConfig
    seed: int
    size: tuple[int, int]
    profile: str = "standard"
    lock: threading.Lock | None = None
    """Held around each request when the policy answers one at a time but cases run K at a time."""
    kind = "vision-check"

    def run_case(self, policy: Policy, index: int) -> dict[str, Any]:
        return run_case(policy, self.config, self.seed, index, self.size, self.lock, self.profile)

    def summarize(self, records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
        return summarize(records, wall_s)

    def verdict(self, records: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[ExitCode, str]:
        return click_verdict(records, summary, summary["model_errors"])


def vision_check(home: Home, config: ConwayConfig, *, output: str, samples: int, seed: int,
                 size: str | None = None, parallel: int = 1, sheet: str | None = None,
                 argv: list[str] | None = None, progress: bool = True, policy: Policy | None = None,
                 say: Callable[[str], None] = print, profile: str = "standard", pool: Pool | None = None,
                 resume: str | None = None) -> int:
    """The whole command: validate, run, write the report (and sheet), print a summary. Returns the exit code."""
    if samples < 1:
        raise UserError(f"--samples must be at least 1 (got {samples})")
    check_parallel(parallel)
    out, sheet_path = check_outputs(output, home, sheet, cases=samples)
    get_profile(profile)
    image_size, size_source = resolve_size(size)
    suite = VisionSuite(config, seed, image_size, profile, None if pool else serial_lock(config, parallel))
    sheet_written = None

    def draw(result: SuiteResult) -> dict[str, Any]:
        nonlocal sheet_written
        if sheet_path is not None:
            png = draw_sheet(result.records, seed, image_size, profile=profile)
            if png is not None:
                write_new_file(sheet_path, png)
                sheet_written = str(sheet_path)
        return {"sheet": sheet_written}

    with suite_policy(config, home, policy, pool) as policy:
        for note in parallel_notes(config, parallel):
            say(note)
        report = Report("vision-check", out, argv=argv, config=config, seed=seed, expected_cases=samples,
                        parameters={"samples": samples, "size": list(image_size), "size_source": size_source,
                                    "parallel": parallel, "generator": GENERATOR, "profile": profile,
                                    "backend": effective_backend(config),
                                    "instruction_form": "Click the <colour> <shape>.",
                                    "scoring": "hit = click inside the target's box (inclusive); nothing executed"})
        result = run_suite(suite, policy, range(samples), report, parallel=parallel, progress=progress, extra=draw,
                           pool=pool, resume=resume)
    summary = result.summary
    ci = summary["hit_rate_ci95"]
    say(f"vision-check: {summary['hits']}/{summary['cases']} hit ({summary['hit_rate']:.1%}, 95% CI {ci[0]:.1%}–{ci[1]:.1%}), "
        f"{summary['misses']} missed, {summary['errors']} error(s); image {image_size[0]}x{image_size[1]} "
        f"({size_source})")
    if summary["model_errors"]:
        say(f"model errors: {describe_causes(summary['model_errors'])}")
    if summary.get("no_valid_decision"):
        say(summary["no_valid_decision"])
    lat = summary["latency_s"]
    if lat["p50"] is not None:
        say(f"latency p50 {lat['p50']:.3f} s, p95 {lat['p95']:.3f} s; {summary['cases_per_s']} cases/s")
    if summary["pattern"].get("verdict") and summary["pattern"]["verdict"] != "no misses":
        say(f"pattern: {summary['pattern']['verdict']}")
    if summary.get("interrupted"):
        say(f"{summary['interrupted']}: the report is partial")
    say(f"report: {out}" + (f"; sheet: {sheet_written}" if sheet_written else
                            ("; sheet: none (no misses)" if sheet_path else "")))
    return result.code


# --- its command, `conway vision-check` (registered with its kind in conway.evals.suites) ---


def _add_parser(sub: Subparsers) -> None:
    p = cmd(sub, "vision-check", "score the model's clicks on generated colour-target images (nothing is executed)",
            "Send seeded generated images (a coloured target among distractors, 'Click the red square.')\n"
            "through the configured policy's own resize and coordinate pipeline and score the proposed\n"
            "click against the target's box.\n" + exit_codes_text("all hit", "misses or errors"))
    add_model_args(p)
    p.add_argument("--samples", type=int, default=8, metavar="N", help="number of generated images (default 8)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the images (default 0)")
    p.add_argument("--size", metavar="WxH", help="image size (default: the real screen's, else 1920x1080)")
    p.add_argument("--parallel", type=int, default=1, metavar="K",
                   help="send K requests at once (for servers with several slots)")
    p.add_argument("--sheet", metavar="FILE.png", help="also draw a contact sheet of the misses")
    add_pool_args(p)
    p.add_argument("--profile", default="standard", choices=tuple(VISION_PROFILES),
                   help="case difficulty: standard (small targets among distractors); for CPU learning demos: "
                        "demo (one large target), offcentre (one target never on the image centre; offcentre-fixed: "
                        "of 28-36 px at any image size), choose "
                        "(2-3 squares of different colours, the goal names one)")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_overrides(p)


def _run_command(args) -> int:
    home = home_of(args)
    if args.samples < 1:
        raise UserError(f"--samples must be at least 1 (got {args.samples})")
    cfg = model_config_of(args, home)
    return vision_check(home, cfg, output=args.output, samples=args.samples, seed=args.seed, size=args.size,
                        parallel=args.parallel, sheet=args.sheet, argv=args._argv, progress=not args.quiet,
                        profile=args.profile, pool=pool_of(args, cfg, home), resume=args.resume)


COMMAND = CommandPiece("vision-check", _add_parser, _run_command, after="preflight")
