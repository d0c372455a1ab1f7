"""check_page_number_colors and evaluate_presentation_fill_to_rgb_distance on decks written here, as OSWorld's."""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import pytest
from helpers.extras import need_extra

pptx = need_extra("tasks", "pptx")

from pptx.dml.color import RGBColor  # noqa: E402
from pptx.enum.dml import MSO_THEME_COLOR  # noqa: E402

from conway.tasks.metrics import METRICS  # noqa: E402
from conway.tasks.metrics.slide_colours import (  # noqa: E402
    check_page_number_colors,
    evaluate_presentation_fill_to_rgb_distance,
)


@pytest.fixture
def bad(tmp_path):
    junk = tmp_path / "junk.pptx"
    junk.write_bytes(b"not a zip")
    empty = tmp_path / "empty.pptx"
    empty.write_bytes(b"")
    return [str(tmp_path / "absent.pptx"), str(junk), str(empty)]


def test_registered():
    for fn in (check_page_number_colors, evaluate_presentation_fill_to_rgb_distance):
        assert METRICS[fn.__name__] is fn


def with_master_colours(path: Path, *colours: str) -> str:
    """A deck whose master's text runs get these RGB fills, in order (python-pptx's default master has none)."""
    plain = path.with_suffix(".plain.pptx")
    pptx.Presentation().save(plain)
    runs = "".join(f'<a:rPr xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:solidFill>'
                   f'<a:srgbClr val="{c}"/></a:solidFill></a:rPr>' for c in colours)
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "ppt/slideMasters/slideMaster1.xml":
                data = data.replace(b"</p:sldMaster>", f"<p:extra>{runs}</p:extra></p:sldMaster>".encode())
            target.writestr(info, data)
    return str(path)


def test_check_page_number_colors(tmp_path, bad):
    red = with_master_colours(tmp_path / "red.pptx", "00FF00", "FF0000", "000000")  # the last non-black one
    assert check_page_number_colors(red, {"color": "red"}) == 1.0
    assert check_page_number_colors(red, {"color": "blue"}) == 0.0
    assert check_page_number_colors(red, {"color": "purple"}) == 1.0  # a name OSWorld does not test
    black = with_master_colours(tmp_path / "black.pptx", "000000")
    assert check_page_number_colors(black, {"color": "black"}) == 1.0
    assert check_page_number_colors(black, {"color": "red"}) == 0.0
    none = with_master_colours(tmp_path / "none.pptx")
    assert check_page_number_colors(none, {"color": "purple"}) == 0.0  # no colour found at all
    for path in bad:
        assert check_page_number_colors(path, {"color": "red"}) == 0.0


def deck(path: Path, fills: list[tuple[int, int, int] | str | None]) -> str:
    presentation = pptx.Presentation()
    for fill in fills:
        slide = presentation.slides.add_slide(presentation.slide_layouts[6])
        if fill == "theme":
            slide.background.fill.solid()
            slide.background.fill.fore_color.theme_color = MSO_THEME_COLOR.ACCENT_1
        elif fill is not None:
            slide.background.fill.solid()
            slide.background.fill.fore_color.rgb = RGBColor(*fill)
    presentation.save(path)
    return str(path)


def test_evaluate_presentation_fill_to_rgb_distance(tmp_path, bad):
    rules = {"rgb": [0, 0, 255], "original_rgb": [255, 255, 255]}
    assert evaluate_presentation_fill_to_rgb_distance(deck(tmp_path / "blue.pptx", [(0, 0, 255)] * 2), rules) == 1.0
    near = (0, 0, 205)
    expected = 1 - (50 / math.sqrt(3 * 255**2) + 0) / 2
    assert evaluate_presentation_fill_to_rgb_distance(deck(tmp_path / "near.pptx", [near, (0, 0, 255)]),
                                                      rules) == pytest.approx(expected)
    # a white slide is the original colour: distance 1; a theme colour has no RGB: distance 1
    assert evaluate_presentation_fill_to_rgb_distance(deck(tmp_path / "white.pptx", [(255, 255, 255), (0, 0, 255)]),
                                                      rules) == pytest.approx(0.5)
    assert evaluate_presentation_fill_to_rgb_distance(deck(tmp_path / "theme.pptx", ["theme"]), rules) == 0.0
    # no background of its own and a master with none: distance 1
    assert evaluate_presentation_fill_to_rgb_distance(deck(tmp_path / "unset.pptx", [None]), rules) == 0.0
    assert evaluate_presentation_fill_to_rgb_distance(deck(tmp_path / "none.pptx", []), rules) == 0.0
    for path in bad:
        assert evaluate_presentation_fill_to_rgb_distance(path, rules) == 0.0
