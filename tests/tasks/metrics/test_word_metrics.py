"""The one-document Writer checks of word.py on documents written here with python-docx, scored as OSWorld's."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.extras import need_extra

docx = need_extra("tasks", "docx")

from docx.enum.text import WD_BREAK, WD_PARAGRAPH_ALIGNMENT  # noqa: E402

from conway.tasks.metrics import METRICS  # noqa: E402
from conway.tasks.metrics.word import (  # noqa: E402
    compare_font_names,
    compare_subscript_contains,
    contains_page_break,
    find_default_font,
    has_page_numbers_in_footers,
    is_first_line_centered,
)


@pytest.fixture
def junk(tmp_path):
    path = tmp_path / "junk.docx"
    path.write_bytes(b"not a zip")
    empty = tmp_path / "empty.docx"
    empty.write_bytes(b"")
    return [None, str(tmp_path / "absent.docx"), str(path), str(empty)]


def saved(doc, path: Path) -> str:
    doc.save(path)
    return str(path)


def test_all_are_registered():
    for fn in (contains_page_break, compare_font_names, compare_subscript_contains, has_page_numbers_in_footers,
               is_first_line_centered, find_default_font):
        assert METRICS[fn.__name__] is fn


def with_breaks(path: Path, count: int) -> str:
    doc = docx.Document()
    for n in range(count + 1):
        run = doc.add_paragraph(f"page {n}").add_run()
        if n < count:
            run.add_break(WD_BREAK.PAGE)
    doc.add_paragraph("line").add_run().add_break(WD_BREAK.LINE)  # a line break is no page break
    return saved(doc, path)


def test_contains_page_break(tmp_path, junk):
    five = with_breaks(tmp_path / "five.docx", 5)
    assert contains_page_break(five, {"page_break_count": 5}) == 1.0
    assert contains_page_break(five, {}) == 1.0
    assert contains_page_break(with_breaks(tmp_path / "four.docx", 4), {"page_break_count": 5}) == 0.0
    assert contains_page_break(with_breaks(tmp_path / "none.docx", 0), {}) == 0.0
    for path in junk:
        assert contains_page_break(path, {"page_break_count": 5}) == 0.0


def fonts(path: Path, *names: str | None) -> str:
    doc = docx.Document()
    paragraph = doc.add_paragraph()
    for name in names:
        paragraph.add_run("word ").font.name = name
    return saved(doc, path)


def test_compare_font_names(tmp_path, junk):
    rules = {"font_name": "Times New Roman"}
    assert compare_font_names(fonts(tmp_path / "all.docx", "Times New Roman", "Times New Roman"), rules) == 1.0
    assert compare_font_names(fonts(tmp_path / "one.docx", "Times New Roman", "Arial"), rules) == 0.0
    assert compare_font_names(fonts(tmp_path / "unset.docx", "Times New Roman", None), rules) == 0.0
    assert compare_font_names(saved(docx.Document(), tmp_path / "empty_body.docx"), rules) == 1.0  # no run fails
    for path in junk:
        assert compare_font_names(path, rules) == 0.0


def subscripted(path: Path, flags: list[bool | None]) -> str:
    doc = docx.Document()
    paragraph = doc.add_paragraph()
    for flag in flags:
        paragraph.add_run("H2O").font.subscript = flag
    return saved(doc, path)


def test_compare_subscript_contains(tmp_path, junk):
    gold = subscripted(tmp_path / "gold.docx", [None, True])
    assert compare_subscript_contains(subscripted(tmp_path / "same.docx", [None, True]), gold) == 1.0
    assert compare_subscript_contains(subscripted(tmp_path / "plain.docx", [None, None]), gold) == 0.0
    assert compare_subscript_contains(subscripted(tmp_path / "other.docx", [True, None]), gold) == 0.0  # paired by place
    for path in junk:
        assert compare_subscript_contains(path, gold) == 0.0


def footed(path: Path, *footers: str) -> str:
    doc = docx.Document()
    doc.sections[0].footer.paragraphs[0].text = footers[0]
    for text in footers[1:]:
        section = doc.add_section()
        section.footer.is_linked_to_previous = False
        section.footer.paragraphs[0].text = text
    return saved(doc, path)


def test_has_page_numbers_in_footers(tmp_path, junk):
    assert has_page_numbers_in_footers(footed(tmp_path / "one.docx", "Page 1")) == 1.0
    assert has_page_numbers_in_footers(footed(tmp_path / "two.docx", "Page 1", "2")) == 1.0
    assert has_page_numbers_in_footers(footed(tmp_path / "half.docx", "Page 1", "Page")) == 0.0
    assert has_page_numbers_in_footers(footed(tmp_path / "blank.docx", "")) == 0.0
    for path in junk:
        assert has_page_numbers_in_footers(path) == 0.0


def test_is_first_line_centered(tmp_path, junk):
    doc = docx.Document()
    doc.add_paragraph("Title").alignment = WD_PARAGRAPH_ALIGNMENT.CENTER
    doc.add_paragraph("Body")
    assert is_first_line_centered(saved(doc, tmp_path / "centred.docx")) == 1.0
    doc.paragraphs[0].alignment = WD_PARAGRAPH_ALIGNMENT.RIGHT
    assert is_first_line_centered(saved(doc, tmp_path / "right.docx")) == 0.0
    assert is_first_line_centered(saved(docx.Document(), tmp_path / "nothing.docx")) == 0.0
    for path in junk:
        assert is_first_line_centered(path) == 0.0


XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="Standard" oor:op="fuse"><value>Nope</value></prop></item>
<item oor:path="/org.openoffice.Office.Writer/DefaultFont"><prop oor:name="Heading" oor:op="fuse"><value>Arial</value></prop></item>
{font}
</oor:items>
"""


