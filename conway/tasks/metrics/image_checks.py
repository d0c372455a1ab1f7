"""OSWorld's one- and two-image checks of GIMP tasks (its metrics/gimp.py), written afresh on Pillow and NumPy:
an edit made (brighter, more saturated, more contrast, mirrored, palette, resized) while the picture stays the
same picture (SSIM or MSE), a size, a file size, a position.

The SSIM is OSWorld's `structure_check_by_ssim`: both images as RGB, equal sizes (else not the same), scikit-
image's default SSIM per channel (`images.structural_similarity`) averaged over the channels, at least the
threshold (0.9 unless the check says otherwise); an image under 7 pixels a side is not the same. Where
OSWorld's function raises (a missing or unreadable file, a triangle that is not there) its runner counts 0,
and so does this: every check here scores 0 where the files cannot be read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image, ImageChops, ImageStat

from conway.tasks.metrics.errors import zero_where_osworld_raises
from conway.tasks.metrics.images import structural_similarity


def _open(path: Any) -> Image.Image:
    with Image.open(os.fspath(path)) as image:
        image.load()
        return image


def same_structure(a: Image.Image, b: Image.Image, threshold: float = 0.9) -> bool:
    """OSWorld's `structure_check_by_ssim`."""
    if min(a.size) < 7 or min(b.size) < 7 or a.size != b.size:
        return False
    x, y = np.asarray(a.convert("RGB")), np.asarray(b.convert("RGB"))
    return float(np.mean([structural_similarity(x[..., c], y[..., c]) for c in range(3)])) >= threshold


def _same_by_mse(a: Image.Image, b: Image.Image, threshold: float) -> bool:
    """OSWorld's `structure_check_by_mse`: `a` resized to `b`'s size, both RGB in [0, 1], the MSE under threshold."""
    if a.size != b.size:
        a = a.resize(b.size, Image.Resampling.LANCZOS)
    x = np.asarray(a.convert("RGB"), dtype=np.float32) / 255
    y = np.asarray(b.convert("RGB"), dtype=np.float32) / 255
    return float(np.mean((x - y) ** 2)) < threshold


def _brightness(image: Image.Image) -> float:
    return ImageStat.Stat(image.convert("L")).mean[0]


def _normalised(image: Image.Image, target: float) -> Image.Image:
    factor = target / _brightness(image)  # a black image divides by zero: OSWorld raises
    return image.point(lambda v: min(255, max(0, int(v * factor))))


@zero_where_osworld_raises
def check_brightness_decrease_and_structure_sim(src_path: Any, tgt_path: Any, threshold: float = 0.03) -> float:
    """Darker than the original, and the same picture once both are brought to the same brightness (MSE)."""
    if src_path is None or tgt_path is None:
        return 0.0
    src, tgt = _open(src_path), _open(tgt_path)
    darker = _brightness(tgt) > _brightness(src)
    return float(darker and _same_by_mse(_normalised(src, 128), _normalised(tgt, 128), threshold))


@zero_where_osworld_raises
def check_saturation_increase_and_structure_sim(src_path: Any, tgt_path: Any) -> float:
    """More saturated than the original, with the same hue and value channels (SSIM of each)."""
    if src_path is None or tgt_path is None:
        return 0.0
    src, tgt = _open(src_path).convert("HSV"), _open(tgt_path).convert("HSV")
    (h1, s1, v1), (h2, s2, v2) = src.split(), tgt.split()
    more = float(np.mean(np.asarray(s2))) < float(np.mean(np.asarray(s1)))
    return float(more and same_structure(h1, h2) and same_structure(v1, v2))


@zero_where_osworld_raises
def check_file_exists_and_structure_sim(src_path: Any, tgt_path: Any) -> float:
    if src_path is None or tgt_path is None or not os.path.isfile(src_path):
        return 0.0
    return float(same_structure(_open(src_path), _open(tgt_path)))


@zero_where_osworld_raises
def check_structure_sim(src_path: Any, tgt_path: Any) -> float:
    if src_path is None or tgt_path is None:
        return 0.0
    src, tgt = _open(src_path), _open(tgt_path)
    return float(src.size == tgt.size and same_structure(src, tgt))


@zero_where_osworld_raises
def check_structure_sim_resized(src_path: Any, tgt_path: Any) -> float:
    """The result, cropped to its opaque part when it has transparency, resized to the original's size, is the
    same picture."""
    if src_path is None or tgt_path is None:
        return 0.0
    src, tgt = _open(src_path), _open(tgt_path)
    if src.mode in ("RGBA", "LA") or "transparency" in src.info:
        src = src.convert("RGBA")
        box = src.split()[-1].getbbox()
        if box is None:
            return 0.0
        src = src.crop(box).convert("RGB")
    return float(same_structure(src.resize(tgt.size), tgt.convert("RGB")))


@zero_where_osworld_raises
def check_contrast_increase_and_structure_sim(src_path: Any, tgt_path: Any) -> float:
    if src_path is None or tgt_path is None:
        return 0.0
    src, tgt = _open(src_path), _open(tgt_path)
    higher = float(np.std(np.asarray(tgt, dtype=np.float32))) < float(np.std(np.asarray(src, dtype=np.float32)))
    return float(higher and same_structure(src, tgt, threshold=0.65))


