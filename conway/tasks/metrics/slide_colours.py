"""OSWorld's two Impress colour checks (one task each), written afresh on the standard library and python-pptx.

Both mirror OSWorld's functions of the same name in slides.py; a missing or
unreadable deck scores 0 (OSWorld's raises and its runner counts 0).

- `check_page_number_colors(result, rules)`: the colour of the slide-number
  text in `ppt/slideMasters/slideMaster1.xml`, found as OSWorld looks for it:
  the first solid RGB fill inside the `sldNum` placeholder; else inside the
  first `sldNum`, `ftr` or `dt` placeholder that has one; else the last
  non-black RGB fill of a text run; else the last non-black RGB fill anywhere,
  or the last one when all are black. It must be `rules.color`: `red`, `green`
  or `blue` (that channel above both others by more than 50) or `black` (all
  three under 50); any other colour name accepts whatever was found.
- `evaluate_presentation_fill_to_rgb_distance(result, rules)`: 1 minus the
  mean over slides of each background's distance to `rules.rgb` (Euclidean,
  over the RGB cube's diagonal); a solid background is read from the slide,
  one not set on the slide from its master's solid fill; a background in a
  colour without RGB, of another kind, or equal to `rules.original_rgb`
  counts as distance 1. A deck without slides scores 0.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from typing import Any

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import library

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_FILL_RGB = f".//{_A}solidFill//{_A}srgbClr"


def _last_not_black(elements: list[ET.Element]) -> str | None:
    return next((v for e in reversed(elements) if (v := e.get("val")) and v != "000000"), None)


def _slide_number_colour(master: ET.Element) -> str | None:
    """The hex colour OSWorld's cascade settles on (see the module's docstring), or None."""
    number = master.find(f".//{_P}ph[@type='sldNum']")
    found = number.find(_FILL_RGB) if number is not None else None
    if found is not None:
        return found.get("val")
    for placeholder in master.iter(f"{_P}ph"):
        if placeholder.get("type") in ("sldNum", "ftr", "dt") and (found := placeholder.find(_FILL_RGB)) is not None:
            return found.get("val")
    colour = _last_not_black(master.findall(f".//{_A}rPr//{_A}solidFill//{_A}srgbClr"))
    if colour is not None:
        return colour
    every = master.findall(_FILL_RGB)
    return _last_not_black(every) or (every[-1].get("val") if every else None)


def _rgb(hex_colour: str) -> tuple[int, int, int] | None:
    digits = hex_colour.lstrip("#")
    if len(digits) != 6:
        return None
    try:
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    except ValueError:
        return None


def _is(name: str, rgb: tuple[int, int, int]) -> bool:
    r, g, b = rgb
    tests = {"red": r > g + 50 and r > b + 50, "green": g > r + 50 and g > b + 50,
             "blue": b > g + 50 and b > r + 50, "black": r < 50 and g < 50 and b < 50}
    return tests.get(name, True)  # another name: OSWorld checks nothing


def check_page_number_colors(result: Any, rules: dict[str, Any]) -> float:
    wanted = rules["color"]
    try:
        with zipfile.ZipFile(os.fspath(result)) as deck, deck.open("ppt/slideMasters/slideMaster1.xml") as part:
            master = ET.parse(part).getroot()
    except Exception:  # missing, not a zip, no master: OSWorld's raises, its runner counts 0
        return 0.0
    colour = _slide_number_colour(master)
    rgb = _rgb(colour) if colour is not None else None
    return 1.0 if rgb is not None and _is(wanted, rgb) else 0.0


def _solid_rgb(fill: Any) -> Any:
    """The RGB of a solid fill's colour, None where it has none (a theme colour): OSWorld's `hasattr` test."""
    try:
        return fill.fore_color.rgb
    except Exception:
        return None


def _distance(slide: Any, rgb: list[int], original: list[int] | None) -> float:
    fill = slide.background.fill  # as OSWorld reads it: python-pptx gives an unset background type BACKGROUND
    if fill.type == 5:  # MSO_FILL.BACKGROUND: the master's, when that is solid
        fill = slide.slide_layout.slide_master.background.fill
        if fill.type != 1:
            return 1.0
    elif fill.type != 1:  # not MSO_FILL.SOLID
        return 1.0
    colour = _solid_rgb(fill)
    if colour is None:
        return 1.0
    if original is not None and tuple(colour) == tuple(original):
        return 1.0
    (r1, g1, b1), (r2, g2, b2) = colour, rgb  # OSWorld's own arithmetic, so the floats agree to the bit
    return math.sqrt((r1 - r2) ** 2 + (g1 - g2) ** 2 + (b1 - b2) ** 2) / math.sqrt(255**2 + 255**2 + 255**2)


def evaluate_presentation_fill_to_rgb_distance(result: Any, rules: dict[str, Any]) -> float:
    pptx = library("pptx")
    try:
        slides = list(pptx.Presentation(os.fspath(result)).slides)
        return 1 - sum(_distance(s, rules["rgb"], rules.get("original_rgb")) for s in slides) / len(slides)
    except MetricError:
        raise
    except Exception:  # missing, not a deck, no slides: OSWorld's raises, its runner counts 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    check_page_number_colors, evaluate_presentation_fill_to_rgb_distance)}
