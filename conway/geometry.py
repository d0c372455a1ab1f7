"""Image resizing for models and the model -> image -> screen coordinate maps.

Conventions used everywhere in this module:

* Sizes are ``(width, height)`` tuples (Pillow's order).  The one exception is
  :func:`smart_resize`, which keeps qwen-vl-utils' ``(height, width)`` order
  in its arguments and result so that it can be compared with the reference.
* "captured" is the screenshot as mss returned it (physical pixels);
  "sent" is the image after the model family's resize rule; "input" is the
  coordinate space of pyautogui (logical pixels, with the monitor's origin).
* Pure functions only: no I/O, no display access.  Pillow is imported lazily
  by :func:`resize_for_model`.
"""

from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover
    from PIL import Image

__all__ = [
    "Size",
    "MAX_ASPECT_RATIO",
    "ResizeRule",
    "QWEN2_VL_RULE",
    "QWEN25_VL_RULE",
    "QWEN25_VL_SERVER_RULE",
    "UITARS_1_0_RULE",
    "NO_RESIZE",
    "SHARED_RESIZE_RULES",
    "smart_resize",
    "max_pixels_for_tokens",
    "image_tokens",
    "resize_for_model",
    "Convention",
    "ConventionRule",
    "CONVENTIONS",
    "model_to_captured",
    "captured_to_model",
    "within_image",
    "model_point_error",
    "ScreenGeometry",
    "captured_to_input",
    "input_to_captured",
    "model_to_input",
]

Size = tuple[int, int]  # (width, height)

MAX_ASPECT_RATIO = 200  # qwen-vl-utils MAX_RATIO
_MIN_TOKENS = 4  # qwen-vl-utils default min_pixels = 4 * factor**2
_MAX_TOKENS = 16384  # qwen-vl-utils default max_pixels = 16384 * factor**2


# --------------------------------------------------------------------------
# Smart resize (Qwen-VL family rule)
# --------------------------------------------------------------------------


def _round_to(n: float, factor: int) -> int:
    return round(n / factor) * factor  # Python round: ties go to even, as in the reference


def _floor_to(n: float, factor: int) -> int:
    return math.floor(n / factor) * factor


