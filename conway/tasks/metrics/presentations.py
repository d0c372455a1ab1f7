"""How `compare_pptx_files` walks two presentations: slide by slide, shape by shape, the first difference it finds.

The switches and their defaults are OSWorld's (`SWITCHES`); what each compares is
in `conway.tasks.metrics.documents`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import existing_file, library, opened

SWITCHES = {
    "examine_number_of_slides": True, "examine_shape": True, "examine_text": True, "examine_indent": True,
    "examine_font_name": True, "examine_font_size": True, "examine_font_bold": True, "examine_font_italic": True,
    "examine_color_rgb": True, "examine_font_underline": True, "examine_strike_through": True,
    "examine_alignment": True, "examine_run_count": True, "examine_bullets": True,
    "examine_background_color": True, "examine_note": True, "examine_image_size": False,
    "examine_modify_height": False, "examine_title_bottom_position": False, "examine_table_bottom_position": False,
    "examine_right_position": False, "examine_top_position": False,
    "enable_debug": True, "examine_shape_lenient_height": False,  # read by nothing in OSWorld's checker either
}
"""Every `examine_*` switch (and the two accepted keys that change nothing) with OSWorld's default."""


class Examine:
    """The switches of one comparison, OSWorld's defaults filled in."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.on = {k: options.get(k, default) for k, default in SWITCHES.items()}
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


def _runs(p1: Any, p2: Any) -> tuple[list[Any], list[Any]]:
    """The two paragraphs' runs to compare. Only when BOTH are blank do empty formatting runs not count (OSWorld's
    rule): a cell cleared with its empty run kept, against one with text, still has that run."""
    if not (p1.text or "").strip() and not (p2.text or "").strip():
        return [r for r in p1.runs if (r.text or "").strip()], [r for r in p2.runs if (r.text or "").strip()]
    return list(p1.runs), list(p2.runs)


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


def _run_difference(r1: Any, r2: Any, ex: Examine) -> str | None:
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


def _text_difference(s1: Any, s2: Any, ex: Examine) -> tuple[str | None, bool]:
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
        r1s, r2s = _runs(p1, p2)
        if ex("run_count") and len(r1s) != len(r2s):
            return f"paragraph {i}: {len(r1s)} vs {len(r2s)} runs", compared
        for r1, r2 in zip(r1s, r2s):
            compared = True
            why = _run_difference(r1, r2, ex)
            if why:
                return f"paragraph {i}: {why}", compared
    return None, compared


def _table_difference(t1: Any, t2: Any, ex: Examine) -> str | None:
    if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
        return f"table {len(t1.rows)}x{len(t1.columns)} vs {len(t2.rows)}x{len(t2.columns)}"
    for r in range(len(t1.rows)):
        for c in range(len(t1.columns)):
            p1s, p2s = t1.cell(r, c).text_frame.paragraphs, t2.cell(r, c).text_frame.paragraphs
            if len(p1s) != len(p2s):
                return f"table cell [{r},{c}]: {len(p1s)} vs {len(p2s)} paragraphs"
            for p1, p2 in zip(p1s, p2s):
                r1s, r2s = _runs(p1, p2)
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


def _box_difference(s1: Any, s2: Any, ex: Examine) -> str | None:
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


BOTTOM_EMU, RIGHT_EMU, TOP_EMU = 3600000, 4320000, 1980000
"""The offsets OSWorld's one-task position switches test against (EMU)."""


def _one_task_position(s1: Any, s2: Any, ex: Examine, slide_no: int) -> str | None:
    """OSWorld's position switches, each written for one task: the slide numbers, the title text and the offsets
    are its checker's. A title "Product Comparison" (`title_bottom_position`) or slide 3's table
    (`table_bottom_position`) moved down past 3600000 EMU and below the expected, every other shape in its
    box; slide 2's shapes without text moved right past 4320000 EMU (`right_position`); slide 2's picture moved
    up above 1980000 EMU (`top_position`)."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE
    if ex("title_bottom_position"):
        if _has_text(s1) and _has_text(s2) and s1.text == s2.text:
            if s1.text == "Product Comparison" and (s1.top <= s2.top or s1.top < BOTTOM_EMU):
                return "the title is not at the bottom"
        elif not ex.same_box(s1, s2):
            return "position or size differs"
    if ex("table_bottom_position"):
        if slide_no == 3 and s1.shape_type == MSO_SHAPE_TYPE.TABLE and s2.shape_type == MSO_SHAPE_TYPE.TABLE:
            if s1.top <= s2.top or s1.top < BOTTOM_EMU:
                return "the table is not at the bottom"
        elif not ex.same_box(s1, s2):
            return "position or size differs"
    if ex("right_position") and slide_no == 2 and not _has_text(s1) and not _has_text(s2):
        if s1.left <= s2.left or s1.left < RIGHT_EMU:
            return "the shape is not on the right"
    if ex("top_position") and slide_no == 2 and s1.shape_type == MSO_SHAPE_TYPE.PICTURE \
            and s2.shape_type == MSO_SHAPE_TYPE.PICTURE and (s1.top >= s2.top or s1.top > TOP_EMU):
        return "the picture is not at the top"
    return None


class _UnreadableBackground(Exception):  # a case OSWorld's metric crashes on, not an error of ours
    """A solid background whose colour is not an explicit RGB (a theme, preset, system or HSL colour)."""


def _background(slide: Any) -> Any:
    """The slide's solid background colour (the master's when it follows the master), else None.

    OSWorld's compare_pptx_files (slides.py) reads `.rgb` of that colour on every slide pair, before it looks
    at `examine_background_color`; python-pptx has no `.rgb` for a colour given any other way than as RGB, so
    OSWorld's metric raises there whatever the switch says: `_UnreadableBackground`."""
    from pptx.enum.dml import MSO_FILL

    def solid(fill: Any) -> Any:
        if fill.type != MSO_FILL.SOLID:
            return None
        try:
            return fill.fore_color.rgb
        except AttributeError:
            raise _UnreadableBackground(getattr(fill.fore_color, "theme_color", None)) from None

    fill = slide.background.fill
    if fill.type == MSO_FILL.BACKGROUND:
        return solid(slide.slide_layout.slide_master.background.fill)
    return solid(fill)


