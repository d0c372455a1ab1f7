"""OSWorld's one-document Writer checks (one task each), written afresh on python-docx and the standard library.

Each mirrors OSWorld's function of the same name in docs.py; a None result, or
a document python-docx cannot open, scores 0 as OSWorld's catches it.

- `contains_page_break(result, rules)`: the body's runs hold at least one
  page break (`w:br` of type page), and exactly `rules.page_break_count` of
  them when that is given.
- `compare_font_names(result, rules)`: every run of every body paragraph names
  the font `rules.font_name` (a run that names none fails).
- `compare_subscript_contains(result, expected)`: some pair of runs, paired
  paragraph by paragraph and run by run, is subscript in both documents.
- `has_page_numbers_in_footers(result)`: every section's footer's first
  paragraph holds a digit.
- `is_first_line_centered(result)`: the first paragraph is centred (a
  document with no paragraph crashes OSWorld's: 0).
- `find_default_font(result, rules)`: the LibreOffice registry file
  (registrymodifications.xcu) sets Writer's standard default font to
  `rules.font_name`; an unreadable file counts as no font set.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import library

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_OOR = "{http://openoffice.org/2001/registry}"


def _document(path: Any) -> Any:
    """The python-docx Document, or None where OSWorld's open would fail (it catches that and scores 0)."""
    if not path:
        return None
    try:
        return library("docx").Document(os.fspath(path))
    except MetricError:  # python-docx itself missing: an error, never a 0
        raise
    except Exception:
        return None


def contains_page_break(result: Any, rules: dict[str, Any]) -> float:
    doc = _document(result)
    if doc is None:
        return 0.0
    wanted = rules.get("page_break_count") if isinstance(rules, dict) else None
    breaks = sum(1 for paragraph in doc.paragraphs for run in paragraph.runs
                 for br in run.element.iter(f"{_W}br") if br.get(f"{_W}type") == "page")
    if wanted is not None and breaks != wanted:
        return 0.0
    return 1.0 if breaks > 0 else 0.0


def compare_font_names(result: Any, rules: dict[str, Any]) -> float:
    doc = _document(result)
    if doc is None:
        return 0.0
    font = rules["font_name"]
    return float(all(run.font.name == font for paragraph in doc.paragraphs for run in paragraph.runs))


def compare_subscript_contains(result: Any, expected: Any) -> float:
    mine, gold = _document(result), _document(expected)
    if mine is None or gold is None:
        return 0.0
    for a, b in zip(mine.paragraphs, gold.paragraphs):
        if any(r1.font.subscript and r2.font.subscript for r1, r2 in zip(a.runs, b.runs)):
            return 1.0
    return 0.0


def has_page_numbers_in_footers(result: Any) -> float:
    doc = _document(result)
    if doc is None:
        return 0.0
    for section in doc.sections:
        paragraphs = section.footer.paragraphs
        text = paragraphs[0].text if paragraphs else ""
        if not any(ch.isdigit() for ch in text):
            return 0.0
    return 1.0


def is_first_line_centered(result: Any) -> float:
    doc = _document(result)
    if doc is None or not doc.paragraphs:  # no paragraph: OSWorld's indexes past the end and crashes, 0
        return 0.0
    centre = library("docx.enum.text").WD_PARAGRAPH_ALIGNMENT.CENTER
    return 1.0 if doc.paragraphs[0].paragraph_format.alignment == centre else 0.0


def find_default_font(result: Any, rules: dict[str, Any]) -> float:
    expected = rules["font_name"]
    if not result:
        return 0.0
    font = None
    try:
        for item in ET.parse(os.fspath(result)).getroot().iter("item"):
            if item.get(f"{_OOR}path") != "/org.openoffice.Office.Writer/DefaultFont":
                continue
            for prop in item.iter("prop"):
                if prop.get(f"{_OOR}name") == "Standard":
                    for value in prop.findall("value"):
                        font = value.text  # the last one set wins, as in OSWorld's walk
    except Exception:  # missing, not XML: OSWorld catches anything here and compares what it found so far
        pass
    return 1.0 if font == expected else 0.0


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    contains_page_break, compare_font_names, compare_subscript_contains, has_page_numbers_in_footers,
    is_first_line_centered, find_default_font)}