def _ceil_to(n: float, factor: int) -> int:
    return math.ceil(n / factor) * factor


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
) -> tuple[int, int]:
    """Return ``(height, width)`` resized the way qwen-vl-utils does it.

    Both sides become multiples of ``factor``; the pixel count is brought into
    ``[min_pixels, max_pixels]`` (defaults 4 and 16384 tokens of
    ``factor**2`` pixels: 3136 and 12845056 for factor 28); the aspect ratio
    is kept as closely as the rounding allows.  Raises ``ValueError`` for an
    aspect ratio above 200 or non-positive sizes.
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height} (w x h)")
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got {factor}")
    lo = _MIN_TOKENS * factor**2 if min_pixels is None else min_pixels
    hi = _MAX_TOKENS * factor**2 if max_pixels is None else max_pixels
    if hi < lo:
        raise ValueError(f"max_pixels ({hi}) must be >= min_pixels ({lo})")
    ratio = max(height, width) / min(height, width)
    if ratio > MAX_ASPECT_RATIO:
        raise ValueError(
            f"aspect ratio {ratio:g} of a {width}x{height} image exceeds {MAX_ASPECT_RATIO}"
        )
    h = max(factor, _round_to(height, factor))
    w = max(factor, _round_to(width, factor))
    if h * w > hi:
        beta = math.sqrt(height * width / hi)
        # the reference can return 0 here for tiny budgets; a side of 0 is
        # unusable, so (like transformers) never go below one factor
        h = max(factor, _floor_to(height / beta, factor))
        w = max(factor, _floor_to(width / beta, factor))
    elif h * w < lo:
        beta = math.sqrt(lo / (height * width))
        h = _ceil_to(height * beta, factor)
        w = _ceil_to(width * beta, factor)
    return h, w


def max_pixels_for_tokens(n_tokens: int, factor: int = 28) -> int:
    """Largest ``max_pixels`` that keeps an image within ``n_tokens`` image tokens.

    One image token covers ``factor x factor`` pixels (patch 14 merged 2x2 for
    Qwen2/2.5-VL, patch 16 merged 2x2 for Qwen3-VL).  Use it to stay inside a
    server's image-token limit (llama.cpp's Qwen-VL default is 4096).
    """
    if n_tokens < 1 or factor < 1:
        raise ValueError(f"need n_tokens >= 1 and factor >= 1, got {n_tokens}, {factor}")
    return n_tokens * factor * factor


def image_tokens(sent_size: Size, factor: int = 28) -> int:
    """Image tokens a resized image costs: ``ceil(w/factor) * ceil(h/factor)``."""
    w, h = sent_size
    return math.ceil(w / factor) * math.ceil(h / factor)


@dataclass(frozen=True)
class ResizeRule:
    """A model family's resize rule.

    ``max_pixels=None`` means no upper bound; ``factor=1, min_pixels=1,
    max_pixels=None`` (the ``none`` rule) sends the image as captured.
    ``name`` is what ``policy.resize`` calls it and what journals and exports
    record (``resize_rule``); two rules are equal when they resize alike,
    whatever their names.
    """

    factor: int
    min_pixels: int
    max_pixels: int | None
    name: str = field(kw_only=True, compare=False)
    resample: str = field(default="lanczos", kw_only=True, compare=False)
    """Pillow's filter when Conway resizes (`lanczos`; `bicubic`: Pillow's default, as an agent that calls
    `Image.resize` without one resizes)."""
    server_resizes: bool = field(default=False, kw_only=True, compare=False)
    """The agent sends the screenshot as captured and the server's processor resizes it by this rule (the model
    answers in the resized image's pixels): Conway sends it as captured too when the rule only rounds its sides
    (`sends_captured`), the resized size still the frame of the answers."""

    def sends_captured(self, captured_size: Size) -> bool:
        """The screenshot goes as captured: the server's processor only rounds its sides to this rule's target (a
        target scaled down, by a token cap, is sent resized: a server would not know that cap)."""
        if not self.server_resizes:
            return False
        (w, h), (tw, th) = captured_size, self.target_size(captured_size)
        return abs(tw - w) <= self.factor // 2 and abs(th - h) <= self.factor // 2

    def __post_init__(self) -> None:
        if self.factor < 1 or self.min_pixels < 1:
            raise ValueError(f"invalid resize rule {self}: factor and min_pixels must be >= 1")
        if self.max_pixels is not None and self.max_pixels < self.min_pixels:
            raise ValueError(f"invalid resize rule {self}: max_pixels < min_pixels")

    @property
    def passthrough(self) -> bool:
        """True when the rule never changes the image."""
        return self.factor == 1 and self.min_pixels == 1 and self.max_pixels is None

    def target_size(self, captured_size: Size) -> Size:
        """The ``(width, height)`` an image of ``captured_size`` is sent at."""
        w, h = captured_size
        if w <= 0 or h <= 0:
            raise ValueError(f"image size must be positive, got {w}x{h}")
        if self.passthrough:
            return (w, h)
        hi = self.max_pixels if self.max_pixels is not None else sys.maxsize  # no upper bound
        rh, rw = smart_resize(h, w, self.factor, self.min_pixels, hi)
        return (rw, rh)

    def with_token_cap(self, n_tokens: int) -> ResizeRule:
        """This rule with ``max_pixels`` lowered to fit ``n_tokens`` image tokens."""
        cap = max_pixels_for_tokens(n_tokens, self.factor)
        if self.max_pixels is not None:
            cap = min(cap, self.max_pixels)
        if cap < self.min_pixels:
            raise ValueError(
                f"{n_tokens} image tokens ({cap} px) is below this rule's "
                f"min_pixels {self.min_pixels}"
            )
        return replace(self, max_pixels=cap)


# The shared vocabulary: rules that more than one family uses or that only a
# config names (`policy.resize`).  A rule that is one family's own is declared
# in its folder (`Family.resize`); `conway.policies.families.get_resize_rule`
# looks a name up in both.
QWEN25_VL_RULE = ResizeRule(factor=28, min_pixels=3136, max_pixels=12845056, name="qwen2.5-vl")
"""qwen-vl-utils' defaults for Qwen2.5-VL: 28 px, 4..16384 tokens (the generic and qwen25vl families)."""
QWEN2_VL_RULE = replace(QWEN25_VL_RULE, name="qwen2-vl")
"""Qwen2-VL resizes as Qwen2.5-VL does."""
# UI-TARS 1.0 in OSWorld (mm_agents/uitars_agent.py): the screenshot scaled down to at most 2116800 px (at least
# 3136); its 0-1000 answers do not depend on the exact size, the server's processor rounds to 28 as this does
QWEN25_VL_SERVER_RULE = replace(QWEN25_VL_RULE, name="qwen2.5-vl-server", server_resizes=True)
"""Qwen2.5-VL's rule applied by the server's processor: the screenshot sent as captured (EvoCUA S1's agent)."""
UITARS_1_0_RULE = ResizeRule(factor=28, min_pixels=3136, max_pixels=2116800, name="uitars-1.0", server_resizes=True)
"""UI-TARS 1.0's (the `uitars` preset names it; the uitars family's own rule is UI-TARS-1.5's)."""
NO_RESIZE = ResizeRule(factor=1, min_pixels=1, max_pixels=None, name="none")
"""The image as captured."""
SHARED_RESIZE_RULES: tuple[ResizeRule, ...] = (QWEN2_VL_RULE, QWEN25_VL_RULE, QWEN25_VL_SERVER_RULE, UITARS_1_0_RULE,
                                               NO_RESIZE)
