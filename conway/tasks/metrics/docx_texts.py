"""Two more of OSWorld's Word-text comparisons (one task each), written afresh on python-docx and rapidfuzz.

Both mirror OSWorld's functions of the same name in docs.py. They read only
two `.docx` files (both names ending in `.docx`, letter case counting, else 0
unopened); a None, missing or unreadable file scores 0, as OSWorld's catches it.

- `compare_docx_files_and_ignore_new_lines(result, expected, ignore_blanks=True)`:
  the non-empty paragraphs' texts, joined and with every whitespace run folded
  to one space, are equal; with `ignore_blanks` false, paragraph by paragraph.
- `compare_references(result, expected, reference_indicator="References",
  reference_base_result=0.5)`: the non-blank paragraphs after the first one
  that reads exactly `reference_indicator` are compared pairwise by rapidfuzz's
  ratio; with their mean r and base b, the score is (r - b) / (1 - b) when
  r >= b + 0.01, else 0. Neither document with such a heading scores 1, only
  one 0, as many references on each side are needed. `content_only`, which
  OSWorld's function reads nowhere, is accepted and changes nothing.
- `compare_unique_train_records(result, [gold, initial])`: the result's
  non-blank lines (paragraphs, stripped) all come from the initial document,
  its train ids (the second field of each line of exactly four comma-separated
  fields) are unique and the same set as the gold's, and it has as many lines
  as the gold. Any file name is read here (OSWorld's does not test suffixes).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from rapidfuzz import fuzz

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import library, refuse, unknown_options

OPTIONS = {"compare_docx_files_and_ignore_new_lines": ("ignore_blanks",),
           "compare_references": ("reference_indicator", "reference_base_result", "content_only")}
"""The options each metric here takes; any other is refused, at run time and by `tasks list`."""


def _paragraph_texts(result: Any, expected: Any) -> tuple[list[str], list[str]] | None:
    """Both documents' paragraph texts, or None where OSWorld's scores 0 unread or unreadable."""
    if not result or not expected:
        return None
    if not all(isinstance(p, str) and p.endswith(".docx") for p in (result, expected)):
        return None  # OSWorld's "unsupported file types", 0 (a path object has no endswith there: it crashes, 0)
    texts = []
    for path in (result, expected):
        try:
            texts.append([p.text for p in library("docx").Document(os.fspath(path)).paragraphs])
        except MetricError:  # python-docx itself missing: an error, never a 0
            raise
        except Exception:
            return None
    return texts[0], texts[1]


def compare_docx_files_and_ignore_new_lines(result: Any, expected: Any, **options: Any) -> float:
    refuse("compare_docx_files_and_ignore_new_lines",
           unknown_options(options, OPTIONS["compare_docx_files_and_ignore_new_lines"]))
    texts = _paragraph_texts(result, expected)
    if texts is None:
        return 0.0
    mine, gold = ([t for t in paragraphs if t != ""] for paragraphs in texts)
    if options.get("ignore_blanks", True):
        a, b = (re.sub(r"\s+", " ", "\n".join(ps)).strip() for ps in (mine, gold))
        return 1.0 if a == b else 0.0
    return 1.0 if mine == gold else 0.0


def compare_references(result: Any, expected: Any, **options: Any) -> float:
    refuse("compare_references", unknown_options(options, OPTIONS["compare_references"]))
    texts = _paragraph_texts(result, expected)
    if texts is None:
        return 0.0
    heading = options.get("reference_indicator", "References")
    base = options.get("reference_base_result", 0.5)
    found = [heading in paragraphs for paragraphs in texts]
    if not any(found):
        return 1.0
    if not all(found):
        return 0.0
    mine, gold = ([p for p in ps[ps.index(heading) + 1:] if p.strip()] for ps in texts)
    if len(mine) != len(gold):
        return 0.0
    if not mine:
        return 0.0  # nothing after either heading: OSWorld divides by zero, its runner counts 0
    mean = sum(fuzz.ratio(a, b) / 100.0 for a, b in zip(mine, gold)) / len(mine)
    return (mean - base) / (1 - base) if mean >= base + 0.01 else 0.0


def _lines_and_ids(path: Any) -> tuple[list[str], list[str]] | None:
    try:
        doc = library("docx").Document(os.fspath(path))
    except MetricError:
        raise
    except Exception:  # missing or unreadable: OSWorld's catches it and scores 0
        return None
    lines = [p.text.strip() for p in doc.paragraphs if p.text.strip()]
    return lines, [line.split(",")[1].strip() for line in lines if len(line.split(",")) == 4]


def compare_unique_train_records(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result keeps only lines of the initial document, one per train id, the gold's ids and count."""
    if not result or not isinstance(expected, list) or len(expected) < 2 or not expected[0] or not expected[1]:
        return 0.0
    read = [_lines_and_ids(path) for path in (result, expected[0], expected[1])]
    if any(r is None for r in read):
        return 0.0
    (lines, ids), (gold_lines, gold_ids), (initial_lines, _) = read
    if not set(lines) <= set(initial_lines) or len(ids) != len(set(ids)) or set(ids) != set(gold_ids):
        return 0.0
    return 1.0 if len(lines) == len(gold_lines) else 0.0


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    compare_docx_files_and_ignore_new_lines, compare_references, compare_unique_train_records)}
