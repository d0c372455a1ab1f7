"""compare_docx_files and compare_pptx_files on real documents written here with python-docx and python-pptx.

Each option passes and fails: for a pptx switch, one difference fails the comparison
while the switch is on and passes once it is off.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.extras import need_extra

docx = need_extra("tasks", "docx")
pptx = need_extra("tasks", "pptx")
pytest.importorskip("rapidfuzz")

from PIL import Image  # noqa: E402
from pptx.dml.color import RGBColor  # noqa: E402
from pptx.enum.text import PP_ALIGN  # noqa: E402
from pptx.oxml.ns import qn  # noqa: E402
from pptx.util import Emu, Pt  # noqa: E402

from conway.tasks.metrics.documents import (  # noqa: E402
    METRICS,
    compare_docx_files,
    compare_docx_images,
    compare_docx_tables,
    compare_line_spacing,
    compare_pptx_files,
    unsupported_options,
)
from conway.tasks.metrics.errors import MetricError, UnsupportedOption  # noqa: E402
from conway.tasks.metrics.presentations import pptx_difference  # noqa: E402


def test_the_module_exposes_its_metrics():
    assert METRICS == {"compare_docx_files": compare_docx_files, "compare_pptx_files": compare_pptx_files,
                       "compare_docx_tables": compare_docx_tables, "compare_line_spacing": compare_line_spacing,
                       "compare_docx_images": compare_docx_images,
                       "check_highlighted_words": METRICS["check_highlighted_words"]}


# ---- compare_docx_files --------------------------------------------------------------------------------------

def word(path: Path, *paragraphs: str) -> Path:
    doc = docx.Document()
    for text in paragraphs:
        doc.add_paragraph(text)
    doc.save(path)
    return path


@pytest.fixture
def docs(tmp_path):
    n = iter(range(1000))
    return lambda *paragraphs: word(tmp_path / f"d{next(n)}.docx", *paragraphs)


def test_docx_default_compares_the_text_with_blanks_collapsed(docs):
    gold = docs("Hello world.", "Second line.")
    assert compare_docx_files(docs("Hello   world.", "", "Second line."), gold) == 1.0
    assert compare_docx_files(docs("Hello world.", "Second line!"), gold) == 0.0


def test_docx_ignore_blanks_false_compares_paragraph_by_paragraph(docs):
    gold = docs("Hello world.", "Second line.")
    assert compare_docx_files(docs("Hello world.", "Second line."), gold, ignore_blanks=False) == 1.0
    assert compare_docx_files(docs("Hello  world.", "Second line."), gold, ignore_blanks=False) == 0.0
    assert compare_docx_files(docs("Hello world.", "", "Second line."), gold, ignore_blanks=False) == 0.0


def test_docx_delete_empty_lines_drops_blank_paragraphs(docs):
    gold = docs("Hello world.", "Second line.")
    spaced = docs("Hello world.", "", "  ", "Second line.")
    assert compare_docx_files(spaced, gold, ignore_blanks=False, delete_empty_lines=True) == 1.0
    assert compare_docx_files(docs("Hello world.", "", "Third."), gold, ignore_blanks=False,
                              delete_empty_lines=True) == 0.0


@pytest.mark.parametrize("ignore_blanks", [True, False])
def test_docx_ignore_case(docs, ignore_blanks):
    gold = docs("Hello World.")
    shout = docs("HELLO WORLD.")
    assert compare_docx_files(shout, gold, ignore_blanks=ignore_blanks) == 0.0
    assert compare_docx_files(shout, gold, ignore_blanks=ignore_blanks, ignore_case=True) == 1.0


def test_docx_ignore_order(docs):
    gold = docs("alpha", "beta", "gamma")
    shuffled = docs("gamma", "alpha", "beta")
    assert compare_docx_files(shuffled, gold) == 0.0
    assert compare_docx_files(shuffled, gold, ignore_order=True) == 1.0
    assert compare_docx_files(docs("gamma", "alpha", "delta"), gold, ignore_order=True) == 0.0


def test_docx_content_only_scores_the_similarity(docs):
    gold = docs("The quick brown fox jumps over the lazy dog.")
    assert compare_docx_files(docs("The quick brown fox  jumps over the lazy dog."), gold, content_only=True) == 1.0
    near = compare_docx_files(docs("The quick brown fox jumped over a lazy dog."), gold, content_only=True)
    far = compare_docx_files(docs("Completely different words here."), gold, content_only=True)
    assert 0.85 < near < 1.0
    assert far < 0.5


def test_docx_fuzzy_match(docs):
    gold = docs("The quick brown fox.", "Jumps over the dog.")
    close = docs("The quick brown fax.", "Jumps over the dog.")
    assert compare_docx_files(close, gold) == 0.0
    whole = compare_docx_files(close, gold, fuzzy_match=True)
    per_paragraph = compare_docx_files(close, gold, fuzzy_match=True, ignore_blanks=False)
    assert 0.9 < whole < 1.0 and 0.9 < per_paragraph < 1.0
    assert compare_docx_files(docs("The quick brown fox."), gold, fuzzy_match=True, ignore_blanks=False) == 0.0


def test_docx_reads_only_the_body_paragraphs(docs, tmp_path):
    path = tmp_path / "table.docx"
    doc = docx.Document()
    doc.add_paragraph("Body.")
    doc.add_table(rows=1, cols=1).cell(0, 0).text = "in a table"
    doc.save(path)
    assert compare_docx_files(path, docs("Body.")) == 1.0


def test_docx_bad_inputs(docs, tmp_path):
    gold = docs("x")
    assert compare_docx_files(None, gold) == 0.0
    corrupt = tmp_path / "corrupt.docx"
    corrupt.write_bytes(b"this is not a zip archive")
    with pytest.raises(MetricError, match="result is not a readable Word document: corrupt.docx"):
        compare_docx_files(corrupt, gold)
    (tmp_path / "folder.docx").mkdir()
    with pytest.raises(MetricError, match="not a regular file"):
        compare_docx_files(tmp_path / "folder.docx", gold)
    with pytest.raises(MetricError, match="does not exist"):
        compare_docx_files(gold, tmp_path / "absent.docx")
    odt = tmp_path / "notes.odt"
    odt.write_bytes(b"PK")
    with pytest.raises(MetricError, match="result is not a readable OpenDocument text: notes.odt"):
        compare_docx_files(odt, odt)
    txt = tmp_path / "notes.txt"
    txt.write_text("x")
    assert compare_docx_files(txt, gold) == 0.0  # names OSWorld's checker does not read: 0, unopened
    assert compare_docx_files(odt, gold) == 0.0


def test_docx_unsupported_options_are_named_and_refused(docs):
    gold = docs("x")
    assert unsupported_options("compare_docx_files", {"ignore_blanks": False, "_note": "why"}) == []
    assert unsupported_options("compare_docx_files", {"compare_images": True, "ignore_case": "yes"}) == [
        "compare_images", "ignore_case='yes' (not true or false)"]
    with pytest.raises(UnsupportedOption, match="compare_docx_files: not supported here: compare_images"):
        compare_docx_files(gold, gold, compare_images=True)


# ---- compare_pptx_files --------------------------------------------------------------------------------------

BOX = (Emu(914400), Emu(914400), Emu(3657600), Emu(914400))


def deck(path: Path, edit=None, slides: int = 1) -> Path:
    """A deck of `slides` blank slides, each with one text box of two runs; `edit(prs)` changes it before saving."""
    prs = pptx.Presentation()
    for _ in range(slides):
        slide = prs.slides.add_slide(prs.slide_layouts[6])
        frame = slide.shapes.add_textbox(*BOX).text_frame
        para = frame.paragraphs[0]
        for text in ("Quarterly ", "results"):
            run = para.add_run()
            run.text = text
        frame.add_paragraph().text = "Second point"
    if edit:
        edit(prs)
    prs.save(path)
    return path


def box(prs, slide=0):
    return prs.slides[slide].shapes[0]


def first_run(prs):
    return box(prs).text_frame.paragraphs[0].runs[0]


@pytest.fixture
def decks(tmp_path):
    n = iter(range(1000))
    return lambda edit=None, **kw: deck(tmp_path / f"p{next(n)}.pptx", edit, **kw)


def test_identical_decks_pass(decks):
    assert compare_pptx_files(decks(), decks()) == 1.0
    assert pptx_difference(decks(), decks()) is None


def font(**attrs):
    def edit(prs):
        f = first_run(prs).font
        for k, v in attrs.items():
            if k == "rgb":
                f.color.rgb = RGBColor.from_string(v)
            else:
                setattr(f, k, v)
    return edit


def strike(prs):
    first_run(prs).font._rPr.set("strike", "sngStrike")


def moved(dx):
    def edit(prs):
        box(prs).left = box(prs).left + dx
    return edit


def centred(prs):
    box(prs).text_frame.paragraphs[0].alignment = PP_ALIGN.CENTER


def indented(level):
    def edit(prs):
        box(prs).text_frame.paragraphs[1].level = level
    return edit


def retyped(prs):
    run = first_run(prs)
    run.text = "Yearly "


def split_run(prs):  # same text, three runs instead of two
    para = box(prs).text_frame.paragraphs[0]
    para.runs[1].text = "resu"
    para.add_run().text = "lts"


def bulleted(prs):
    ppr = box(prs).text_frame.paragraphs[0]._p.get_or_add_pPr()
    bullet = ppr.makeelement(qn("a:buChar"), {"char": "•"})
    ppr.append(bullet)


def background(prs):
    fill = prs.slides[0].background.fill
    fill.solid()
    fill.fore_color.rgb = RGBColor(0x11, 0x22, 0x33)


def noted(prs):
    prs.slides[0].notes_slide.notes_text_frame.text = "Say hello"


SWITCHES = [
    # (switch, edit of the result that it catches, the reason pptx_difference gives)
    ("examine_shape", moved(Emu(200000)), "position or size differs"),
    ("examine_text", retyped, "text"),
    ("examine_indent", indented(3), "level"),
    ("examine_font_name", font(name="Courier New"), "font name"),
    ("examine_font_size", font(size=Pt(31)), "font size"),
    ("examine_font_bold", font(bold=True), "bold differs"),
    ("examine_font_italic", font(italic=True), "italic differs"),
    ("examine_font_underline", font(underline=True), "underline differs"),
    ("examine_strike_through", strike, "strike-through differs"),
    ("examine_alignment", centred, "alignment differs"),
    ("examine_run_count", split_run, "runs"),
    ("examine_bullets", bulleted, "bullets differ"),
    ("examine_background_color", background, "background colour differs"),
    ("examine_note", noted, "speaker notes differ"),
]


@pytest.mark.parametrize("switch,edit,reason", SWITCHES, ids=[s[0] for s in SWITCHES])
def test_each_switch_catches_its_difference_and_turned_off_lets_it_pass(decks, switch, edit, reason):
    gold = decks()
    changed = decks(edit)
    assert compare_pptx_files(changed, gold) == 0.0
    assert reason in pptx_difference(changed, gold)
    off = {switch: False}
    if switch == "examine_text":  # the bullet check reads each paragraph's text as well (as OSWorld's does)
        off["examine_bullets"] = False
    assert compare_pptx_files(changed, gold, **off) == 1.0


def test_the_bullet_check_also_catches_changed_text(decks):
    assert "bullets differ" in pptx_difference(decks(retyped), decks(), examine_text=False)


def test_an_empty_run_on_the_slide_skips_the_bullet_check_as_in_osworld(decks):
    def empty_run(prs):  # python-pptx writes an empty run as <a:t/>, whose text OSWorld's bullet reader cannot join
        box(prs).text_frame.paragraphs[1].add_run().text = ""

    def bulleted_with_empty_run(prs):
        bulleted(prs)
        empty_run(prs)
    assert pptx_difference(decks(bulleted), decks()) == "slide 1: bullets differ"
    assert pptx_difference(decks(bulleted_with_empty_run), decks(empty_run)) is None
    assert compare_pptx_files(decks(bulleted_with_empty_run), decks(empty_run)) == 1.0


def test_a_background_in_a_theme_colour_scores_zero_as_osworld_crashes_on_it(decks):
    # OSWorld reads the background's .rgb before it looks at the switch; a theme colour has none and it raises
    from pptx.enum.dml import MSO_THEME_COLOR

    def themed(prs):
        fill = prs.slides[0].background.fill
        fill.solid()
        fill.fore_color.theme_color = MSO_THEME_COLOR.ACCENT_1
    same = decks(themed), decks(themed)
    assert compare_pptx_files(*same) == 0.0
    assert compare_pptx_files(*same, examine_background_color=False) == 0.0
    assert compare_pptx_files(decks(themed), decks(), examine_background_color=False) == 0.0
    assert "cannot read" in pptx_difference(*same)
    assert compare_pptx_files(decks(background), decks(background)) == 1.0  # an RGB colour reads


def test_color_rgb_compares_explicit_colours(decks):
    red, blue = font(rgb="FF0000"), font(rgb="0000FF")
    assert compare_pptx_files(decks(red), decks(red)) == 1.0
    assert compare_pptx_files(decks(red), decks(blue)) == 0.0
    assert compare_pptx_files(decks(red), decks(blue), examine_color_rgb=False) == 1.0
    assert compare_pptx_files(decks(red), decks()) == 1.0  # an inherited colour is not compared


def test_number_of_slides(decks):
    assert compare_pptx_files(decks(slides=2), decks()) == 0.0
    assert compare_pptx_files(decks(slides=2), decks(), examine_number_of_slides=False) == 1.0


def test_levels_zero_and_one_count_as_one(decks):
    assert compare_pptx_files(decks(indented(1)), decks()) == 1.0


def test_unset_alignment_counts_as_left(decks):
    def left(prs):
        box(prs).text_frame.paragraphs[0].alignment = PP_ALIGN.LEFT
    assert compare_pptx_files(decks(left), decks()) == 1.0


def test_unset_and_false_bold_are_the_same(decks):
    assert compare_pptx_files(decks(font(bold=False)), decks()) == 1.0


def test_approximately_tolerance(decks):
    nudged = decks(moved(Emu(20000)))  # about 2% of the box's left edge
    assert compare_pptx_files(nudged, decks()) == 0.0
    assert compare_pptx_files(nudged, decks(), approximately_tolerance=0.05) == 1.0


def test_the_number_of_shapes_always_counts(decks):
    def extra(prs):
        prs.slides[0].shapes.add_textbox(*BOX).text = "more"
    assert compare_pptx_files(decks(extra), decks(), examine_shape=False, examine_text=False) == 0.0


def test_text_inside_a_group_counts(decks):
    def grouped(text):
        def edit(prs):
            group = prs.slides[0].shapes.add_group_shape()
            group.shapes.add_textbox(*BOX).text = text
        return edit
    assert compare_pptx_files(decks(grouped("inner")), decks(grouped("inner"))) == 1.0
    assert compare_pptx_files(decks(grouped("inner")), decks(grouped("other"))) == 0.0


def picture(tmp_path):
    png = tmp_path / "dot.png"
    Image.new("RGB", (8, 8), (200, 10, 10)).save(png)

    def add(width=Emu(914400), height=Emu(914400), left=Emu(4572000)):
        def edit(prs):
            prs.slides[0].shapes.add_picture(str(png), left, Emu(2743200), width, height)
        return edit
    return add


def test_pictures_are_not_placed_by_examine_shape_but_by_image_size(decks, tmp_path):
    pic = picture(tmp_path)
    big, gold = decks(pic(width=Emu(1828800))), decks(pic())
    assert compare_pptx_files(big, gold) == 1.0  # a shape without text is not measured by default
    assert compare_pptx_files(big, gold, examine_image_size=True) == 0.0
    assert compare_pptx_files(decks(pic(left=Emu(100))), gold, examine_image_size=True) == 1.0  # size only


def test_modify_height_measures_shapes_without_text_by_height(decks, tmp_path):
    pic = picture(tmp_path)
    gold = decks(pic())
    assert compare_pptx_files(decks(pic(height=Emu(1828800))), gold, examine_modify_height=True) == 0.0
    assert compare_pptx_files(decks(pic(width=Emu(1828800))), gold, examine_modify_height=True) == 1.0
    assert compare_pptx_files(decks(moved(Emu(200000))), decks(), examine_modify_height=True,
                              examine_shape=False) == 0.0  # a text shape: its whole box


def table_deck(rows=2, bold_cell=False):
    def edit(prs):
        tbl = prs.slides[0].shapes.add_table(rows, 2, Emu(0), Emu(3000000), Emu(4000000), Emu(800000)).table
        for r in range(rows):
            for c in range(2):
                tbl.cell(r, c).text = f"{r}{c}"
        if bold_cell:
            tbl.cell(0, 0).text_frame.paragraphs[0].runs[0].font.bold = True
    return edit


def test_tables_compare_shape_and_text_style(decks):
    gold = decks(table_deck())
    assert compare_pptx_files(decks(table_deck()), gold) == 1.0
    assert compare_pptx_files(decks(table_deck(rows=3)), gold) == 0.0
    assert "table cell [0,0]" in pptx_difference(decks(table_deck(bold_cell=True)), gold)


def test_a_table_cell_cleared_with_its_empty_run_kept_counts_that_run_as_osworld_does(decks):
    """OSWorld drops empty runs only when both paragraphs are blank, and never compares a cell's text: a cell
    whose text was deleted but whose run stayed matches a filled cell of the same style (OSWorld scores 1)."""
    def cleared(prs):
        table_deck()(prs)
        tbl = prs.slides[0].shapes[-1].table
        tbl.cell(0, 0).text_frame.paragraphs[0].runs[0].text = ""  # the run stays, empty
    assert compare_pptx_files(decks(cleared), decks(table_deck())) == 1.0
    assert compare_pptx_files(decks(cleared), decks(cleared)) == 1.0


def test_pptx_bad_inputs(decks, tmp_path):
    gold = decks()
    assert compare_pptx_files(None, gold) == 0.0
    corrupt = tmp_path / "corrupt.pptx"
    corrupt.write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(MetricError, match="result is not a readable presentation: corrupt.pptx"):
        compare_pptx_files(corrupt, gold)
    with pytest.raises(MetricError, match="expected is not a readable presentation"):
        compare_pptx_files(gold, corrupt)
    (tmp_path / "folder.pptx").mkdir()
    with pytest.raises(MetricError, match="not a regular file"):
        compare_pptx_files(tmp_path / "folder.pptx", gold)
    with pytest.raises(MetricError, match="does not exist"):
        compare_pptx_files(tmp_path / "absent.pptx", gold)
    with pytest.raises(MetricError, match="not a .pptx file"):
        compare_pptx_files(word(tmp_path / "w.docx", "x"), gold)


def test_pptx_unsupported_options_are_named_and_refused(decks):
    accepted = {"examine_shape": False, "examine_shape_lenient_height": True, "enable_debug": False,
                "examine_top_position": False, "approximately_tolerance": 0.01, "_note": "a comment"}
    assert unsupported_options("compare_pptx_files", accepted) == []
    assert unsupported_options("compare_pptx_files", {"examine_shape_for_shift_size": True, "examine_shape": "false",
                                                      "approximately_tolerance": -1, "examine_table": True}) == [
        "examine_shape_for_shift_size=True", "examine_shape='false' (not true or false)",
        "approximately_tolerance=-1 (not a non-negative number)", "examine_table"]
    with pytest.raises(UnsupportedOption, match="not supported here: examine_shape_for_shift_size=True"):
        compare_pptx_files(decks(), decks(), examine_shape_for_shift_size=True)


def positioned(slides, *, title=None, title_top=0, table_top=None, pic_top=None, pic_left=None, tmp=None):
    """Slide 1 (of `slides`) with a title box, slide 3 with a table, slide 2 with a picture, at the given tops."""
    def edit(prs):
        if title is not None:
            prs.slides[0].shapes[0].text_frame.text = title
            prs.slides[0].shapes[0].top = Emu(title_top)
        if table_top is not None:
            prs.slides[2].shapes.add_table(2, 2, Emu(0), Emu(table_top), Emu(4000000), Emu(800000))
        if pic_top is not None:
            prs.slides[1].shapes.add_picture(str(tmp), Emu(pic_left or 0), Emu(pic_top), Emu(914400), Emu(914400))
    return edit


def test_the_one_task_position_switches(decks, tmp_path):
    picture(tmp_path)  # writes the image add_picture places
    png = tmp_path / "dot.png"
    # the title "Product Comparison" moved below 3600000 EMU and below where it was
    gold = decks(positioned(3, title="Product Comparison", title_top=1000), slides=3)
    moved_down = decks(positioned(3, title="Product Comparison", title_top=4000000), slides=3)
    assert compare_pptx_files(moved_down, gold, examine_shape=False, examine_title_bottom_position=True) == 1.0
    assert compare_pptx_files(gold, gold, examine_shape=False, examine_title_bottom_position=True) == 0.0
    # slide 3's table moved to the bottom
    gold = decks(positioned(3, table_top=1000), slides=3)
    assert compare_pptx_files(decks(positioned(3, table_top=5000000), slides=3), gold, examine_shape=False,
                              examine_table_bottom_position=True) == 1.0
    assert compare_pptx_files(gold, gold, examine_shape=False, examine_table_bottom_position=True) == 0.0
    # slide 2's picture moved to the top, or (a shape without text) to the right
    gold = decks(positioned(3, pic_top=3000000, tmp=png), slides=3)
    assert compare_pptx_files(decks(positioned(3, pic_top=100, tmp=png), slides=3), gold, examine_shape=False,
                              examine_top_position=True) == 1.0
    assert compare_pptx_files(gold, gold, examine_shape=False, examine_top_position=True) == 0.0
    right = decks(positioned(3, pic_top=3000000, pic_left=5000000, tmp=png), slides=3)
    assert compare_pptx_files(right, gold, examine_shape=False, examine_right_position=True) == 1.0
    assert compare_pptx_files(gold, gold, examine_shape=False, examine_right_position=True) == 0.0
    with pytest.raises(KeyError):
        unsupported_options("compare_table", {})


# ---- compare_docx_tables -------------------------------------------------------------------------------------

def tables(path: Path, *grids: list[list[str]]) -> Path:
    doc = docx.Document()
    doc.add_paragraph("Prices")
    for grid in grids:
        table = doc.add_table(rows=len(grid), cols=len(grid[0]) if grid else 0)
        for i, row in enumerate(grid):
            for j, text in enumerate(row):
                table.cell(i, j).text = text
    doc.save(path)
    return path


PRICES = [["item", "price"], ["tea", "3"], ["cake", "5"]]


def test_docx_tables_equal_and_blanks_around_cells_score_one(tmp_path):
    gold = tables(tmp_path / "gold.docx", PRICES, [["a"]])
    assert compare_docx_tables(tables(tmp_path / "same.docx", PRICES, [["a"]]), gold) == 1.0
    padded = [["item ", " price"], ["tea\t", "3"], ["cake", " 5 "]]
    assert compare_docx_tables(tables(tmp_path / "padded.docx", padded, [["a"]]), gold) == 1.0


def test_docx_tables_one_cell_row_or_table_changed_scores_zero(tmp_path):
    gold = tables(tmp_path / "gold.docx", PRICES)
    assert compare_docx_tables(tables(tmp_path / "cell.docx", [["item", "price"], ["tea", "4"], ["cake", "5"]]),
                               gold) == 0.0
    assert compare_docx_tables(tables(tmp_path / "row.docx", PRICES[:2]), gold) == 0.0
    assert compare_docx_tables(tables(tmp_path / "case.docx", [["Item", "price"], *PRICES[1:]]), gold) == 0.0
    assert compare_docx_tables(tables(tmp_path / "two.docx", PRICES, PRICES), gold) == 0.0
    assert compare_docx_tables(tables(tmp_path / "none.docx"), gold) == 0.0


def test_docx_tables_without_tables_on_both_sides_score_one(tmp_path):
    assert compare_docx_tables(tables(tmp_path / "a.docx"), tables(tmp_path / "b.docx")) == 1.0


def test_docx_tables_missing_empty_or_malformed_score_zero(tmp_path):
    gold = tables(tmp_path / "gold.docx", PRICES)
    junk = tmp_path / "junk.docx"
    junk.write_bytes(b"not a zip")
    empty = tmp_path / "empty.docx"
    empty.write_bytes(b"")
    assert compare_docx_tables(None, gold) == 0.0
    assert compare_docx_tables(tmp_path / "absent.docx", gold) == 0.0
    assert compare_docx_tables(junk, gold) == 0.0
    assert compare_docx_tables(empty, gold) == 0.0
    assert compare_docx_tables(gold, junk) == 0.0


def test_docx_tables_take_no_options(tmp_path):
    gold = tables(tmp_path / "gold.docx", PRICES)
    assert unsupported_options("compare_docx_tables", {"ignore_case": True}) == ["ignore_case"]
    with pytest.raises(UnsupportedOption):
        compare_docx_tables(gold, gold, ignore_case=True)


# ---- compare_line_spacing ------------------------------------------------------------------------------------

def spaced(path: Path, *paragraphs: tuple[str, float | None]) -> Path:
    doc = docx.Document()
    for text, spacing in paragraphs:
        doc.add_paragraph(text).paragraph_format.line_spacing = spacing
    doc.save(path)
    return path


def test_line_spacing_equal_scores_one_and_one_paragraph_changed_zero(tmp_path):
    gold = spaced(tmp_path / "gold.docx", ("Title", None), ("Body text", 2.0), ("Quote", 1.15))
    assert compare_line_spacing(spaced(tmp_path / "same.docx", ("Title", None), ("Body text", 2.0),
                                       ("Quote", 1.15)), gold) == 1.0
    assert compare_line_spacing(spaced(tmp_path / "one.docx", ("Title", None), ("Body text", 1.5),
                                       ("Quote", 1.15)), gold) == 0.0
    assert compare_line_spacing(spaced(tmp_path / "unset.docx", ("Title", None), ("Body text", None),
                                       ("Quote", 1.15)), gold) == 0.0


def test_line_spacing_needs_the_same_text(tmp_path):
    gold = spaced(tmp_path / "gold.docx", ("Title", 2.0))
    assert compare_line_spacing(spaced(tmp_path / "text.docx", ("Tittle", 2.0)), gold) == 0.0
    # blanks are ignored by compare_docx_files' defaults, but the paragraphs must still be as many
    assert compare_line_spacing(spaced(tmp_path / "more.docx", ("Title", 2.0), ("", 2.0)), gold) == 0.0


def test_line_spacing_missing_empty_or_malformed_scores_zero(tmp_path):
    gold = spaced(tmp_path / "gold.docx", ("Title", 2.0))
    junk = tmp_path / "junk.docx"
    junk.write_bytes(b"not a zip")
    empty = tmp_path / "empty.docx"
    empty.write_bytes(b"")
    for result in (None, tmp_path / "absent.docx", junk, empty):
        assert compare_line_spacing(str(result) if result else result, str(gold)) == 0.0
    with pytest.raises(UnsupportedOption):
        compare_line_spacing(str(gold), str(gold), ignore_blanks=False)


# ---- compare_docx_images -------------------------------------------------------------------------------------

def illustrated(path: Path, tmp_path: Path, *colours: tuple[int, int, int]) -> Path:
    doc = docx.Document()
    doc.add_paragraph("Figures")
    for n, colour in enumerate(colours):
        picture = tmp_path / f"{path.stem}-{n}.png"
        Image.new("RGB", (8, 6), colour).save(picture)
        doc.add_picture(str(picture))
    doc.save(path)
    return path


def test_docx_images_equal_score_one_and_one_changed_zero(tmp_path):
    red, blue = (255, 0, 0), (0, 0, 255)
    gold = illustrated(tmp_path / "gold.docx", tmp_path, red, blue)
    assert compare_docx_images(illustrated(tmp_path / "same.docx", tmp_path, red, blue), gold) == 1.0
    assert compare_docx_images(illustrated(tmp_path / "one.docx", tmp_path, red, (0, 0, 254)), gold) == 0.0
    assert compare_docx_images(illustrated(tmp_path / "fewer.docx", tmp_path, red), gold) == 0.0
    assert compare_docx_images(illustrated(tmp_path / "none.docx", tmp_path),
                               illustrated(tmp_path / "none2.docx", tmp_path)) == 1.0


def test_docx_images_missing_empty_or_malformed_score_zero(tmp_path):
    gold = illustrated(tmp_path / "gold.docx", tmp_path, (255, 0, 0))
    junk = tmp_path / "junk.docx"
    junk.write_bytes(b"not a zip")
    empty = tmp_path / "empty.docx"
    empty.write_bytes(b"")
    for result in (None, tmp_path / "absent.docx", junk, empty):
        assert compare_docx_images(result, gold) == 0.0
    with pytest.raises(UnsupportedOption):
        compare_docx_images(gold, gold, strict=True)