"""The rules no one family owns."""


def resize_for_model(image: Image.Image, rule: ResizeRule) -> tuple[Image.Image, Size]:
    """Resize ``image`` with ``rule``; return the image to send and its size.

    The image is resized to exactly the rule's target (which may be slightly
    larger than the capture when a side rounds up) and returned unchanged,
    same object, when the target equals its size.
    """
    from PIL import Image as _Image

    target = rule.target_size(image.size)
    if target == image.size:
        return image, target
    return image.resize(target, _Image.Resampling[rule.resample.upper()]), target


# --------------------------------------------------------------------------
# Model coordinates <-> captured-image pixels
# --------------------------------------------------------------------------


class Convention(str, Enum):
    """How a model expresses a point; what each one means is its `rule` (`CONVENTIONS`)."""

    ABSOLUTE = "absolute"  # pixels of the resized image that was sent
    RELATIVE = "relative"  # 0..1 of the image
    RELATIVE1000 = "relative1000"  # 0..1000 of the image
    RELATIVE999 = "relative999"  # 0..999 of the image: Qwen3-VL (OSWorld's qwen3vl_agent.py scales by width / 999)
    SCREEN = "screen"  # already pixels of the captured image

    def __str__(self) -> str:
        return self.value

    @property
    def rule(self) -> ConventionRule:
        """What this convention means: its extent, bounds, prompt wording and grammar range."""
        return CONVENTIONS[self]


def _sent(sent_size: Size, captured_size: Size) -> Size:
    return sent_size


def _captured(sent_size: Size, captured_size: Size) -> Size:
    return captured_size


