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
- `evaluate_strike_through_last_paragraph(result, expected)`: the texts match
  (`compare_docx_files`, its defaults) and every run of the result's last
  paragraph is struck through.
- `check_italic_font_size_14(result, expected)`: the texts match and every
  italic run of the result's body is 14 pt.
- `check_tabstops(result, expected, word_number_split_by_tabstop=None,
  index=0)`: the non-blank paragraphs are as many, optionally each result
  paragraph's `index`-th tab-separated part has that many words, and each
  pair has the same tab stops (clear stops and a left stop at 0 ignored) by
  alignment; the score is 1 minus the mean, over paragraphs, of the summed
  position differences over the expected document's text width.
- `find_default_font(result, rules)`: the LibreOffice registry file
  (registrymodifications.xcu) sets Writer's standard default font to
  `rules.font_name`; an unreadable file counts as no font set.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from conway.tasks.metrics.documents import compare_docx_files
from conway.tasks.metrics.errors import MetricError, UnsupportedOption
from conway.tasks.metrics.inputs import library, refuse, unknown_options

OPTIONS = {"check_tabstops": ("word_number_split_by_tabstop", "index")}
"""The options each metric here takes; any other is refused, at run time and by `tasks list`."""

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


def _same_text(result: Any, expected: Any) -> bool:
    """`compare_docx_files` with its defaults, a file it cannot read counting as different (OSWorld's catches)."""
    try:
        return bool(compare_docx_files(result, expected))
    except UnsupportedOption:
        raise
    except MetricError as exc:
        if "is not installed" in str(exc):  # python-docx missing: an error, never a 0
            raise
        return False


def evaluate_strike_through_last_paragraph(result: Any, expected: Any) -> float:
    if not result or not expected or not _same_text(result, expected):
        return 0.0
    doc = _document(result)
    if doc is None or not doc.paragraphs:  # no paragraph: OSWorld's indexes [-1] and crashes, 0
        return 0.0
    return float(all(run.font.strike for run in doc.paragraphs[-1].runs))


def check_italic_font_size_14(result: Any, expected: Any) -> float:
    if not result or not expected or not _same_text(result, expected):
        return 0.0
    doc = _document(result)
    if doc is None:
        return 0.0
    italic = [run for paragraph in doc.paragraphs for run in paragraph.runs if run.italic]
    return float(all(run.font.size is not None and run.font.size.pt == 14 for run in italic))


def _words_per_part(paragraphs: list, number: int, index: int) -> bool:
    """Each paragraph's `index`-th tab-separated part has `number` words (an index past the parts raises, as
    OSWorld's does)."""
    return all(len([w for w in re.split(r"\s", p.text.split("\t")[index]) if w.strip()]) == number
               for p in paragraphs)


def _tab_stops(paragraph: Any) -> list:
    tab = library("docx.enum.text").WD_TAB_ALIGNMENT
    return [t for t in paragraph.paragraph_format.tab_stops
            if not (t.alignment == tab.CLEAR or (t.alignment == tab.LEFT and t.position == 0))]


def check_tabstops(result: Any, expected: Any, **options: Any) -> float:
    refuse("check_tabstops", unknown_options(options, OPTIONS["check_tabstops"]))
    mine, gold = _document(result), _document(expected)
    if mine is None or gold is None:
        return 0.0
    ours, theirs = ([p for p in d.paragraphs if p.text.strip()] for d in (mine, gold))
    if len(ours) != len(theirs):
        return 0.0
    try:
        number = options.get("word_number_split_by_tabstop")
        if number is not None and not _words_per_part(ours, number, options.get("index", 0)):
            return 0.0
        section = gold.sections[0]
        width = section.page_width - section.left_margin - section.right_margin
        lost = 0.0
        for a, b in zip(ours, theirs):
            stops_a, stops_b = _tab_stops(a), _tab_stops(b)
            if len(stops_a) != len(stops_b) or any(x.alignment != y.alignment for x, y in zip(stops_a, stops_b)):
                return 0.0
            lost += sum(abs(x.position - y.position) for x, y in zip(stops_a, stops_b)) / width
        return 1 - lost / len(ours)
    except MetricError:
        raise
    except Exception:  # an index past a paragraph's parts, no paragraphs at all: OSWorld's raises, 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    contains_page_break, compare_font_names, compare_subscript_contains, has_page_numbers_in_footers,
    is_first_line_centered, find_default_font, evaluate_strike_through_last_paragraph, check_italic_font_size_14,
    check_tabstops)}
