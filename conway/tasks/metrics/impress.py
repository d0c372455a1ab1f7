"""OSWorld's one-file Impress checks (one task each), written afresh on the standard library and python-pptx.

Each mirrors OSWorld's function of the same name in slides.py; where that one
catches an error or raises (a missing or unreadable file), the score is 0.

- `check_presenter_console_disable(result)`: LibreOffice's registry file
  (registrymodifications.xcu) sets Impress's `EnablePresenterScreen` (under
  `/org.openoffice.Office.Impress/Misc/Start`) to false; the first such
  setting decides.
- `check_slide_orientation_Portrait(result)`: the deck's slides are taller
  than wide.
- `check_transition(result, rules)`: slide `rules.slide_idx` (from 0) of the
  `.pptx` has a transition holding an element `p:<rules.transition_type>`
  (e.g. `dissolve`), read from the slide's XML part `slide<N+1>.xml`.
- `check_image_stretch_and_center(result, expected)`: the first picture on
  the original deck's (`expected`) first slide is found, by its image bytes,
  among the result's first slide's pictures (the last match), and that one
  spans the original's slide, width and height within half an inch, and is
  centred within half an inch.
- `check_auto_saving_time(result, rules)`: the registry file sets
  `AutoSaveTimeIntervall` (under `/org.openoffice.Office.Common/Save/Document`)
  to `rules.minutes`; the last such item decides.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from typing import Any

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import library

_OOR = "{http://openoffice.org/2001/registry}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"


def _registry(path: Any) -> ET.Element | None:
    try:
        return ET.parse(os.fspath(path)).getroot()
    except Exception:  # None, missing, not XML: OSWorld's catches each (or raises) and scores 0
        return None


def check_presenter_console_disable(result: Any) -> float:
    root = _registry(result)
    if root is None:
        return 0.0
    for item in root.iter("item"):
        if item.get(f"{_OOR}path") != "/org.openoffice.Office.Impress/Misc/Start":
            continue
        for prop in item.findall("prop"):
            if prop.get(f"{_OOR}name") == "EnablePresenterScreen":
                value = prop.find("value")
                text = value.text if value is not None else None
                return 1.0 if text is not None and text.lower() == "false" else 0.0
    return 0.0


def check_slide_orientation_Portrait(result: Any) -> float:  # OSWorld's name, capital P and all
    pptx = library("pptx")
    try:
        deck = pptx.Presentation(os.fspath(result))
    except Exception:  # missing, not a deck: OSWorld's raises, its runner counts 0
        return 0.0
    return 1.0 if deck.slide_width < deck.slide_height else 0.0


def check_transition(result: Any, rules: dict[str, Any]) -> float:
    slide = f"ppt/slides/slide{rules['slide_idx'] + 1}.xml"
    try:
        with zipfile.ZipFile(os.fspath(result)) as deck:
            if slide not in deck.namelist():
                return 0.0
            with deck.open(slide) as part:
                root = ET.parse(part).getroot()
    except Exception:  # missing, not a zip, not XML: OSWorld's raises, its runner counts 0
        return 0.0
    transition = root.find(f".//{_P}transition")
    if transition is None:
        return 0.0
    return 1.0 if transition.find(f".//{_P}{rules['transition_type']}") is not None else 0.0


def check_auto_saving_time(result: Any, rules: dict[str, Any]) -> float:
    minutes = rules["minutes"]
    root = _registry(result)
    if root is None:
        return 0.0
    interval = None
    try:
        for item in root.iter("item"):
            if item.get(f"{_OOR}path") != "/org.openoffice.Office.Common/Save/Document":
                continue
            for prop in item.iter("prop"):
                if prop.get(f"{_OOR}name") == "AutoSaveTimeIntervall":
                    interval = prop.find(".//value").text
                    break
        return 1.0 if interval is not None and int(interval) == minutes else 0.0
    except MetricError:
        raise
    except Exception:  # a setting with no value or not a number: OSWorld's raises, its runner counts 0
        return 0.0


_PICTURE = 13  # MSO_SHAPE_TYPE.PICTURE
_HALF_INCH = 457200  # EMU


def _stretched_and_centred(result: Any, expected: Any) -> bool:
    """OSWorld's test, raising where its function raises (a deck without slides, a linked picture)."""
    pptx = library("pptx")
    original, modified = pptx.Presentation(os.fspath(expected)), pptx.Presentation(os.fspath(result))
    pictures = [[s for s in deck.slides[0].shapes if s.shape_type == _PICTURE] for deck in (original, modified)]
    if not pictures[0]:
        return False
    blob = pictures[0][0].image.blob
    matches = [p for p in pictures[1] if p.image.blob == blob]
    if not matches:
        return False
    picture, width, height = matches[-1], original.slide_width, original.slide_height
    return not (abs(picture.width - width) > _HALF_INCH or abs(picture.height - height) > _HALF_INCH
                or abs(picture.left - (width - picture.width) / 2) > _HALF_INCH
                or abs(picture.top - (height - picture.height) / 2) > _HALF_INCH)


def check_image_stretch_and_center(result: Any, expected: Any) -> float:
    try:
        return 1.0 if _stretched_and_centred(result, expected) else 0.0
    except MetricError:
        raise
    except Exception:  # missing or unreadable decks, no slide: OSWorld's raises, its runner counts 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    check_presenter_console_disable, check_slide_orientation_Portrait, check_transition, check_auto_saving_time,
    check_image_stretch_and_center)}