@dataclass(frozen=True)
class ConventionRule:
    """One coordinate convention, declared once: every site that maps, checks, describes or constrains a model's
    point reads it here instead of branching on the convention."""

    name: str
    wording: str
    """How a prompt states it (`{w}`, `{h}`: the image sent; `{right}`, `{bottom}`: its last pixel)."""
    pixels_of: Callable[[Size, Size], Size] | None = None
    """For a pixel convention, the image whose pixels it counts, from (sent size, captured size); None: a grid."""
    where: str = ""
    """That image, as a message names it."""
    grid: float = 1.0
    """A grid convention's extent on each axis (the right and bottom edges are at `grid`)."""
    fractional: bool = False
    """Points are fractions (decimals), not whole numbers."""

    @property
    def pixels(self) -> bool:
        """Points are pixels of an image (`0 <= v < size`), not a grid spanning it (`0 <= v <= grid`)."""
        return self.pixels_of is not None

    def extent(self, sent_size: Size, captured_size: Size) -> tuple[float, float]:
        """The model-space extent that spans the whole captured image, per axis."""
        if self.pixels_of is None:
            return self.grid, self.grid
        w, h = self.pixels_of(sent_size, captured_size)
        return float(w), float(h)

    def integer_range(self, sent_size: Size, captured_size: Size) -> tuple[int, int] | None:
        """The largest whole-number point per axis (a grammar's and a rendered answer's range, from 0); None when
        points are fractions."""
        if self.fractional:
            return None
        if self.pixels_of is None:
            return int(self.grid), int(self.grid)
        w, h = self.pixels_of(sent_size, captured_size)
        return w - 1, h - 1

    def bounds_error(self, x: float, y: float, sent_size: Size, captured_size: Size) -> str | None:
        """None when the finite point (x, y) lies on the image, else a message naming the bounds."""
        if self.pixels_of is not None:
            w, h = self.pixels_of(sent_size, captured_size)
            for name, v, n in (("x", x, w), ("y", y, h)):
                if not 0 <= v < n:
                    return f"{name}={_fmt(v)} outside the {w}x{h} {self.where} (0 <= {name} < {n})"
            return None
        for name, v in (("x", x), ("y", y)):
            if not 0 <= v <= self.grid:
                return f"{name}={_fmt(v)} outside 0..{_fmt(self.grid)} ({self.name} coordinates)"
        return None

    def describe(self, sent_size: Size) -> str:
        """The prompt's wording of this convention for an image of `sent_size`."""
        w, h = sent_size
        return self.wording.format(w=w, h=h, right=w - 1, bottom=h - 1)


CONVENTIONS: dict[Convention, ConventionRule] = {
    Convention.ABSOLUTE: ConventionRule(
        "absolute", "integer pixels of the screenshot exactly as you see it ({w}x{h}): x from 0 at the left edge to "
        "{right}, y from 0 at the top to {bottom}", pixels_of=_sent, where="image sent to the model"),
    Convention.RELATIVE: ConventionRule(
        "relative", "fractions of the screenshot's width and height: (0, 0) is the top-left corner, (1, 1) the "
        "bottom-right", grid=1.0, fractional=True),
    Convention.RELATIVE1000: ConventionRule(
        "relative1000", "integers 0-1000 across the screenshot's width and height: (0, 0) top-left, (1000, 1000) "
        "bottom-right", grid=1000.0),
    Convention.RELATIVE999: ConventionRule(
        "relative999", "integers 0-999 across the screenshot's width and height: (0, 0) top-left, (999, 999) "
        "bottom-right", grid=999.0),
    Convention.SCREEN: ConventionRule(
        "screen", "pixels of the full-resolution screen capture", pixels_of=_captured, where="captured screenshot"),
}
"""Every convention's rule (`Convention.rule`)."""


def model_to_captured(
    x: float,
    y: float,
    convention: Convention | str,
    sent_size: Size,
    captured_size: Size,
) -> tuple[float, float]:
    """Map a model point to captured-image pixels (no clamping, no rounding)."""
    ux, uy = Convention(convention).rule.extent(sent_size, captured_size)
    cw, ch = captured_size
    return x * cw / ux, y * ch / uy  # plain scaling, as the model families train on


def captured_to_model(
    x: float,
    y: float,
    convention: Convention | str,
    sent_size: Size,
    captured_size: Size,
) -> tuple[float, float]:
    """Inverse of :func:`model_to_captured`."""
    ux, uy = Convention(convention).rule.extent(sent_size, captured_size)
    cw, ch = captured_size
    return x * ux / cw, y * uy / ch


