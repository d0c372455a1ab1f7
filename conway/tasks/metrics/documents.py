"""OSWorld's document metrics, `compare_docx_files` and `compare_pptx_files`, written afresh on python-docx and python-pptx.

Each metric is `metric(result, expected, **options) -> float` with file paths (a
None result scores 0), as OSWorld's evaluator calls them. A missing, corrupt or
wrong-kind file raises `MetricError` (the evaluator's one-line error, score 0),
but for the names `compare_docx_files` does not read, which score 0 (below).
Counts are of OSWorld's evaluation_examples (16 `compare_docx_files` and 53
`compare_pptx_files` evaluators), surveyed for this module.

`compare_docx_files` compares the body's paragraph texts of two `.docx` files,
or of two `.odt` files (read as OSWorld reads them: `opendocument.py`). Which
reader is chosen by OSWorld's own test of the two paths' names: both end in
`.docx`, or both in `.odt`, letter case counting; any other pair (an upper-case
`.DOCX`, a `.docx` beside an `.odt`, a `.txt`) scores 0 without being opened,
as in OSWorld, which prints "unsupported" and returns 0. Options, OSWorld's defaults first:
`ignore_blanks=True` (7 tasks set it; all whitespace runs collapse and the whole
text is compared at once), `ignore_case=False` (2), `ignore_order=False` (2:
paragraphs sorted first), `content_only=False` (2: the score is the texts'
similarity, rapidfuzz's ratio, a value between 0 and 1), `fuzzy_match=False` (1:
likewise similarity instead of equality; without `ignore_blanks`, the mean over
paragraphs, which must be as many), `delete_empty_lines=False` (1: blank
paragraphs dropped).

`compare_pptx_files` walks both decks slide by slide and shape by shape and
scores 1 only when nothing it examines differs. Always compared: the number of
shapes on each slide, of paragraphs in each text shape, of text shapes (groups
included), a table's rows, columns and per-cell paragraphs, and the boldness,
italics and underline of table text. The `examine_*` switches, all true unless
said otherwise, the number of tasks that set each in brackets:
`number_of_slides`, `shape` (16: position and size, within
`approximately_tolerance`, default 0.005 relative (1), of shapes that hold text),
`text`, `indent` (levels 0 and 1 count as one), `font_name` (1), `font_size` (2),
`font_bold` (1), `font_italic` (1), `color_rgb` (1: compared where both runs have
an explicit RGB colour), `font_underline` (1), `strike_through` (1), `alignment`
(2: unset counts as left), `run_count` (3: blank paragraphs count only runs with
text), `bullets` (2: each slide's bullet characters, levels and texts),
`background_color` (2), `note` (the speaker notes' text), and, false unless set,
`image_size` (1: pictures by size only, other shapes by position and size) and
`modify_height` (2: shapes without text and freeforms by height only, the others
by position and size), and the four switches OSWorld wrote for one task each,
with its slide numbers, title text and offsets (`presentations._one_task_position`):
`title_bottom_position`, `table_bottom_position`, `right_position`, `top_position`
(1 each). `enable_debug` and `examine_shape_lenient_height` (2) are accepted and,
as in OSWorld's checker, change nothing; `_note`-style keys are comments.

Refused with an error naming them (so a task using one is reported as not
runnable, never mis-scored): `examine_shape_for_shift_size` when set true (in
OSWorld it tests one task's slide by a hard-coded text; no task of
OSWorld-Verified sets it), a switch whose value is not true or false, and any
other option.
`unsupported_options(func_name, options)` lists those names without opening a file.

`compare_docx_tables` (4 tasks, no options) scores 1 when both Word documents
have as many tables, each with as many rows and columns (python-docx's grid)
and the same cell texts, leading and trailing blanks aside; a missing or
unreadable file scores 0, as OSWorld's catches it. `compare_line_spacing` (2)
scores 1 when `compare_docx_files` with its defaults does and each paragraph's
line spacing (python-docx's value) is the same; `compare_docx_images` (2) when
the bodies relate to as many images, pairwise of the same decoded pixels (an
image Pillow cannot decode scores 0, as OSWorld's crashes there).

Of those, every `compare_docx_files` and 49 of the 53 `compare_pptx_files`
evaluators use only what is supported here.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from rapidfuzz import fuzz

from conway.tasks.metrics.errors import MetricError, UnsupportedOption
from conway.tasks.metrics.inputs import existing_file, is_note, library, opened, refuse
from conway.tasks.metrics.opendocument import has_yellow_highlight, odt_paragraphs
from conway.tasks.metrics.presentations import SWITCHES, pptx_difference

_DOCX_OPTIONS = {"ignore_blanks": True, "ignore_case": False, "ignore_order": False, "content_only": False,
                 "fuzzy_match": False, "delete_empty_lines": False}
_PPTX_ONE_TASK = ("examine_shape_for_shift_size",)
# in OSWorld this tests one task's slide by a hard-coded text (and no task of OSWorld-Verified sets it): refused
_NO_OPTIONS = ("compare_docx_tables", "compare_line_spacing", "compare_docx_images", "check_highlighted_words")


def unsupported_options(func_name: str, options: dict[str, Any] | None) -> list[str]:
    """The options of one evaluator entry this module does not implement (empty: all supported). Raises KeyError
    for a metric this module does not define."""
    options = options or {}
    if func_name == "compare_docx_files":
        known: dict[str, Any] = _DOCX_OPTIONS
    elif func_name == "compare_pptx_files":
        known = SWITCHES
    elif func_name in _NO_OPTIONS:
        known = {}  # OSWorld's function takes no options: any would make it raise
    else:
        raise KeyError(func_name)
    problems = []
    for key, value in options.items():
        if is_note(key):
            continue
        if func_name == "compare_pptx_files" and key == "approximately_tolerance":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                problems.append(f"{key}={value!r} (not a non-negative number)")
        elif func_name == "compare_pptx_files" and key in _PPTX_ONE_TASK:
            if value is not False:
                problems.append(f"{key}={value!r}")
        elif key not in known:
            problems.append(key)
        elif not isinstance(value, bool):
            problems.append(f"{key}={value!r} (not true or false)")
    return problems

# ---- compare_docx_files --------------------------------------------------------------------------------------

def _document_kind(result: Any, expected: Any) -> str | None:
    """".docx" or ".odt" when both paths' names end in it, letter case counting (OSWorld's `str.endswith` test in
    its `compare_docx_files`, docs.py); None for any other pair, which OSWorld scores 0 unopened."""
    names = [os.fspath(p) if isinstance(p, (str, os.PathLike)) else None for p in (result, expected)]
    if any(not isinstance(n, str) for n in names):  # a list of files, bytes: let existing_file say what it is
        return ".docx"
    return next((kind for kind in (".docx", ".odt") if all(n.endswith(kind) for n in names)), None)


def _paragraphs(path: Any, what: str, kind: str) -> list[str]:
    p = existing_file(path, what)
    if kind == ".odt":
        return opened(odt_paragraphs, p, what, "OpenDocument text")
    doc = opened(library("docx").Document, p, what, "Word document")
    return [paragraph.text for paragraph in doc.paragraphs]


def _ratio(a: str, b: str) -> float:
    return fuzz.ratio(a, b) / 100.0


def compare_docx_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when the documents' paragraph texts match under the options (a similarity in [0, 1] with `content_only`
    or `fuzzy_match`)."""
    refuse("compare_docx_files", unsupported_options("compare_docx_files", options))
    kind = _document_kind(result, expected)
    if not result or not expected or kind is None:
        return 0.0
    opt = {**_DOCX_OPTIONS, **{k: v for k, v in options.items() if k in _DOCX_OPTIONS}}
    texts = []
    for path, what in ((result, "result"), (expected, "expected")):
        paragraphs = _paragraphs(path, what, kind)
        if opt["ignore_order"]:
            paragraphs.sort()
        if opt["delete_empty_lines"]:
            paragraphs = [p for p in paragraphs if p.strip()]
        texts.append(paragraphs)
    mine, gold = texts

    def case(s: str) -> str:
        return s.lower() if opt["ignore_case"] else s

    if opt["content_only"] or opt["ignore_blanks"]:
        a, b = (case(re.sub(r"\s+", " ", "\n".join(ps)).strip()) for ps in (mine, gold))
        if opt["content_only"] or opt["fuzzy_match"]:
            return _ratio(a, b)
        return 1.0 if a == b else 0.0
    if len(mine) != len(gold):
        return 0.0
    if opt["fuzzy_match"]:
        return sum(_ratio(case(a), case(b)) for a, b in zip(mine, gold)) / len(mine) if mine else 1.0
    return 1.0 if all(case(a) == case(b) for a, b in zip(mine, gold)) else 0.0