def test_find_default_font(tmp_path):
    rules = {"font_name": "Times New Roman"}
    setting = ('<item oor:path="/org.openoffice.Office.Writer/DefaultFont"><prop oor:name="Standard" oor:op="fuse">'
               "<value>{}</value></prop></item>")
    good, other, unset, broken = (tmp_path / f"{n}.xcu" for n in ("good", "other", "unset", "broken"))
    good.write_text(XCU.format(font=setting.format("Times New Roman")))
    other.write_text(XCU.format(font=setting.format("Liberation Serif")))
    unset.write_text(XCU.format(font=""))
    broken.write_text("<oor:items")
    assert find_default_font(str(good), rules) == 1.0
    assert find_default_font(str(other), rules) == 0.0
    assert find_default_font(str(unset), rules) == 0.0
    assert find_default_font(str(broken), rules) == 0.0
    assert find_default_font(None, rules) == 0.0
    assert find_default_font(str(tmp_path / "absent.xcu"), rules) == 0.0


def test_evaluate_strike_through_last_paragraph(tmp_path, junk):
    from conway.tasks.metrics.word import evaluate_strike_through_last_paragraph as struck

    def doc_with(path: Path, last_runs: list[tuple[str, bool | None]], first: str = "Outline") -> str:
        doc = docx.Document()
        doc.add_paragraph(first)
        paragraph = doc.add_paragraph()
        for text, strike in last_runs:
            paragraph.add_run(text).font.strike = strike
        return saved(doc, path)

    gold = doc_with(tmp_path / "gold.docx", [("old ", True), ("text", True)])
    assert struck(doc_with(tmp_path / "same.docx", [("old ", True), ("text", True)]), gold) == 1.0
    assert struck(doc_with(tmp_path / "half.docx", [("old ", True), ("text", None)]), gold) == 0.0
    assert struck(doc_with(tmp_path / "text.docx", [("old ", True), ("test", True)]), gold) == 0.0
    assert struck(doc_with(tmp_path / "moved.docx", [("old ", True), ("text", True)], "Outlines"), gold) == 0.0
    for path in junk:
        assert struck(path, gold) == 0.0


def test_check_italic_font_size_14(tmp_path, junk):
    from docx.shared import Pt

    from conway.tasks.metrics.word import check_italic_font_size_14 as italic14

    def doc_with(path: Path, runs: list[tuple[bool, int | None]]) -> str:
        doc = docx.Document()
        paragraph = doc.add_paragraph()
        for italic, size in runs:
            run = paragraph.add_run("word ")
            run.italic = italic
            run.font.size = Pt(size) if size else None
        return saved(doc, path)

    gold = doc_with(tmp_path / "gold.docx", [(False, None), (True, 14)])
    assert italic14(doc_with(tmp_path / "same.docx", [(False, 11), (True, 14)]), gold) == 1.0
    assert italic14(doc_with(tmp_path / "twelve.docx", [(False, None), (True, 12)]), gold) == 0.0
    assert italic14(doc_with(tmp_path / "unsized.docx", [(False, None), (True, None)]), gold) == 0.0
    assert italic14(doc_with(tmp_path / "plain.docx", [(False, None), (False, 9)]), gold) == 1.0  # no italic run
    for path in junk:
        assert italic14(path, gold) == 0.0


def test_check_tabstops(tmp_path, junk):
    from docx.enum.text import WD_TAB_ALIGNMENT
    from docx.shared import Inches

    from conway.tasks.metrics.word import check_tabstops

    def doc_with(path: Path, stops: list[tuple[float, object]], lines=("Name one two\t1", "Name three four\t2")) -> str:
        doc = docx.Document()
        for line in lines:
            paragraph = doc.add_paragraph(line)
            for inches, alignment in stops:
                paragraph.paragraph_format.tab_stops.add_tab_stop(Inches(inches), alignment)
        doc.add_paragraph("")  # blank paragraphs are left out
        return saved(doc, path)

    right = WD_TAB_ALIGNMENT.RIGHT
    gold = doc_with(tmp_path / "gold.docx", [(6.0, right)])
    assert check_tabstops(doc_with(tmp_path / "same.docx", [(6.0, right)]), gold) == 1.0
    # the default page is 8.5in wide with 1.25in margins: 6in of text; half an inch off is 1/12 lost
    assert check_tabstops(doc_with(tmp_path / "near.docx", [(5.5, right)]), gold) == pytest.approx(1 - 0.5 / 6)
    assert check_tabstops(doc_with(tmp_path / "left.docx", [(6.0, WD_TAB_ALIGNMENT.LEFT)]), gold) == 0.0
    assert check_tabstops(doc_with(tmp_path / "none.docx", []), gold) == 0.0
    assert check_tabstops(doc_with(tmp_path / "fewer.docx", [(6.0, right)], lines=("Name one two\t1",)), gold) == 0.0
    same = doc_with(tmp_path / "same2.docx", [(6.0, right)])
    assert check_tabstops(same, gold, word_number_split_by_tabstop=3, index=0) == 1.0
    assert check_tabstops(same, gold, word_number_split_by_tabstop=2, index=0) == 0.0
    assert check_tabstops(same, gold, word_number_split_by_tabstop=1, index=5) == 0.0  # no sixth part: 0
    empty = doc_with(tmp_path / "empty.docx", [], lines=())
    assert check_tabstops(empty, empty) == 0.0  # no paragraph: OSWorld divides by zero
    for path in junk:
        assert check_tabstops(path, gold) == 0.0