def _notes(slide: Any) -> str:
    # read without creating a notes page (python-pptx adds one on first access)
    if not slide.has_notes_slide or slide.notes_slide.notes_text_frame is None:
        return ""
    return slide.notes_slide.notes_text_frame.text.strip()


def _bullets(slide: Any) -> list[tuple[str, str | None, str]] | None:
    """Each non-blank paragraph of the slide as (level, bullet character, text); None when the slide has an empty
    run (`<a:t/>`): OSWorld's bullet reader (compare_pptx_files, slides.py) fails to join its missing text and
    then skips the bullet comparison of that pair of slides."""
    from pptx.oxml.ns import qn
    out = []
    for p in slide._element.iter(qn("a:p")):
        texts = [t.text for t in p.iter(qn("a:t"))]
        if None in texts:
            return None
        text = "".join(texts)
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


def _slide_difference(s1: Any, s2: Any, ex: Examine, slide_no: int = 0) -> str | None:
    from pptx.enum.shapes import MSO_SHAPE_TYPE
    try:
        backgrounds = _background(s1), _background(s2)
    except _UnreadableBackground as exc:  # scored 0 as OSWorld's runner counts its metric raising here
        return f"a background in a colour OSWorld's checker cannot read ({exc}): scored 0 as it is there"
    if ex("background_color") and backgrounds[0] != backgrounds[1]:
        return "background colour differs"
    if ex("note") and _notes(s1) != _notes(s2):
        return "speaker notes differ"
    if len(s1.shapes) != len(s2.shapes):
        return f"{len(s1.shapes)} vs {len(s2.shapes)} shapes"
    runs_compared = False
    for n, (a, b) in enumerate(zip(s1.shapes, s2.shapes), 1):
        why = _one_task_position(a, b, ex, slide_no) or _box_difference(a, b, ex)
        if why is None and a.shape_type == MSO_SHAPE_TYPE.TABLE:
            why = (_table_difference(a.table, b.table, ex) if b.shape_type == MSO_SHAPE_TYPE.TABLE
                   else "a table vs another shape")
        if why is None and _has_text(a) and _has_text(b):
            why, compared = _text_difference(a, b, ex)
            runs_compared = runs_compared or compared
        if why:
            return f"shape {n}: {why}"
    if ex("bullets") and runs_compared and _bullets_differ(s1, s2):
        return "bullets differ"
    return _grouped_difference(s1, s2, ex)


def _bullets_differ(s1: Any, s2: Any) -> bool:
    """The bullets differ, when both slides' bullets can be read as OSWorld reads them (`_bullets`)."""
    b1, b2 = _bullets(s1), _bullets(s2)
    return b1 is not None and b2 is not None and b1 != b2


def _grouped_difference(s1: Any, s2: Any, ex: Examine) -> str | None:
    """What differs among the text shapes of both slides, those inside groups included."""
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
    ex = Examine(options)
    d1 = opened(pptx.Presentation, _pptx_file(result, "result"), "result", "presentation")
    d2 = opened(pptx.Presentation, _pptx_file(expected, "expected"), "expected", "presentation")
    if ex("number_of_slides") and len(d1.slides) != len(d2.slides):
        return f"{len(d1.slides)} vs {len(d2.slides)} slides"
    for n, (s1, s2) in enumerate(zip(d1.slides, d2.slides), 1):
        why = _slide_difference(s1, s2, ex, n)
        if why:
            return f"slide {n}: {why}"
    return None


def _pptx_file(path: Any, what: str) -> Path:
    p = existing_file(path, what)
    if p.suffix.lower() != ".pptx":
        raise MetricError(f"compare_pptx_files: the {what} is not a .pptx file: {p.name}")
    return p
