"""The vision-check case generator: seeded images of coloured shapes and the instruction naming one.

Shared by vision-check, export (`--from-report` rebuilds the images), replay, the
viewer and training: the same generator version, seed, index, size and profile
always give the same image (hash). It lives beside the other generated frames
(`synthetic`) because `conway.experience` rebuilds these images too, and
experience never imports `conway.evals`.
"""

from __future__ import annotations

import hashlib
import io
import random
from dataclasses import dataclass
from typing import Any

from conway.errors import UserError
from conway.geometry import InBox

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
    # `offcentre` with targets of a fixed 28-36 px whatever the image size (what `offcentre` draws at 84 px): as on
    # real screens, where a larger screen shows more, not larger, buttons; at 224 px a target is 13-16% of the side
    "offcentre-fixed": Profile(target_frac=(0.0, 0.0), target_min_px=(28, 36), distractors=(0, 0), panels=(0, 0),
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




# --- generated images ---------------------------------------------------------


@dataclass(frozen=True)
class Shape(InBox):
    colour: str
    shape: str
    box: tuple[int, int, int, int]
    """(x0, y0, x1, y1) in image pixels, inclusive on both ends."""

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
    records = [r for r in records if r.get("image") and r.get("target")]  # a case no worker finished has neither
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
