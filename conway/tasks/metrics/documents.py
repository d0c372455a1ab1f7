"""OSWorld's document metrics, `compare_docx_files` and `compare_pptx_files`, written afresh on python-docx and python-pptx.

Each metric is `metric(result, expected, **options) -> float` with file paths (a
None result scores 0), as OSWorld's evaluator calls them. A missing, corrupt or
wrong-kind file raises `MetricError` (the evaluator's one-line error, score 0).
Counts are of OSWorld's evaluation_examples (16 `compare_docx_files` and 53
`compare_pptx_files` evaluators), surveyed for this module.

`compare_docx_files` compares the body's paragraph texts of two `.docx` files
(`.odt` is not read here and is refused). Options, OSWorld's defaults first:
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
by position and size). `enable_debug` and `examine_shape_lenient_height` (2) are
accepted and, as in OSWorld's checker, change nothing; `_note`-style keys are
comments.

Refused with an error naming them (so a task using one is reported as not
runnable, never mis-scored): `examine_title_bottom_position` (1),
`examine_table_bottom_position` (1), `examine_right_position` (1),
`examine_top_position` (1) and `examine_shape_for_shift_size` when set true (in
OSWorld they test one task's slide by hard-coded slide numbers, texts and
offsets), a switch whose value is not true or false, and any other option.
`unsupported_options(func_name, options)` lists those names without opening a file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import existing_file, is_note, library, opened, refuse

_DOCX_OPTIONS = {"ignore_blanks": True, "ignore_case": False, "ignore_order": False, "content_only": False,
                 "fuzzy_match": False, "delete_empty_lines": False}
_PPTX_SWITCHES = {
    "examine_number_of_slides": True, "examine_shape": True, "examine_text": True, "examine_indent": True,
    "examine_font_name": True, "examine_font_size": True, "examine_font_bold": True, "examine_font_italic": True,
    "examine_color_rgb": True, "examine_font_underline": True, "examine_strike_through": True,
    "examine_alignment": True, "examine_run_count": True, "examine_bullets": True,
    "examine_background_color": True, "examine_note": True, "examine_image_size": False,
    "examine_modify_height": False,
    "enable_debug": True, "examine_shape_lenient_height": False,  # read by nothing in OSWorld's checker either
}
_PPTX_ONE_TASK = ("examine_title_bottom_position", "examine_table_bottom_position", "examine_right_position",
                  "examine_top_position", "examine_shape_for_shift_size")


def unsupported_options(func_name: str, options: dict[str, Any] | None) -> list[str]:
    """The options of one evaluator entry this module does not implement (empty: all supported). Raises KeyError
    for a metric this module does not define."""
    options = options or {}
    if func_name == "compare_docx_files":
        known: dict[str, Any] = _DOCX_OPTIONS
    elif func_name == "compare_pptx_files":
        known = _PPTX_SWITCHES
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

def _docx_file(path: Any, what: str) -> Path:
    p = existing_file(path, what)
    if p.suffix.lower() == ".odt":
        raise MetricError(f"compare_docx_files: .odt documents are not read here (only .docx): {p.name}")
    if p.suffix.lower() != ".docx":
        raise MetricError(f"compare_docx_files: the {what} is not a .docx file: {p.name}")
    return p


def _ratio(a: str, b: str) -> float:
    return library("rapidfuzz").fuzz.ratio(a, b) / 100.0


def compare_docx_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when the documents' paragraph texts match under the options (a similarity in [0, 1] with `content_only`
    or `fuzzy_match`)."""
    refuse("compare_docx_files", unsupported_options("compare_docx_files", options))
    if result is None:
        return 0.0
    opt = {**_DOCX_OPTIONS, **{k: v for k, v in options.items() if k in _DOCX_OPTIONS}}
    docx = library("docx")
    texts = []
    for path, what in ((result, "result"), (expected, "expected")):
        doc = opened(docx.Document, _docx_file(path, what), what, "Word document")
        paragraphs = [p.text for p in doc.paragraphs]
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


# ---- compare_pptx_files --------------------------------------------------------------------------------------

