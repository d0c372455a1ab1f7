"""OSWorld's image metric `compare_images` (7 tasks), written afresh on Pillow and NumPy (core dependencies).

`compare_images(result, expected, reference_base_result=None)` mirrors OSWorld's
function of that name in vlc.py: both images are read as 8-bit grey, resized
(Lanczos) to the smaller of the two sizes as Python orders (width, height)
tuples, and scored by their structural similarity (SSIM). With
`reference_base_result` b, a similarity s of at least b + 0.01 scores
(s - b) / (1 - b), anything less 0. A None result scores 0.

The SSIM is scikit-image's `structural_similarity` with its defaults, which
OSWorld calls: a 7x7 uniform window, K1 0.01, K2 0.03, the sample covariance,
the data range 255 of 8-bit images, and the mean over the pixels whose window
lies inside the image. Where OSWorld's function raises, its runner counts 0 and
so does this: a missing or unreadable file, an image under 7 pixels on a side.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image

from conway.tasks.metrics.inputs import refuse, unknown_options

OPTIONS = {"compare_images": ("reference_base_result",)}
"""The options each metric here takes; any other is refused, at run time and by `tasks list`."""

_WINDOW = 7
_DATA_RANGE = 255.0  # the range scikit-image takes from an 8-bit image's dtype
_K1, _K2 = 0.01, 0.03


def _window_means(values: np.ndarray) -> np.ndarray:
    """The mean over every 7x7 window lying wholly inside `values` (a summed-area table)."""
    table = np.zeros((values.shape[0] + 1, values.shape[1] + 1))
    table[1:, 1:] = values.cumsum(axis=0).cumsum(axis=1)
    w = _WINDOW
    sums = table[w:, w:] - table[:-w, w:] - table[w:, :-w] + table[:-w, :-w]
    return sums / (w * w)


def structural_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """scikit-image's default SSIM of two equal-sized 8-bit grey images; ValueError when under 7 pixels a side.
    Only windows wholly inside the image are averaged, which is exactly the region scikit-image keeps after
    cropping its filtered maps, so its border padding never matters."""
    if a.shape != b.shape:
        raise ValueError("the images differ in size")
    if min(a.shape) < _WINDOW:
        raise ValueError("an image is smaller than the 7-pixel window")
    x, y = a.astype(np.float64), b.astype(np.float64)
    ux, uy = _window_means(x), _window_means(y)
    covariance_norm = _WINDOW**2 / (_WINDOW**2 - 1)  # the sample covariance
    vx = covariance_norm * (_window_means(x * x) - ux * ux)
    vy = covariance_norm * (_window_means(y * y) - uy * uy)
    vxy = covariance_norm * (_window_means(x * y) - ux * uy)
    c1, c2 = (_K1 * _DATA_RANGE) ** 2, (_K2 * _DATA_RANGE) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux**2 + uy**2 + c1) * (vx + vy + c2))
    return float(s.mean())


def _grey(path: Any) -> Image.Image:
    with Image.open(os.fspath(path)) as image:
        return image.convert("L")


def compare_images(result: Any, expected: Any, **options: Any) -> float:
    """The SSIM of the two images at the smaller size, or its gain over `reference_base_result` when given."""
    refuse("compare_images", unknown_options(options, OPTIONS["compare_images"]))
    if not result or not expected:
        return 0.0
    base = options.get("reference_base_result")
    try:
        first, second = _grey(result), _grey(expected)
        size = min(first.size, second.size)  # tuples compare width first, as OSWorld's `min` does
        first, second = (image.resize(size, Image.Resampling.LANCZOS) for image in (first, second))
        # numpy arrays are (height, width): the same as Pillow's size reversed
        similarity = structural_similarity(np.asarray(first), np.asarray(second))
        if base is None:
            return similarity
        return (similarity - base) / (1 - base) if similarity >= base + 0.01 else 0.0
    except Exception:  # an unreadable or too small image, a base that is not a number: OSWorld raises, scored 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {"compare_images": compare_images}
