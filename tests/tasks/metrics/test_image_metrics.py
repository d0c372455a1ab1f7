"""compare_images on pictures drawn here, against the scores OSWorld's function (scikit-image's SSIM) gives them.

The expected numbers were computed once with OSWorld's `compare_images` semantics on scikit-image 0.26 (grey,
Lanczos resize to the smaller size as tuples order, `structural_similarity` with its defaults).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.errors import UnsupportedOption
from conway.tasks.metrics.images import compare_images, structural_similarity


def picture(path: Path, size: tuple[int, int], box: tuple[int, int, int, int]) -> Path:
    image = Image.new("RGB", size, (30, 60, 90))
    ImageDraw.Draw(image).rectangle(box, fill=(200, 200, 40))
    image.save(path)
    return path


@pytest.fixture
def images(tmp_path):
    return {"a": picture(tmp_path / "a.png", (64, 48), (10, 10, 40, 30)),
            "a_again": picture(tmp_path / "a2.png", (64, 48), (10, 10, 40, 30)),
            "shifted": picture(tmp_path / "b.png", (64, 48), (12, 10, 42, 30)),
            "double": picture(tmp_path / "c.png", (128, 96), (20, 20, 80, 60)),
            "tall": picture(tmp_path / "d.png", (50, 80), (5, 5, 30, 60)),
            "tiny": picture(tmp_path / "e.png", (6, 40), (1, 1, 3, 3))}


def test_compare_images_is_registered():
    assert METRICS["compare_images"] is compare_images


def test_equal_images_score_one(images):
    assert compare_images(images["a"], images["a_again"]) == pytest.approx(1.0)


def test_one_shape_moved_scores_osworlds_ssim(images):
    assert compare_images(images["a"], images["shifted"]) == pytest.approx(0.8873323891015085, abs=1e-9)


def test_different_sizes_are_compared_at_the_smaller(images):
    assert compare_images(images["a"], images["double"]) == pytest.approx(0.957775082907222, abs=1e-9)
    # (50, 80) < (64, 48) as tuples: OSWorld's `min` picks it although it is the taller image
    assert compare_images(images["a"], images["tall"]) == pytest.approx(0.6247789580160721, abs=1e-9)


def test_reference_base_result_scores_the_gain_or_zero(images):
    assert compare_images(images["a"], images["shifted"], reference_base_result=0.5) == pytest.approx(
        0.7746647782030169, abs=1e-9)
    assert compare_images(images["a"], images["shifted"], reference_base_result=0.99) == 0.0


def test_missing_empty_malformed_and_tiny_score_zero(images, tmp_path):
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not an image")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    assert compare_images(None, images["a"]) == 0.0
    assert compare_images("", images["a"]) == 0.0
    assert compare_images(tmp_path / "absent.png", images["a"]) == 0.0
    assert compare_images(junk, images["a"]) == 0.0
    assert compare_images(empty, images["a"]) == 0.0
    assert compare_images(images["tiny"], images["a"]) == 0.0  # under the 7-pixel window: scikit-image raises


def test_an_unknown_option_is_refused(images):
    with pytest.raises(UnsupportedOption):
        compare_images(images["a"], images["a"], threshold=0.9)


def test_ssim_of_noise_matches_scikit_images_value():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (20, 31), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-30, 30, (20, 31)), 0, 255).astype(np.uint8)
    assert structural_similarity(a, b) == pytest.approx(0.9719501330721112, abs=1e-12)