class _Examine:
    """The switches of one comparison, OSWorld's defaults filled in."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.on = {k: options.get(k, default) for k, default in _PPTX_SWITCHES.items()}
        self.tolerance = float(options.get("approximately_tolerance", 0.005))

    def __call__(self, switch: str) -> bool:
        return bool(self.on["examine_" + switch])

    def close(self, a: Any, b: Any) -> bool:
        """Equal within the relative tolerance (a zero only equals a zero; an unset position only an unset one)."""
        if a == b:
            return True
        if a is None or b is None or a == 0 or b == 0:
            return False
        return abs(a - b) / max(abs(a), abs(b)) <= self.tolerance

    def same_box(self, s1: Any, s2: Any) -> bool:
        return all(self.close(getattr(s1, k), getattr(s2, k)) for k in ("left", "top", "width", "height"))


def _has_text(shape: Any) -> bool:
    return hasattr(shape, "text")


def _blank(shape: Any) -> bool:
    return not _has_text(shape) or not (shape.text or "").strip()


def _text_shapes(shapes: Any) -> Iterator[Any]:
    """Every shape that holds text, those inside groups included, in document order."""
    for shape in shapes:
        if _has_text(shape) and hasattr(shape, "text_frame"):
            yield shape
        if hasattr(shape, "shapes"):
            yield from _text_shapes(shape.shapes)


def _runs(paragraph: Any) -> list[Any]:
    # a paragraph with no text may keep empty formatting runs; those do not count
    if not (paragraph.text or "").strip():
        return [r for r in paragraph.runs if (r.text or "").strip()]
    return list(paragraph.runs)


def _rgb(font: Any) -> Any:
    """The run's explicit RGB colour, or None for an inherited or theme colour (those are not compared)."""
    try:
        return font.color.rgb
    except AttributeError:
        return None


def _flag_differs(a: Any, b: Any) -> bool:
    # unset and False both mean "not bold"
    return a != b and not (a in (None, False) and b in (None, False))


def _underline_differs(a: Any, b: Any) -> bool:
    # OSWorld's reading: two set values must be equal; unset differs only from an explicit True
    return a != b and ((a is not None and b is not None) or a is True or b is True)


def _strike(run: Any) -> str:
    from pptx.oxml.ns import qn
    rpr = run._r.find(qn("a:rPr"))
    return "noStrike" if rpr is None else rpr.get("strike", "noStrike")


def _align(paragraph: Any) -> Any:
    from pptx.enum.text import PP_ALIGN
    return paragraph.alignment if paragraph.alignment is not None else PP_ALIGN.LEFT


def _run_difference(r1: Any, r2: Any, ex: _Examine) -> str | None:
    f1, f2 = r1.font, r2.font
    if ex("font_name") and f1.name != f2.name:
        return f"font name {f1.name!r} vs {f2.name!r}"
    if ex("font_size") and f1.size != f2.size:
        return f"font size {f1.size} vs {f2.size}"
    if ex("font_bold") and _flag_differs(f1.bold, f2.bold):
        return "bold differs"
    if ex("font_italic") and _flag_differs(f1.italic, f2.italic):
        return "italic differs"
    c1, c2 = _rgb(f1), _rgb(f2)
    if ex("color_rgb") and c1 is not None and c2 is not None and c1 != c2:
        return f"colour {c1} vs {c2}"
    if ex("font_underline") and _underline_differs(f1.underline, f2.underline):
        return "underline differs"
    if ex("strike_through") and _strike(r1) != _strike(r2):
        return "strike-through differs"
    return None


