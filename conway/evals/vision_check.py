"""`conway vision-check`: can this setup click what the model sees?

Each case is a generated image (seeded): one coloured target shape of random
size and place among distractors of other colours, and an instruction naming
it ("Click the red square."). The image goes through the configured policy's
own `decide()` inside a `DecisionContext` exactly like a screenshot in the
loop, so the adapter's resize rule, the server's image limit and the
coordinate convention all take part. The proposed click comes back in
screenshot pixels and is scored without executing anything: a hit when it
lies inside the target's box (inclusive), plus the distance to its centre.

Exit codes: 0 every case hit; 2 misses or errors; 1 setup errors (bad
arguments, an unreachable model).
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import random
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ..actions import describe_action_space
from ..config import ConwayConfig
from ..context import build_parts
from ..errors import UserError
from ..home import Home
from ..protocols import Decision, DecisionContext, Observation, Policy
from .clicks import (CLICK_TYPES, RAW_OUTPUT_MAX, ask, decision_fields, first_click, parallel_notes,  # noqa: F401
                     policy_is_serial, run_parallel, serial_lock)
from .readiness import effective_backend
from .report import INLINE_CASES_MAX, Report, cases_file_for, check_new_output, write_new_file
from .sheet import Tile, contact_sheet
from .stats import Z95, percentile, wilson  # noqa: F401 - re-exported (older imports)

GENERATOR = "conway-vision-images/1"
"""Version of the image generator; the same generator + seed + size gives the same images (hashes)."""
DEFAULT_SIZE = (1920, 1080)

PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 80, 230),
    "yellow": (240, 200, 0),
    "purple": (140, 50, 190),
    "orange": (250, 130, 10),
}
SHAPES = ("square", "circle", "triangle")
BACKGROUNDS = ((242, 242, 242), (222, 226, 231), (200, 204, 208), (58, 61, 66), (32, 34, 40))
PANELS = ((250, 250, 250), (180, 184, 190), (110, 112, 118), (80, 84, 90))

@dataclass(frozen=True)
class Profile:
    """How hard the generated cases are: target size (share of the short side) and clutter."""

    target_frac: tuple[float, float]
    target_min_px: tuple[int, int]
    distractors: tuple[int, int]
    panels: tuple[int, int]
    backgrounds: tuple[tuple[int, int, int], ...] | None = None
    """Background colours to draw from (None: all of BACKGROUNDS)."""
    shapes: tuple[str, ...] | None = None
    """Target shapes to draw from (None: all of SHAPES)."""
    colours: tuple[str, ...] | None = None
    """Target colours to draw from (None: all of PALETTE)."""
    avoid_centre: bool = False
    """The target never covers the image centre (always clicking the centre then scores 0)."""
    cells: int = 0
    """If > 0: every shape sits inside its own cell of a cells x cells grid and covers that cell's centre
    (shapes never overlap; with cells=3 at 84 px one cell is one Qwen-VL image token); distractor colours are
    drawn from `colours` too, so each shape has its own colour."""


PROFILES: dict[str, Profile] = {
    # the suite as specified: small targets among 3-8 distractors on window-like panels
    "standard": Profile(target_frac=(0.015, 0.10), target_min_px=(12, 16), distractors=(3, 8), panels=(0, 3)),
    # for small learning demos on a CPU: one large red square (34-40% of the short side) on a light background,
    # nothing else (a tiny random model did not learn varied colours, shapes and dark backgrounds in minutes)
    "demo": Profile(target_frac=(0.34, 0.40), target_min_px=(12, 16), distractors=(0, 0), panels=(0, 0),
                    backgrounds=BACKGROUNDS[:3], shapes=("square",), colours=("red",)),
    # one red square of random size (33-43% of the side) and place that never covers the image centre:
    # always clicking the centre hits 0% (the `demo` profile lets it hit 40-48%)
    "offcentre": Profile(target_frac=(0.33, 0.43), target_min_px=(12, 16), distractors=(0, 0), panels=(0, 0),
                         backgrounds=BACKGROUNDS[:3], shapes=("square",), colours=("red",), avoid_centre=True),
    # 2-3 squares of different colours (red, green, blue), each in its own cell of a 3x3 grid; the goal names
    # one: clicking a random shape hits ~42%, the centre ~11% (only when the named one is in the middle cell)
    "choose": Profile(target_frac=(0.20, 0.28), target_min_px=(12, 16), distractors=(1, 2), panels=(0, 0),
                      backgrounds=BACKGROUNDS[:3], shapes=("square",), colours=("red", "green", "blue"), cells=3),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UserError(f"unknown vision-check profile {name!r}; known: {', '.join(PROFILES)}") from None


PROMPT = """\
This is Conway's vision check: a generated test image, not a real screen.
It shows several coloured shapes. Find the one shape the goal names (colour and
shape) and click the centre of it. Answer with exactly one click action."""


# --- generated images ---------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    colour: str
    shape: str
    box: tuple[int, int, int, int]
    """(x0, y0, x1, y1) in image pixels, inclusive on both ends."""

    @property
    def centre(self) -> tuple[float, float]:
        x0, y0, x1, y1 = self.box
        return (x0 + x1) / 2, (y0 + y1) / 2

    def contains(self, x: float, y: float) -> bool:
        x0, y0, x1, y1 = self.box
        return x0 <= x <= x1 and y0 <= y <= y1

    def record(self) -> dict[str, Any]:
        return {"colour": self.colour, "shape": self.shape, "box": list(self.box),
                "centre": [round(c, 2) for c in self.centre]}


@dataclass(frozen=True)
class VisionCase:
    index: int
    size: tuple[int, int]
    instruction: str
    target: Shape
    distractors: tuple[Shape, ...]
    png: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.png).hexdigest()


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int], pad: int) -> bool:
    return not (a[2] + pad < b[0] or b[2] + pad < a[0] or a[3] + pad < b[1] or b[3] + pad < a[1])


def _place(rng: random.Random, size: tuple[int, int], side: int, taken: list[tuple[int, int, int, int]],
           pad: int, tries: int = 60) -> tuple[int, int, int, int] | None:
    w, h = size
    margin = 2
    for _ in range(tries):
        x0 = rng.randint(margin, max(margin, w - margin - side))
        y0 = rng.randint(margin, max(margin, h - margin - side))
        box = (x0, y0, x0 + side - 1, y0 + side - 1)
        if not any(_overlaps(box, t, pad) for t in taken):
            return box
    return None


def generate_case(seed: int, index: int, size: tuple[int, int], profile: str = "standard") -> VisionCase:
    """Case `index` of the suite for `seed` at `size`: independent of the other cases and of threads."""
    w, h = size
    if w < 64 or h < 64:
        raise UserError(f"vision-check images must be at least 64x64 (got {w}x{h})")
    prof = get_profile(profile)
    # the standard profile keeps its original seeding, so its images (and hashes) never change
    rng = random.Random(f"{GENERATOR}:{seed}:{index}:{w}x{h}" if profile == "standard"
                        else f"{GENERATOR}:{profile}:{seed}:{index}:{w}x{h}")
    short = min(w, h)
    lo = max(prof.target_min_px[0], round(short * prof.target_frac[0]))
    hi = max(prof.target_min_px[1], round(short * prof.target_frac[1]))
    background = rng.choice(prof.backgrounds or BACKGROUNDS)
    panels = []
    for _ in range(rng.randint(*prof.panels)):  # window-like grey panels under the shapes
        pw, ph = rng.randint(w // 6, w // 2), rng.randint(h // 6, h // 2)
        px, py = rng.randint(0, w - pw), rng.randint(0, h - ph)
        panels.append(((px, py, px + pw - 1, py + ph - 1), rng.choice(PANELS)))
    if prof.cells:
        return _cell_case(rng, index, size, prof, background, lo, hi)
    colour = rng.choice(sorted(prof.colours or PALETTE))
    shape = rng.choice(prof.shapes or SHAPES)
    if prof.avoid_centre:
        box = None
        while box is None or _covers_centre(box, size):
            box = _place(rng, size, rng.randint(lo, hi), [], 0)
    else:
        box = _place(rng, size, rng.randint(lo, hi), [], 0)
    assert box is not None
    target = Shape(colour, shape, box)
    taken = [box]
    distractors = []
    for _ in range(rng.randint(*prof.distractors)):
        d_colour = rng.choice([c for c in sorted(PALETTE) if c != colour])
        d_box = _place(rng, size, rng.randint(lo, hi), taken, pad=max(4, lo // 2))
        if d_box is None:
            continue
        taken.append(d_box)
        distractors.append(Shape(d_colour, rng.choice(SHAPES), d_box))
    png = _render(size, background, panels, [*distractors, target])
    return VisionCase(index=index, size=size, instruction=f"Click the {colour} {shape}.", target=target,
                      distractors=tuple(distractors), png=png)


def _covers_centre(box: tuple[int, int, int, int], size: tuple[int, int]) -> bool:
    return box[0] <= size[0] / 2 <= box[2] and box[1] <= size[1] / 2 <= box[3]


def _cell_case(rng: random.Random, index: int, size: tuple[int, int], prof: Profile,
               background: tuple[int, int, int], lo: int, hi: int) -> VisionCase:
    """Shapes in distinct grid cells, each covering its cell's centre, each of its own colour; one is named."""
    w, h = size
    n = prof.cells
    cw, ch = w // n, h // n
    count = 1 + rng.randint(*prof.distractors)
    colours = sorted(prof.colours or PALETTE)
    if count > len(colours):
        raise ValueError("a cells profile needs at least as many colours as shapes")
    picked = rng.sample(colours, count)
    cells = rng.sample(range(n * n), count)
    shapes = []
    for colour, cell in zip(picked, cells):
        cx0, cy0 = (cell % n) * cw, (cell // n) * ch
        side = min(rng.randint(lo, hi), cw, ch)
        side = max(side, (max(cw, ch) + 1) // 2 + 1)  # at least half a cell: the shape covers the cell centre
        x0 = cx0 + rng.randint(0, max(0, cw - side))
        y0 = cy0 + rng.randint(0, max(0, ch - side))
        shapes.append(Shape(colour, rng.choice(prof.shapes or SHAPES), (x0, y0, x0 + side - 1, y0 + side - 1)))
    target, distractors = shapes[0], tuple(shapes[1:])
    png = _render(size, background, [], list(shapes))
    return VisionCase(index=index, size=size, instruction=f"Click the {target.colour} {target.shape}.",
                      target=target, distractors=distractors, png=png)


def references(records: list[dict[str, Any]]) -> dict[str, Any]:
    """What trivial policies would score on the same cases: always the centre; a random shape of the image.

    From the records alone (target box, number of distractors, image size), so every report carries them.
    """
    n = len(records)
    centre = 0
    random_shape = 0.0
    for r in records:
        w, h = r["image"]["size"]
        x0, y0, x1, y1 = r["target"]["box"]
        centre += int(x0 <= w / 2 <= x1 and y0 <= h / 2 <= y1)
        random_shape += 1 / (1 + int(r.get("distractors") or 0))
    return {"centre_click_hits": centre, "centre_click_rate": centre / n if n else 0.0,
            "random_shape_expected_hits": round(random_shape, 2),
            "random_shape_rate": round(random_shape / n, 4) if n else 0.0,
            "note": "centre: always click the image centre; random shape: click the centre of a shape drawn "
                    "uniformly from the image's shapes (expected value)"}


def _render(size: tuple[int, int], background: tuple[int, int, int],
            panels: list[tuple[tuple[int, int, int, int], tuple[int, int, int]]], shapes: list[Shape]) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(img)
    for box, fill in panels:
        draw.rectangle(box, fill=fill)
    for s in shapes:
        draw_shape(draw, s)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=1)
    return buf.getvalue()


def draw_shape(draw: Any, s: Shape) -> None:
    x0, y0, x1, y1 = s.box
    fill = PALETTE[s.colour]
    if s.shape == "square":
        draw.rectangle(s.box, fill=fill)
    elif s.shape == "circle":
        draw.ellipse(s.box, fill=fill)
    else:
        draw.polygon([(x0, y1), (x1, y1), ((x0 + x1) / 2, y0)], fill=fill)


# --- one case through the policy ---------------------------------------------------


def decision_context(case: VisionCase, config: ConwayConfig) -> DecisionContext:
    """The context the loop would build around this image (fixed prompt; the goal names the target)."""
    digest = case.sha256
    obs = Observation(png=case.png, captured_size=case.size, source="vision-check", content_hash=digest,
                      change_key=digest[:16], logical_size=case.size, meta={"vision_check_case": case.index})
    types = ["click"]
    parts, dropped = build_parts(constitution=PROMPT, goals=case.instruction, memory="",
                                 action_space=describe_action_space(types), latest=None, recent=[],
                                 budget_tokens=config.context.budget_tokens,
                                 chars_per_token=config.context.chars_per_token)
    return DecisionContext(parts=parts, observation=obs, step=case.index + 1, action_types=types, dropped=dropped)


def score(case: VisionCase, decision: Decision) -> dict[str, Any]:
    """hit / predicted point / distance from a decision's first action (nothing is executed)."""
    point, action, error = first_click(decision)
    out: dict[str, Any] = {"predicted": None, "action": action, "hit": False, "distance_px": None, "error": error}
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
        result = {"predicted": None, "action": None, "hit": False, "distance_px": None, "error": error}
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
    if misses == 0:
        out["verdict"] = "no misses"
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


def summarize(records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    n = len(records)
    hits = sum(1 for r in records if r.get("hit"))
    errors = sum(1 for r in records if r.get("error"))
    answered = [r["latency_s"] for r in records if r.get("raw_output") is not None]
    lo, hi = wilson(hits, n)
    dists = [r["distance_px"] for r in records if r.get("distance_px") is not None]
    return {
        "cases": n, "hits": hits, "misses": n - hits - errors, "errors": errors,
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


def _policy_is_serial(config: ConwayConfig) -> bool:
    return policy_is_serial(config)


def run_suite(policy: Policy, config: ConwayConfig, *, samples: int, seed: int, size: tuple[int, int],
              parallel: int = 1, progress: bool = True,
              on_record: Callable[[dict[str, Any]], None] | None = None,
              profile: str = "standard") -> tuple[list[dict[str, Any]], float]:
    """Run every case (K at a time); returns (records in case order, wall seconds)."""
    lock = serial_lock(config, parallel)
    return run_parallel(lambda i: run_case(policy, config, seed, i, size, lock, profile), range(samples),
                        total=samples, parallel=parallel, progress=progress, desc="vision-check",
                        on_record=on_record)


def vision_check(home: Home, config: ConwayConfig, *, output: str, samples: int, seed: int,
                 size: str | None = None, parallel: int = 1, sheet: str | None = None,
                 argv: list[str] | None = None, progress: bool = True, policy: Policy | None = None,
                 say: Callable[[str], None] = print, profile: str = "standard") -> int:
    """The whole command: validate, run, write the report (and sheet), print a summary. Returns the exit code."""
    if samples < 1:
        raise UserError(f"--samples must be at least 1 (got {samples})")
    if parallel < 1:
        raise UserError(f"--parallel must be at least 1 (got {parallel})")
    out = check_new_output(output, home)
    sheet_path = check_new_output(sheet, home, "contact sheet") if sheet else None
    if sheet_path is not None and sheet_path == out:
        raise UserError("--sheet and --output must be different files")
    if samples > INLINE_CASES_MAX and cases_file_for(out).exists():
        raise UserError(f"{cases_file_for(out)} (where the cases of a long suite go) already exists; "
                        "choose a new report name")
    get_profile(profile)
    image_size, size_source = resolve_size(size)
    own_policy = policy is None
    if policy is None:  # builds the client: an unreachable or missing model is a UserError (exit 1) here
        from ..policies.factory import build_policy
        policy = build_policy(config, home)
    try:
        for note in parallel_notes(config, parallel):
            say(note)
        report = Report("vision-check", out, argv=argv, config=config, seed=seed, expected_cases=samples,
                        parameters={"samples": samples, "size": list(image_size), "size_source": size_source,
                                    "parallel": parallel, "generator": GENERATOR, "profile": profile,
                                    "backend": effective_backend(config),
                                    "instruction_form": "Click the <colour> <shape>.",
                                    "scoring": "hit = click inside the target's box (inclusive); nothing executed"})
        report.set_model(getattr(policy, "model_id", None))
        streaming = report.cases_path is not None
        try:
            records, wall = run_suite(policy, config, samples=samples, seed=seed, size=image_size,
                                      parallel=parallel, progress=progress,
                                      on_record=report.add_case if streaming else None, profile=profile)
        except BaseException:
            report.abandon()
            raise
        summary = summarize(records, wall)
        ids = sorted({r["model_id"] for r in records if r.get("model_id")})
        if ids:
            report.set_model(ids[0] if len(ids) == 1 else ", ".join(ids))
        code = 0 if summary["hits"] == samples else 2
        sheet_written = None
        if sheet_path is not None:
            png = draw_sheet(records, seed, image_size, profile=profile)
            if png is not None:
                write_new_file(sheet_path, png)
                sheet_written = str(sheet_path)
        if not streaming:
            for rec in records:
                report.add_case(rec)
        report.finish(status="pass" if code == 0 else "fail", exit_code=code, summary=summary,
                      sheet=sheet_written)
    finally:
        close = getattr(policy, "close", None)
        if own_policy and callable(close):
            close()
    ci = summary["hit_rate_ci95"]
    say(f"vision-check: {summary['hits']}/{samples} hit ({summary['hit_rate']:.1%}, 95% CI {ci[0]:.1%}–{ci[1]:.1%}), "
        f"{summary['misses']} missed, {summary['errors']} error(s); image {image_size[0]}x{image_size[1]} "
        f"({size_source})")
    lat = summary["latency_s"]
    if lat["p50"] is not None:
        say(f"latency p50 {lat['p50']:.3f} s, p95 {lat['p95']:.3f} s; {summary['cases_per_s']} cases/s")
    if summary["pattern"].get("verdict") and summary["pattern"]["verdict"] != "no misses":
        say(f"pattern: {summary['pattern']['verdict']}")
    say(f"report: {out}" + (f"; sheet: {sheet_written}" if sheet_written else
                            ("; sheet: none (no misses)" if sheet_path else "")))
    return code
