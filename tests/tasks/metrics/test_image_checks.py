"""The GIMP image checks on generated images, each case scored as OSWorld's function scores it (its runner
counting a raise as 0): the same picture, a changed one, an edit of the kind asked, missing, empty, malformed."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageEnhance

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.image_checks import same_structure

RNG = np.random.default_rng(7)


def picture(path, size=(64, 48), seed=1, mode="RGB"):
    rng = np.random.default_rng(seed)
    base = np.zeros((size[1], size[0], 3), np.uint8)
    base[:, :, 0] = np.linspace(20, 230, size[0], dtype=np.uint8)[None, :]
    base[:, :, 1] = np.linspace(40, 200, size[1], dtype=np.uint8)[:, None]
    base[10:30, 10:40, 2] = 200
    base = np.clip(base + rng.integers(0, 8, base.shape), 0, 255).astype(np.uint8)
    Image.fromarray(base).convert(mode).save(path)
    return str(path)


@pytest.fixture
def files(tmp_path):
    src = picture(tmp_path / "src.png")
    other = picture(tmp_path / "other.png", seed=99)
    Image.fromarray(np.asarray(Image.open(other))[::-1].copy()).save(tmp_path / "other.png")  # a different picture
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "bad.png").write_bytes(b"not a png")
    return tmp_path, src, str(tmp_path / "other.png")


def edited(tmp_path, src, name, how):
    out = tmp_path / name
    how(Image.open(src)).save(out)
    return str(out)


BROKEN = ("missing.png", "empty.png", "bad.png")


def test_the_same_picture_and_a_different_one(files):
    tmp, src, other = files
    for name in ("check_structure_sim", "check_file_exists_and_structure_sim", "check_structure_sim_with_threshold",
                 "compare_image_list"):
        assert METRICS[name](src, src) == 1.0, name
        assert METRICS[name](src, other) == 0.0, name
        for broken in BROKEN:
            assert METRICS[name](str(tmp / broken), src) == 0.0, (name, broken)
        assert METRICS[name](None, src) == 0.0
    # a different size is not the same picture (OSWorld: size check first), unless the check resizes
    small = edited(tmp, src, "small.png", lambda im: im.resize((32, 24)))
    assert METRICS["check_structure_sim"](small, src) == 0.0
    assert METRICS["check_structure_sim_resized"](small, src) == 1.0


def test_edits_of_the_kind_asked(files):
    tmp, src, other = files
    darker = edited(tmp, src, "dark.png", lambda im: ImageEnhance.Brightness(im).enhance(0.6))
    brighter = edited(tmp, src, "bright.png", lambda im: ImageEnhance.Brightness(im).enhance(1.3))
    assert METRICS["check_brightness_decrease_and_structure_sim"](darker, src) == 1.0
    assert METRICS["check_brightness_decrease_and_structure_sim"](brighter, src) == 0.0
    saturated = edited(tmp, src, "sat.png", lambda im: ImageEnhance.Color(im).enhance(1.6))
    assert METRICS["check_saturation_increase_and_structure_sim"](saturated, src) == 1.0
    assert METRICS["check_saturation_increase_and_structure_sim"](src, src) == 0.0  # not more saturated
    contrast = edited(tmp, src, "con.png", lambda im: ImageEnhance.Contrast(im).enhance(1.4))
    assert METRICS["check_contrast_increase_and_structure_sim"](contrast, src) == 1.0
    assert METRICS["check_contrast_increase_and_structure_sim"](src, src) == 0.0
    mirrored = edited(tmp, src, "mirror.png", lambda im: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT))
    assert METRICS["check_image_mirror"](src, mirrored) == 1.0
    assert METRICS["check_image_mirror"](src, src) == 0.0
    palette = edited(tmp, src, "pal.png", lambda im: im.convert("P", palette=Image.Palette.ADAPTIVE, colors=256))
    assert METRICS["check_palette_and_structure_sim"](palette, src) == 1.0
    assert METRICS["check_palette_and_structure_sim"](src, src) == 0.0  # RGB, not indexed
    for name in ("check_brightness_decrease_and_structure_sim", "check_image_mirror",
                 "check_palette_and_structure_sim"):
        for broken in BROKEN:
            assert METRICS[name](str(tmp / broken), src) == 0.0


def test_sizes_positions_and_backgrounds(tmp_path):
    rgba = np.zeros((40, 60, 4), np.uint8)
    rgba[5:25, 10:40] = (255, 0, 0, 255)
    Image.fromarray(rgba).save(tmp_path / "t.png")
    size = METRICS["check_image_size"]
    assert size(str(tmp_path / "t.png"), {"width": 60, "height": 40}) == 1.0
    assert size(str(tmp_path / "t.png"), {"width": 30, "height": 20, "ignore_transparent": True}) == 1.0
    assert size(str(tmp_path / "t.png"), {"width": 61}) == 0.0 and size(None, {"width": 1}) == 0.0
    assert METRICS["check_image_file_size"](str(tmp_path / "t.png"), {"max_size": 10_000}) == 1.0
    assert METRICS["check_image_file_size"](str(tmp_path / "t.png"), {"max_size": 10}) == 0.0
    assert METRICS["check_image_file_size"](str(tmp_path / "none.png"), {"max_size": 10}) == 0.0  # OSWorld raises
    # a triangle (the second rarest colour) in the middle, then off to a corner
    img = np.full((100, 100, 3), 255, np.uint8)
    img[45:55, 45:55] = (255, 255, 0)
    img[0:2, 0:2] = (0, 0, 0)
    Image.fromarray(img).save(tmp_path / "mid.png")
    assert METRICS["check_triangle_position"](str(tmp_path / "mid.png")) == 1.0
    img[45:55, 45:55] = 255
    img[5:15, 5:15] = (255, 255, 0)
    Image.fromarray(img).save(tmp_path / "corner.png")
    assert METRICS["check_triangle_position"](str(tmp_path / "corner.png")) == 0.0
    text = np.full((50, 100), 255, np.uint8)
    text[20:30, 2:30] = 0
    Image.fromarray(text).save(tmp_path / "left.png")
    assert METRICS["check_textbox_on_leftside"](str(tmp_path / "left.png")) == 1.0
    text[:, :] = 255
    text[20:30, 50:70] = 0
    Image.fromarray(text).save(tmp_path / "right.png")
    assert METRICS["check_textbox_on_leftside"](str(tmp_path / "right.png")) == 0.0
    # green where the mask is not black; a non-square image is read [x, y] as OSWorld does (here: raises, 0)
    mask = np.zeros((20, 20, 3), np.uint8)
    mask[5:15, 5:15] = 255
    Image.fromarray(mask).save(tmp_path / "mask.png")
    green = np.zeros((20, 20, 3), np.uint8)
    green[..., 1] = 200
    Image.fromarray(green).save(tmp_path / "green.png")
    Image.fromarray(np.full((20, 20, 3), 200, np.uint8)).save(tmp_path / "grey.png")
    assert METRICS["check_green_background"](str(tmp_path / "green.png"), str(tmp_path / "mask.png")) == 1.0
    assert METRICS["check_green_background"](str(tmp_path / "grey.png"), str(tmp_path / "mask.png")) == 0.0
    Image.fromarray(np.full((10, 30, 3), 255, np.uint8)).save(tmp_path / "wide.png")
    assert METRICS["check_green_background"](str(tmp_path / "green.png"), str(tmp_path / "wide.png")) == 0.0


def test_ssim_is_the_mean_over_channels_and_needs_seven_pixels(tmp_path):
    a = Image.open(picture(tmp_path / "a.png"))
    assert same_structure(a, a) and not same_structure(a.resize((6, 6)), a.resize((6, 6)))
