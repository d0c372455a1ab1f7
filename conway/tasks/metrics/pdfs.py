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

`compare_pdf_images(result, expected)` (OSWorld's chrome.py) pairs the pictures embedded in the two documents,
page by page in PyMuPDF's order, and scores the share of pairs whose perceptual hashes (imagehash's `phash`:
grey, 32x32 Lanczos, a 2-D DCT's top-left 8x8 against its median) differ in at most 5 bits; 0 when either
file is missing or unreadable or their picture counts differ, 1 when neither holds a picture.
"""

from __future__ import annotations

import io
import operator
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image
from rapidfuzz import fuzz

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import library, refuse, unknown_options

OPTIONS: dict[str, tuple[str, ...]] = {"compare_pdfs": ()}  # OSWorld's takes no options
"""The options each metric here takes; any other is refused, at run time and by `tasks list`."""


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
    refuse("compare_pdfs", unknown_options(options, OPTIONS["compare_pdfs"]))
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


def _dct(values: np.ndarray) -> np.ndarray:
    """scipy's unnormalised DCT-II along the first axis (what imagehash's phash applies to rows, then columns)."""
    n = values.shape[0]
    k, i = np.arange(n)[:, None], np.arange(n)[None, :]
    return 2 * np.cos(np.pi * k * (2 * i + 1) / (2 * n)) @ values


def phash_bits(image: Image.Image) -> np.ndarray:
    pixels = np.asarray(image.convert("L").resize((32, 32), Image.Resampling.LANCZOS), dtype=np.float64)
    low = _dct(_dct(pixels).T).T[:8, :8]
    return low > np.median(low)


def _pictures(path: Any) -> list[Image.Image]:
    pymupdf = library("pymupdf")
    out = []
    with pymupdf.open(os.fspath(path)) as document:
        for page in document:
            for picture in page.get_images(full=True):
                try:
                    out.append(Image.open(io.BytesIO(document.extract_image(picture[0])["image"])))
                except OSError:  # a picture Pillow cannot read is left out, as OSWorld does
                    continue
    return out


def compare_pdf_images(result: Any, expected: Any, **options: Any) -> float:
    if not result or not expected or not (os.path.exists(result) and os.path.exists(expected)):
        return 0.0
    try:
        first, second = _pictures(result), _pictures(expected)
    except Exception:  # an unreadable document: OSWorld scores 0
        return 0.0
    if len(first) != len(second):
        return 0.0
    if not first:
        return 1.0
    close = sum(int(np.count_nonzero(phash_bits(a) != phash_bits(b))) <= 5 for a, b in zip(first, second))
    return close / len(first)


METRICS: dict[str, Callable[..., float]] = {"compare_pdfs": compare_pdfs, "check_pdf_pages": check_pdf_pages,
                                            "compare_pdf_images": compare_pdf_images}