@zero_where_osworld_raises
def check_structure_sim_with_threshold(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """The result resized to the original's size is the same picture at SSIM `ssim_threshold` (0.85)."""
    if src_path is None or tgt_path is None:
        return 0.0
    src, tgt = _open(src_path), _open(tgt_path)
    if src.size != tgt.size:
        src = src.resize(tgt.size, Image.Resampling.LANCZOS)
    return float(same_structure(src, tgt, threshold=float(options.get("ssim_threshold", 0.85))))


@zero_where_osworld_raises
def check_palette_and_structure_sim(src_path: Any, tgt_path: Any) -> float:
    """An indexed (palette) image that shows the original picture."""
    if not src_path or not tgt_path or not os.path.getsize(src_path) or not os.path.getsize(tgt_path):
        return 0.0
    src, tgt = _open(src_path), _open(tgt_path)
    return float(src.mode == "P" and same_structure(src.convert("RGB"), tgt))


@zero_where_osworld_raises
def check_image_mirror(src_path: Any, tgt_path: Any) -> float:
    """The original flipped left to right is the result (SSIM 0.99)."""
    if src_path is None or tgt_path is None:
        return 0.0
    return float(same_structure(_open(src_path).transpose(Image.Transpose.FLIP_LEFT_RIGHT), _open(tgt_path), 0.99))


@zero_where_osworld_raises
def check_triangle_position(tgt_path: Any) -> float:
    """The image's second rarest colour (the triangle) has its centroid within 5% of the image's centre."""
    if tgt_path is None:
        return 0.0
    pixels = np.asarray(_open(tgt_path))
    colours, counts = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0, return_counts=True)
    triangle = colours[np.argsort(counts)][1]
    centroid = np.argwhere(np.all(pixels == triangle, axis=2)).mean(axis=0)
    shape = np.array(pixels.shape[:2])
    return float(np.all(np.abs(centroid - shape / 2) < 0.05 * shape))


@zero_where_osworld_raises
def check_textbox_on_leftside(src_path: Any) -> float:
    """The leftmost dark pixel (grey under 128) lies in the left 5% of the image."""
    if src_path is None:
        return 0.0
    image = _open(src_path)
    dark = np.asarray(image.convert("L")) < 128
    columns = np.nonzero(dark.any(axis=0))[0]
    left = int(columns[0]) if columns.size else image.size[0]
    return float(left < image.size[0] * 0.05)


@zero_where_osworld_raises
def check_green_background(src_path: Any, tgt_path: Any) -> float:
    """Wherever the mask (the target) is not black, the result is green (G above R and B). OSWorld indexes the
    pixel arrays [x, y]: a non-square image is read transposed (or raises, scored 0), and so it is here."""
    if src_path is None or tgt_path is None:
        return 0.0
    src, tgt = np.asarray(_open(src_path)), _open(tgt_path)
    mask = np.asarray(tgt)
    for x in range(tgt.width):
        for y in range(tgt.height):
            if tuple(mask[x, y][:3]) != (0, 0, 0):
                r, g, b = (int(v) for v in src[x, y][:3])
                if not (g > r and g > b):
                    return 0.0
    return 1.0


@zero_where_osworld_raises
def check_image_size(src_path: Any, rule: dict[str, Any]) -> float:
    """The image's width and height (its opaque part's, with `ignore_transparent`) are the rule's."""
    if src_path is None:
        return 0.0
    image = _open(src_path)
    # OSWorld's test reads `(ignore and RGBA/LA) or 'transparency' in info`: a GIF's transparency counts always
    if (rule.get("ignore_transparent", False) and image.mode in ("RGBA", "LA")) or "transparency" in image.info:
        box = image.convert("RGBA").split()[-1].getbbox()
        width, height = (0, 0) if box is None else (box[2] - box[0], box[3] - box[1])
    else:
        width, height = image.size
    return float(all(rule.get(k) is None or v == rule[k] for k, v in (("height", height), ("width", width))))


@zero_where_osworld_raises
def check_image_file_size(src_path: Any, rule: dict[str, Any]) -> float:
    if src_path is None:
        return 0.0
    return float(os.path.getsize(src_path) < rule["max_size"])


@zero_where_osworld_raises
def compare_image_list(pred: Any, gold: Any) -> float:
    """Each result image equals its expected one pixel for pixel (resized and converted to the expected's size
    and mode first)."""
    if not isinstance(pred, list):
        pred, gold = [pred], [gold]
    for p, g in zip(pred, gold):
        if not p or not g:
            return 0.0
        mine, theirs = _open(p), _open(g)
        if mine.size != theirs.size:
            mine = mine.resize(theirs.size, Image.Resampling.LANCZOS)
        if mine.mode != theirs.mode:
            mine = mine.convert(theirs.mode)
        if ImageChops.difference(mine, theirs).getbbox():
            return 0.0
    return 1.0


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    check_brightness_decrease_and_structure_sim, check_saturation_increase_and_structure_sim,
    check_file_exists_and_structure_sim, check_structure_sim, check_structure_sim_resized,
    check_contrast_increase_and_structure_sim, check_structure_sim_with_threshold, check_palette_and_structure_sim,
    check_image_mirror, check_triangle_position, check_textbox_on_leftside, check_green_background,
    check_image_size, check_image_file_size, compare_image_list)}
