"""OSWorld's PDF metric `compare_pdfs` (10 tasks), written afresh on PyMuPDF (the `tasks` extra's `pymupdf`).

`compare_pdfs(result, expected)` mirrors OSWorld's function of that name in
chrome.py: each pair of files is scored by the similarity (rapidfuzz's ratio,
0 to 1) of the two documents' whole text, every page's text joined and stripped,
as PyMuPDF extracts it (the same library OSWorld reads with, so the texts match
its own). A list of results is paired with a list of expected files in order
and the score is the mean over the expected files; a pair that cannot be read
(a missing or corrupt file) adds 0 to that sum, as OSWorld catches it. A None
result reads as an empty document, as PyMuPDF opens one for no path. An empty
list of expected files, where OSWorld divides by zero, scores 0.

`check_pdf_pages(result, rules)` (OSWorld's pdf.py) compares the document's
page count with `rules.ref_value` by the `operator` function `rules.relation`
(`eq`, `lt`, `ge`, …). OSWorld counts pages with pypdf, here PyMuPDF counts
them: the same for any well-formed PDF. A None result scores 0; a file that
cannot be opened as a PDF scores 0 (OSWorld's raises, its runner counts 0).
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from typing import Any

from rapidfuzz import fuzz

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import library, refuse


def _text(path: Any) -> str:
    """Every page's text of one document, joined and stripped, as OSWorld's `extract_text_from_pdf` builds it."""
    pymupdf = library("pymupdf")
    with pymupdf.open(os.fspath(path) if isinstance(path, os.PathLike) else path) as document:
        return "".join(page.get_text() for page in document).strip()


def _pair_score(result: Any, expected: Any) -> float:
    try:
        return fuzz.ratio(_text(result), _text(expected)) / 100.0
    except MetricError:  # PyMuPDF itself missing: say so rather than score a mismatch
        raise
    except Exception:  # an unreadable file: OSWorld logs it and the pair adds nothing
        return 0.0


def compare_pdfs(result: Any, expected: Any, **options: Any) -> float:
    """The mean text similarity of the result PDFs to the expected ones (one file each, or two lists)."""
    refuse("compare_pdfs", [key for key in options if not key.startswith("_")])  # OSWorld's takes no options
    if not isinstance(expected, list):
        result, expected = [result], [expected]
    if not expected:
        return 0.0  # OSWorld divides by the number of expected files and crashes: its runner counts 0
    if not isinstance(result, list):
        return 0.0  # OSWorld zips it with the list: a string's characters name no file, None crashes: 0 either way
    return sum(_pair_score(r, e) for r, e in zip(result, expected)) / len(expected)


_RELATIONS = ("eq", "ne", "lt", "le", "gt", "ge")


def check_pdf_pages(result: Any, rules: dict[str, Any]) -> float:
    """1 when the PDF's page count stands in `rules.relation` to `rules.ref_value`."""
    if rules.get("relation") not in _RELATIONS:
        refuse("check_pdf_pages", [f"relation={rules.get('relation')!r}"])
    if result is None:
        return 0.0
    pymupdf = library("pymupdf")
    try:
        with pymupdf.open(os.fspath(result), filetype="pdf") as document:
            pages = document.page_count
    except Exception:  # missing, not a PDF: pypdf raises in OSWorld's, and its runner counts 0
        return 0.0
    return float(getattr(operator, rules["relation"])(pages, rules["ref_value"]))


METRICS: dict[str, Callable[..., float]] = {"compare_pdfs": compare_pdfs, "check_pdf_pages": check_pdf_pages}