def check_highlighted_words(result: Any, expected: Any) -> float:
    """OSWorld's check that the yellow highlighting is gone (docs.py): the documents' paragraphs match
    (`compare_docx_files`, defaults) and no span of the result uses an automatic style with the background
    `#ffff00`. A result OSWorld cannot read raises there (its runner counts 0): here a MetricError, also 0."""
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    try:
        return 0.0 if has_yellow_highlight(Path(result)) else 1.0
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
        raise MetricError(f"result is not a readable OpenDocument text: {exc}") from None


# ---- compare_pptx_files --------------------------------------------------------------------------------------

def compare_pptx_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when nothing the switches examine differs between the two presentations."""
    refuse("compare_pptx_files", unsupported_options("compare_pptx_files", options))
    if result is None:
        return 0.0
    return 0.0 if pptx_difference(result, expected, **options) else 1.0


# ---- compare_docx_tables -------------------------------------------------------------------------------------

def _table_texts(path: Any) -> list[tuple[int, int, list[list[str]]]] | None:
    """Each table of a Word document as rows of stripped cell texts, read cell by cell through the grid as
    OSWorld's `compare_docx_tables` (docs.py) does; None where it could not read them (OSWorld scores those 0)."""
    try:
        doc = library("docx").Document(os.fspath(path))
        tables = []
        for table in doc.tables:
            rows, columns = len(table.rows), len(table.columns)
            cells = [[table.cell(i, j).text.strip() for j in range(columns)] for i in range(rows)]
            tables.append((rows, columns, cells))  # the sizes too: two empty tables of different widths differ
        return tables
    except MetricError:  # python-docx itself missing: say so, never score it as a mismatch
        raise
    except Exception:  # a missing, corrupt or non-Word file, a ragged table: OSWorld catches or crashes, 0 either way
        return None


