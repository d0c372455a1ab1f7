"""The one-file Impress checks of impress.py on decks and registry files written here, scored as OSWorld's."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from helpers.extras import need_extra

pptx = need_extra("tasks", "pptx")

from pptx.util import Inches  # noqa: E402

from conway.tasks.metrics import METRICS  # noqa: E402
from conway.tasks.metrics.impress import (  # noqa: E402
    check_auto_saving_time,
    check_presenter_console_disable,
    check_slide_orientation_Portrait,
    check_transition,
)

XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="EnablePresenterScreen"><value>false</value></prop></item>
{items}
</oor:items>
"""


def registry(path: Path, *items: str) -> str:
    path.write_text(XCU.format(items="\n".join(items)))
    return str(path)


@pytest.fixture
def bad(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"neither XML nor zip <")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    return [None, str(tmp_path / "absent"), str(junk), str(empty)]


def test_registered():
    for fn in (check_presenter_console_disable, check_slide_orientation_Portrait, check_transition,
               check_auto_saving_time):
        assert METRICS[fn.__name__] is fn


def presenter(value: str) -> str:
    return (f'<item oor:path="/org.openoffice.Office.Impress/Misc/Start"><prop oor:name="EnablePresenterScreen" '
            f'oor:op="fuse"><value>{value}</value></prop></item>')


def test_check_presenter_console_disable(tmp_path, bad):
    assert check_presenter_console_disable(registry(tmp_path / "off.xcu", presenter("false"))) == 1.0
    assert check_presenter_console_disable(registry(tmp_path / "caps.xcu", presenter("False"))) == 1.0
    assert check_presenter_console_disable(registry(tmp_path / "on.xcu", presenter("true"))) == 0.0
    assert check_presenter_console_disable(registry(tmp_path / "unset.xcu")) == 0.0  # another path's prop
    assert check_presenter_console_disable(registry(tmp_path / "first.xcu", presenter("true"), presenter("false"))) == 0.0
    for path in bad:
        assert check_presenter_console_disable(path) == 0.0


def autosave(minutes: str) -> str:
    return (f'<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="AutoSaveTimeIntervall" '
            f'oor:op="fuse"><value>{minutes}</value></prop></item>')


def test_check_auto_saving_time(tmp_path, bad):
    rules = {"minutes": 3}
    assert check_auto_saving_time(registry(tmp_path / "three.xcu", autosave("3")), rules) == 1.0
    assert check_auto_saving_time(registry(tmp_path / "ten.xcu", autosave("10")), rules) == 0.0
    assert check_auto_saving_time(registry(tmp_path / "last.xcu", autosave("10"), autosave("3")), rules) == 1.0
    assert check_auto_saving_time(registry(tmp_path / "unset.xcu"), rules) == 0.0
    assert check_auto_saving_time(registry(tmp_path / "word.xcu", autosave("three")), rules) == 0.0
    for path in bad:
        assert check_auto_saving_time(path, rules) == 0.0


def deck(path: Path, width: float, height: float) -> str:
    presentation = pptx.Presentation()
    presentation.slide_width, presentation.slide_height = Inches(width), Inches(height)
    presentation.slides.add_slide(presentation.slide_layouts[6])
    presentation.save(path)
    return str(path)


def test_check_slide_orientation_portrait(tmp_path, bad):
    assert check_slide_orientation_Portrait(deck(tmp_path / "tall.pptx", 7.5, 10)) == 1.0
    assert check_slide_orientation_Portrait(deck(tmp_path / "wide.pptx", 10, 7.5)) == 0.0
    assert check_slide_orientation_Portrait(deck(tmp_path / "square.pptx", 8, 8)) == 0.0
    for path in bad[1:]:
        assert check_slide_orientation_Portrait(path) == 0.0


TRANSITION = ('<p:transition xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" spd="slow">'
              "<p:{kind}/></p:transition>")


def with_transition(path: Path, kind: str | None) -> str:
    """A two-slide deck whose first slide's XML part gets a transition of `kind` (None: none)."""
    plain = path.with_suffix(".plain.pptx")
    presentation = pptx.Presentation()
    for _ in range(2):
        presentation.slides.add_slide(presentation.slide_layouts[6])
    presentation.save(plain)
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "ppt/slides/slide1.xml" and kind:
                data = data.replace(b"</p:sld>", TRANSITION.format(kind=kind).encode() + b"</p:sld>")
            target.writestr(info, data)
    return str(path)


def test_check_transition(tmp_path, bad):
    rules = {"slide_idx": 0, "transition_type": "dissolve"}
    assert check_transition(with_transition(tmp_path / "dissolve.pptx", "dissolve"), rules) == 1.0
    assert check_transition(with_transition(tmp_path / "fade.pptx", "fade"), rules) == 0.0
    assert check_transition(with_transition(tmp_path / "none.pptx", None), rules) == 0.0
    assert check_transition(with_transition(tmp_path / "later.pptx", "dissolve"), {**rules, "slide_idx": 1}) == 0.0
    assert check_transition(with_transition(tmp_path / "gone.pptx", "dissolve"), {**rules, "slide_idx": 5}) == 0.0
    for path in bad:
        assert check_transition(path, rules) == 0.0


def test_check_image_stretch_and_center(tmp_path, bad):
    from PIL import Image

    from conway.tasks.metrics.impress import check_image_stretch_and_center as stretched

    red, blue = tmp_path / "red.png", tmp_path / "blue.png"
    Image.new("RGB", (8, 6), (255, 0, 0)).save(red)
    Image.new("RGB", (8, 6), (0, 0, 255)).save(blue)

    def picture_deck(path: Path, image: Path | None, box: tuple[float, float, float, float]) -> str:
        presentation = pptx.Presentation()  # 10in x 7.5in
        slide = presentation.slides.add_slide(presentation.slide_layouts[6])
        if image is not None:
            slide.shapes.add_picture(str(image), *(Inches(v) for v in box))
        presentation.save(path)
        return str(path)

    original = picture_deck(tmp_path / "original.pptx", red, (3, 3, 2, 1.5))
    assert stretched(picture_deck(tmp_path / "full.pptx", red, (0, 0, 10, 7.5)), original) == 1.0
    assert stretched(picture_deck(tmp_path / "near.pptx", red, (0.2, 0.2, 9.7, 7.2)), original) == 1.0
    assert stretched(picture_deck(tmp_path / "small.pptx", red, (1, 1, 8, 5.5)), original) == 0.0
    assert stretched(picture_deck(tmp_path / "other.pptx", blue, (0, 0, 10, 7.5)), original) == 0.0
    assert stretched(picture_deck(tmp_path / "moved.pptx", red, (0, 0, 10, 7.5)),
                     picture_deck(tmp_path / "no_picture.pptx", None, (0, 0, 1, 1))) == 0.0
    assert stretched(original, original) == 0.0  # the picture as it was
    empty_deck = tmp_path / "no_slides.pptx"
    pptx.Presentation().save(empty_deck)
    assert stretched(str(empty_deck), original) == 0.0
    for path in bad[1:]:
        assert stretched(path, original) == 0.0
        assert stretched(original, path) == 0.0