def _text_difference(s1: Any, s2: Any, ex: _Examine) -> tuple[str | None, bool]:
    """How two text shapes differ (None: they do not), and whether any pair of runs was compared."""
    if ex("text") and s1.text.strip() != s2.text.strip():
        return f"text {s1.text.strip()[:40]!r} vs {s2.text.strip()[:40]!r}", False
    p1s, p2s = s1.text_frame.paragraphs, s2.text_frame.paragraphs
    if len(p1s) != len(p2s):
        return f"{len(p1s)} vs {len(p2s)} paragraphs", False
    compared = False
    for i, (p1, p2) in enumerate(zip(p1s, p2s), 1):
        if ex("alignment") and _align(p1) != _align(p2):
            return f"paragraph {i}: alignment differs", compared
        if ex("text") and p1.text != p2.text:
            return f"paragraph {i}: text differs", compared
        if ex("indent") and p1.level != p2.level and not ({p1.level or 0, p2.level or 0} <= {0, 1}):
            return f"paragraph {i}: level {p1.level} vs {p2.level}", compared
        r1s, r2s = _runs(p1), _runs(p2)
        if ex("run_count") and len(r1s) != len(r2s):
            return f"paragraph {i}: {len(r1s)} vs {len(r2s)} runs", compared
        for r1, r2 in zip(r1s, r2s):
            compared = True
            why = _run_difference(r1, r2, ex)
            if why:
                return f"paragraph {i}: {why}", compared
    return None, compared


def _table_difference(t1: Any, t2: Any, ex: _Examine) -> str | None:
    if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
        return f"table {len(t1.rows)}x{len(t1.columns)} vs {len(t2.rows)}x{len(t2.columns)}"
    for r in range(len(t1.rows)):
        for c in range(len(t1.columns)):
            p1s, p2s = t1.cell(r, c).text_frame.paragraphs, t2.cell(r, c).text_frame.paragraphs
            if len(p1s) != len(p2s):
                return f"table cell [{r},{c}]: {len(p1s)} vs {len(p2s)} paragraphs"
            for p1, p2 in zip(p1s, p2s):
                r1s, r2s = _runs(p1), _runs(p2)
                if ex("run_count") and len(r1s) != len(r2s):
                    return f"table cell [{r},{c}]: {len(r1s)} vs {len(r2s)} runs"
                for a, b in zip(r1s, r2s):
                    c1, c2 = _rgb(a.font), _rgb(b.font)
                    if ex("color_rgb") and c1 is not None and c2 is not None and c1 != c2:
                        return f"table cell [{r},{c}]: colour {c1} vs {c2}"
                    if (_flag_differs(a.font.bold, b.font.bold) or _flag_differs(a.font.italic, b.font.italic)
                            or _underline_differs(a.font.underline, b.font.underline)):
                        return f"table cell [{r},{c}]: bold, italic or underline differs"
    return None


def _box_difference(s1: Any, s2: Any, ex: _Examine) -> str | None:
    from pptx.enum.shapes import MSO_SHAPE_TYPE
    if ex("shape") and not (_blank(s1) and _blank(s2)) and not ex.same_box(s1, s2):
        return "position or size differs"
    if ex("image_size"):
        if s1.shape_type == MSO_SHAPE_TYPE.PICTURE and s2.shape_type == MSO_SHAPE_TYPE.PICTURE:
            if not (ex.close(s1.width, s2.width) and ex.close(s1.height, s2.height)):
                return "picture size differs"
        elif not ex.same_box(s1, s2):
            return "position or size differs"
    if ex("modify_height"):
        freeforms = s1.shape_type == MSO_SHAPE_TYPE.FREEFORM and s2.shape_type == MSO_SHAPE_TYPE.FREEFORM
        if (not _has_text(s1) and not _has_text(s2)) or freeforms:
            if not ex.close(s1.height, s2.height):
                return "height differs"
        elif not ex.same_box(s1, s2):
            return "position or size differs"
    return None


def _background(slide: Any) -> Any:
    """The slide's solid background colour (the master's when it follows the master), else None."""
    from pptx.enum.dml import MSO_FILL

    def solid(fill: Any) -> Any:
        if fill.type != MSO_FILL.SOLID:
            return None
        try:
            return fill.fore_color.rgb
        except AttributeError:  # a theme colour: compared by its name
            return ("theme", getattr(fill.fore_color, "theme_color", None))

    fill = slide.background.fill
    if fill.type == MSO_FILL.BACKGROUND:
        return solid(slide.slide_layout.slide_master.background.fill)
    return solid(fill)


def _notes(slide: Any) -> str:
    # read without creating a notes page (python-pptx adds one on first access)
    if not slide.has_notes_slide or slide.notes_slide.notes_text_frame is None:
        return ""
    return slide.notes_slide.notes_text_frame.text.strip()