def within_image(x: float, y: float, size: Size) -> bool:
    """True when ``(x, y)`` lies on a pixel of an image of ``size`` (0 <= x < w)."""
    w, h = size
    return math.isfinite(x) and math.isfinite(y) and 0 <= x < w and 0 <= y < h


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def model_point_error(
    x: float,
    y: float,
    convention: Convention | str,
    sent_size: Size,
    captured_size: Size,
) -> str | None:
    """``None`` if a model point is usable, else a message naming the bounds.

    Pixel conventions accept ``0 <= v < size``; relative ones ``0 <= v <= 1``
    (or 1000, or 999), because 1.0 is the image's right/bottom edge.
    """
    rule = Convention(convention).rule
    for name, v in (("x", x), ("y", y)):
        if not isinstance(v, numbers.Real) or isinstance(v, bool) or not math.isfinite(v):
            return f"{name}={v!r} is not a finite number"
    return rule.bounds_error(x, y, sent_size, captured_size)


# --------------------------------------------------------------------------
# Captured-image pixels <-> input (pyautogui) coordinates
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ScreenGeometry:
    """One monitor: where it sits in input space and its two sizes.

    ``captured_*`` is the screenshot's size in pixels; ``logical_*`` is the
    monitor's size in input coordinates (equal on X11; half on a 2x Retina).
    """

    origin_x: int
    origin_y: int
    captured_w: int
    captured_h: int
    logical_w: int
    logical_h: int

    def __post_init__(self) -> None:
        if min(self.captured_w, self.captured_h, self.logical_w, self.logical_h) < 1:
            raise ValueError(f"monitor sizes must be positive: {self}")

    @property
    def captured_size(self) -> Size:
        return (self.captured_w, self.captured_h)

    @property
    def logical_size(self) -> Size:
        return (self.logical_w, self.logical_h)


def _clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


def captured_to_input(x: float, y: float, screen: ScreenGeometry) -> tuple[int, int]:
    """Map captured pixels to an input point on ``screen``.

    Scales by logical/captured, adds the monitor origin, rounds, clamps to the
    monitor, and moves a point that lands on a monitor corner 1 px inwards
    (pyautogui's fail-safe fires when the pointer sits in a corner).
    """
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f"non-finite point ({x}, {y})")
    left, top = screen.origin_x, screen.origin_y
    right, bottom = left + screen.logical_w - 1, top + screen.logical_h - 1
    ix = _clamp(left + round(x * screen.logical_w / screen.captured_w), left, right)
    iy = _clamp(top + round(y * screen.logical_h / screen.captured_h), top, bottom)
    if ix in (left, right) and iy in (top, bottom):
        # inwards on both axes; min/max keep a 1-2 px wide monitor in bounds
        ix = min(left + 1, right) if ix == left else max(right - 1, left)
        iy = min(top + 1, bottom) if iy == top else max(bottom - 1, top)
    return ix, iy


def input_to_captured(x: float, y: float, screen: ScreenGeometry) -> tuple[float, float]:
    """Inverse of :func:`captured_to_input` (before rounding/clamping)."""
    return (
        (x - screen.origin_x) * screen.captured_w / screen.logical_w,
        (y - screen.origin_y) * screen.captured_h / screen.logical_h,
    )


def model_to_input(
    x: float,
    y: float,
    convention: Convention | str,
    sent_size: Size,
    screen: ScreenGeometry,
) -> tuple[int, int]:
    """Model point -> input point in one step (validate with :func:`model_point_error` first)."""
    cx, cy = model_to_captured(x, y, convention, sent_size, screen.captured_size)
    return captured_to_input(cx, cy, screen)


class InBox:
    """A target with `box` = (x0, y0, x1, y1) in image pixels, inclusive: its centre, and whether a click hits it
    (vision-check shapes and grounding targets score clicks the same way)."""

    box: tuple[int, int, int, int]

    @property
    def centre(self) -> tuple[float, float]:
        x0, y0, x1, y1 = self.box
        return (x0 + x1) / 2, (y0 + y1) / 2

    def contains(self, x: float, y: float) -> bool:
        x0, y0, x1, y1 = self.box
        return x0 <= x <= x1 and y0 <= y <= y1
