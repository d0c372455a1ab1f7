"""OSWorld's `evaluate_colored_words_in_tables` (1 task), written afresh on python-docx and the math module.

As OSWorld's function of that name (docs.py): the two Word documents' texts
must match (`compare_docx_files`, its defaults); then every run with text in
the result's tables must be coloured red (a word starting with a vowel) or
blue (any other), within `threshold` (default 3.5) of CIEDE2000 colour
difference. The colour difference is scikit-image's, as OSWorld computes it:
`rgb2lab` (sRGB, D65, 2° observer) then `deltaE_ciede2000` with unit weights,
both written out here. A run with no colour of its own, where OSWorld's reads
None and crashes, scores 0, as a None, missing or unreadable file does.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

from conway.tasks.metrics.documents import compare_docx_files
from conway.tasks.metrics.errors import MetricError, UnsupportedOption
from conway.tasks.metrics.inputs import library, refuse, unknown_options

OPTIONS = {"evaluate_colored_words_in_tables": ("threshold",)}
"""The options each metric here takes; any other is refused, at run time and by `tasks list`."""

_XYZ_FROM_RGB = ((0.412453, 0.357580, 0.180423), (0.212671, 0.715160, 0.072169), (0.019334, 0.119193, 0.950227))
_D65 = (0.95047, 1.0, 1.08883)


def rgb_to_lab(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    """CIELAB of an 8-bit sRGB colour, as scikit-image's `rgb2lab` computes it."""
    linear = [((c / 255.0 + 0.055) / 1.055) ** 2.4 if c / 255.0 > 0.04045 else c / 255.0 / 12.92 for c in rgb]
    xyz = [sum(m * c for m, c in zip(row, linear)) / white for row, white in zip(_XYZ_FROM_RGB, _D65)]
    f = [v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16.0 / 116.0 for v in xyz]
    return 116.0 * f[1] - 16.0, 500.0 * (f[0] - f[1]), 200.0 * (f[1] - f[2])


def _polar(x: float, y: float) -> tuple[float, float]:
    angle = math.atan2(y, x)
    return math.hypot(x, y), angle + 2 * math.pi if angle < 0 else angle


def _mean_hue(h1: float, h2: float, both_chromatic: bool) -> float:
    if not both_chromatic:
        return h1 + h2  # scikit-image doubles the sum there, then halves it
    total = h1 + h2
    if abs(h2 - h1) > math.pi:
        total += 2 * math.pi if total < 2 * math.pi else -2 * math.pi
    return total / 2


def ciede2000(lab1: tuple[float, float, float], lab2: tuple[float, float, float]) -> float:
    """The CIEDE2000 difference with unit weights, step for step as scikit-image's `deltaE_ciede2000`."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c7 = ((math.hypot(a1, b1) + math.hypot(a2, b2)) * 0.5) ** 7
    scale = 1 + 0.5 * (1 - math.sqrt(c7 / (c7 + 25.0**7)))
    (c1, h1), (c2, h2) = _polar(a1 * scale, b1), _polar(a2 * scale, b2)
    lbar = 0.5 * (l1 + l2)
    l_term = (l2 - l1) / (1 + 0.015 * (lbar - 50) ** 2 / math.sqrt(20 + (lbar - 50) ** 2))
    cbar = 0.5 * (c1 + c2)
    c_term = (c2 - c1) / (1 + 0.045 * cbar)
    dh = h2 - h1
    dh = dh - 2 * math.pi if dh > math.pi else dh + 2 * math.pi if dh < -math.pi else dh
    if c1 * c2 == 0:
        dh = 0.0
    hbar = _mean_hue(h1, h2, c1 * c2 != 0)
    t = (1 - 0.17 * math.cos(hbar - math.radians(30)) + 0.24 * math.cos(2 * hbar)
         + 0.32 * math.cos(3 * hbar + math.radians(6)) - 0.20 * math.cos(4 * hbar - math.radians(63)))
    h_term = 2 * math.sqrt(c1 * c2) * math.sin(dh / 2) / (1 + 0.015 * cbar * t)
    rc = 2 * math.sqrt(cbar**7 / (cbar**7 + 25.0**7))
    dtheta = math.radians(30) * math.exp(-(((math.degrees(hbar) - 275) / 25) ** 2))
    r_term = -math.sin(2 * dtheta) * rc * c_term * h_term
    return math.sqrt(max(l_term**2 + c_term**2 + h_term**2 + r_term, 0.0))


_RED, _BLUE = rgb_to_lab((255, 0, 0)), rgb_to_lab((0, 0, 255))


def _runs_coloured(doc: Any, threshold: float) -> bool:
    """Every table run with text in red (vowel first) or blue (else); raises on a run without a colour."""
    for table in doc.tables:
        for row in table.rows:
            for cell in row.cells:
                for run in (r for p in cell.paragraphs for r in p.runs if r.text):
                    target = _RED if run.text[0].lower() in "aeiou" else _BLUE
                    if ciede2000(rgb_to_lab(tuple(run.font.color.rgb)), target) > threshold:
                        return False
    return True


def evaluate_colored_words_in_tables(result: Any, expected: Any, **options: Any) -> float:
    refuse("evaluate_colored_words_in_tables", unknown_options(options, OPTIONS["evaluate_colored_words_in_tables"]))
    if not result or not expected:
        return 0.0
    try:
        if not compare_docx_files(result, expected):
            return 0.0
        doc = library("docx").Document(os.fspath(result))
        return 1.0 if _runs_coloured(doc, options.get("threshold", 3.5)) else 0.0
    except UnsupportedOption:
        raise
    except MetricError as exc:
        if "is not installed" in str(exc):  # python-docx missing: an error, never a 0
            raise
        return 0.0
    except Exception:  # a run with no colour (OSWorld's reads None and crashes), an unreadable file: 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {"evaluate_colored_words_in_tables": evaluate_colored_words_in_tables}