def _bullets(slide: Any) -> list[tuple[str, str | None, str]]:
    """Each non-blank paragraph of the slide as (level, bullet character, text)."""
    from pptx.oxml.ns import qn
    out = []
    for p in slide._element.iter(qn("a:p")):
        text = "".join(t.text or "" for t in p.iter(qn("a:t")))
        if not text.strip():
            continue
        ppr = p.find(qn("a:pPr"))
        char = None
        level = "0"
        if ppr is not None:
            bu = ppr.find(qn("a:buChar"))
            char = None if bu is None else bu.get("char")
            level = ppr.get("lvl", "0")
        out.append((level if char is not None else "", char, text))
    return out


def _slide_difference(s1: Any, s2: Any, ex: _Examine) -> str | None:
    from pptx.enum.shapes import MSO_SHAPE_TYPE
    if ex("background_color") and _background(s1) != _background(s2):
        return "background colour differs"
    if ex("note") and _notes(s1) != _notes(s2):
        return "speaker notes differ"
    if len(s1.shapes) != len(s2.shapes):
        return f"{len(s1.shapes)} vs {len(s2.shapes)} shapes"
    runs_compared = False
    for n, (a, b) in enumerate(zip(s1.shapes, s2.shapes), 1):
        why = _box_difference(a, b, ex)
        if why is None and a.shape_type == MSO_SHAPE_TYPE.TABLE:
            why = (_table_difference(a.table, b.table, ex) if b.shape_type == MSO_SHAPE_TYPE.TABLE
                   else "a table vs another shape")
        if why is None and _has_text(a) and _has_text(b):
            why, compared = _text_difference(a, b, ex)
            runs_compared = runs_compared or compared
        if why:
            return f"shape {n}: {why}"
    if ex("bullets") and runs_compared and _bullets(s1) != _bullets(s2):
        return "bullets differ"
    t1s, t2s = list(_text_shapes(s1.shapes)), list(_text_shapes(s2.shapes))
    if len(t1s) != len(t2s):
        return f"{len(t1s)} vs {len(t2s)} text shapes"
    if ex("alignment"):  # groups included: a grouped text box's alignment counts too
        for a, b in zip(t1s, t2s):
            if ex("text") and a.text.strip() != b.text.strip():
                return "grouped text differs"
            if len(a.text_frame.paragraphs) != len(b.text_frame.paragraphs):
                return "grouped paragraphs differ"
            if any(_align(p) != _align(q) for p, q in zip(a.text_frame.paragraphs, b.text_frame.paragraphs)):
                return "grouped alignment differs"
    return None


def pptx_difference(result: Path, expected: Path, **options: Any) -> str | None:
    """The first difference `compare_pptx_files` finds ("slide 2: shape 1: bold differs"), or None."""
    pptx = library("pptx")
    ex = _Examine(options)
    d1 = opened(pptx.Presentation, _pptx_file(result, "result"), "result", "presentation")
    d2 = opened(pptx.Presentation, _pptx_file(expected, "expected"), "expected", "presentation")
    if ex("number_of_slides") and len(d1.slides) != len(d2.slides):
        return f"{len(d1.slides)} vs {len(d2.slides)} slides"
    for n, (s1, s2) in enumerate(zip(d1.slides, d2.slides), 1):
        why = _slide_difference(s1, s2, ex)
        if why:
            return f"slide {n}: {why}"
    return None


def _pptx_file(path: Any, what: str) -> Path:
    p = existing_file(path, what)
    if p.suffix.lower() != ".pptx":
        raise MetricError(f"compare_pptx_files: the {what} is not a .pptx file: {p.name}")
    return p


def compare_pptx_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when nothing the switches examine differs between the two presentations."""
    refuse("compare_pptx_files", unsupported_options("compare_pptx_files", options))
    if result is None:
        return 0.0
    return 0.0 if pptx_difference(result, expected, **options) else 1.0


METRICS: dict[str, Callable[..., float]] = {"compare_docx_files": compare_docx_files,
                                            "compare_pptx_files": compare_pptx_files}