def compare_docx_tables(result: Any, expected: Any, **options: Any) -> float:
    """1 when both documents have the same tables, each of the same rows and columns and the same cell texts
    (leading and trailing blanks aside); 0 otherwise, or when either file cannot be read."""
    refuse("compare_docx_tables", unsupported_options("compare_docx_tables", options))
    if not result or not expected:
        return 0.0
    mine, gold = _table_texts(result), _table_texts(expected)
    return 1.0 if mine is not None and gold is not None and mine == gold else 0.0


# ---- compare_line_spacing, compare_docx_images ----------------------------------------------------------------

def _word(path: Any) -> Any:
    """The python-docx Document, or None where it cannot be opened (OSWorld catches that and scores 0)."""
    try:
        return library("docx").Document(os.fspath(path))
    except MetricError:  # python-docx itself missing
        raise
    except Exception:
        return None


def compare_line_spacing(result: Any, expected: Any, **options: Any) -> float:
    """1 when the texts match as `compare_docx_files` with its defaults and every paragraph has the same line
    spacing (python-docx's value: a multiple, a length, or None when unset), as OSWorld's `compare_line_spacing`."""
    refuse("compare_line_spacing", unsupported_options("compare_line_spacing", options))
    if not result or not expected:
        return 0.0
    try:
        if not compare_docx_files(result, expected):
            return 0.0
    except UnsupportedOption:
        raise
    except MetricError:  # a missing or unreadable file: OSWorld's compare_docx_files catches it and scores 0
        return 0.0
    mine, gold = _word(result), _word(expected)
    if mine is None or gold is None or len(mine.paragraphs) != len(gold.paragraphs):
        return 0.0
    same = all(a.paragraph_format.line_spacing == b.paragraph_format.line_spacing
               for a, b in zip(mine.paragraphs, gold.paragraphs))
    return 1.0 if same else 0.0


def _image_pixels(doc: Any) -> list[bytes]:
    """The decoded pixels of each image the document's body relates to, in relationship order; raises on an
    image Pillow cannot decode, as OSWorld's does."""
    from PIL import Image

    pixels = []
    for rel in doc.part.rels.values():
        if "image" in rel.reltype:
            with Image.open(io.BytesIO(rel.target_part.blob)) as image:
                pixels.append(image.tobytes())
    return pixels


def compare_docx_images(result: Any, expected: Any, **options: Any) -> float:
    """1 when both Word documents' bodies hold as many images, pairwise of the same decoded pixels, as OSWorld's
    `compare_docx_images` (docs.py) compares them; 0 otherwise, or when a file or an image cannot be read."""
    refuse("compare_docx_images", unsupported_options("compare_docx_images", options))
    if not result or not expected:
        return 0.0
    mine, gold = _word(result), _word(expected)
    if mine is None or gold is None:
        return 0.0
    try:
        return 1.0 if _image_pixels(mine) == _image_pixels(gold) else 0.0
    except Exception:  # an image Pillow cannot decode (EMF, SVG): OSWorld's raises, and its runner counts 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {"compare_docx_files": compare_docx_files,
                                            "check_highlighted_words": check_highlighted_words,
                                            "compare_pptx_files": compare_pptx_files,
                                            "compare_docx_tables": compare_docx_tables,
                                            "compare_line_spacing": compare_line_spacing,
                                            "compare_docx_images": compare_docx_images}
