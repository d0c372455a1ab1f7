"""compare_csv and compare_table on real workbooks and CSV files written here with openpyxl: each rule passes and fails."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from helpers.extras import need_extra

openpyxl = need_extra("tasks", "openpyxl")
need_extra("tasks", "pandas")
pytest.importorskip("rapidfuzz")

from openpyxl.chart import BarChart, LineChart, PieChart, Reference  # noqa: E402
from openpyxl.formatting.rule import CellIsRule  # noqa: E402
from openpyxl.pivot.cache import CacheDefinition, CacheField, CacheSource, SharedItems, WorksheetSource  # noqa: E402
from openpyxl.pivot.record import RecordList  # noqa: E402
from openpyxl.pivot.table import DataField, FieldItem, Location, PageField, PivotField, RowColField  # noqa: E402
from openpyxl.pivot.table import TableDefinition as PivotTable  # noqa: E402
from openpyxl.styles import Font, PatternFill  # noqa: E402
from openpyxl.worksheet.datavalidation import DataValidation  # noqa: E402

from conway.tasks.metrics.errors import MetricError, UnsupportedOption  # noqa: E402
from conway.tasks.metrics.tables import METRICS, compare_csv, compare_table, unsupported_options  # noqa: E402

DATA = [["Name", "Amount"], ["ann", 1.5], ["bob", 2.25]]


def book(path: Path, sheets: dict[str, list[list]] | None = None, edit=None) -> Path:
    """A workbook with the given sheets (name → rows); `edit(wb)` changes it before it is saved."""
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in (sheets or {"Sheet1": DATA}).items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
    if edit:
        edit(wb)
    wb.save(path)
    return path


def pair(tmp_path: Path, edit_result=None, edit_expected=None, result_sheets=None, expected_sheets=None):
    return (book(tmp_path / "result.xlsx", result_sheets, edit_result),
            book(tmp_path / "expected.xlsx", expected_sheets, edit_expected))


def table(tmp_path, rules, **kw) -> float:
    return compare_table(*pair(tmp_path, **kw), rules=rules)


def cell(coord, value):
    def edit(wb):
        wb.active[coord] = value
    return edit


def test_the_module_exposes_its_metrics():
    assert METRICS == {"compare_csv": compare_csv, "compare_table": compare_table}


def test_every_rule_the_options_check_accepts_has_an_implementation():
    from conway.tasks.metrics.table_rules import RULE_KEYS, RULE_REQUIRED, RULES
    assert set(RULES) == set(RULE_KEYS) and set(RULE_REQUIRED) <= set(RULES)


# ---- compare_csv ---------------------------------------------------------------------------------------------

def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def test_compare_csv_equal_lines_pass_and_a_changed_line_fails(tmp_path):
    gold = write(tmp_path / "gold.csv", "a,b\n1,2\n")
    assert compare_csv(write(tmp_path / "r.csv", "a,b\n1,2\n"), gold) == 1.0
    assert compare_csv(write(tmp_path / "w.csv", "a,b\n1,3\n"), gold) == 0.0


def test_compare_csv_strict_false_strips_lines_and_ignore_case_lowers_them(tmp_path):
    gold = write(tmp_path / "gold.csv", "a,b\n1,2\n")
    spaced = write(tmp_path / "r.csv", "a,b  \n 1,2\n")
    assert compare_csv(spaced, gold) == 0.0
    assert compare_csv(spaced, gold, strict=False) == 1.0
    upper = write(tmp_path / "u.csv", "A,B\n1,2\n")
    assert compare_csv(upper, gold) == 0.0
    assert compare_csv(upper, gold, ignore_case=True) == 1.0


def test_compare_csv_matches_any_of_several_expected_files(tmp_path):
    result = write(tmp_path / "r.csv", "x\n")
    golds = [write(tmp_path / "g1.csv", "y\n"), write(tmp_path / "g2.csv", "x\n")]
    assert compare_csv(result, golds) == 1.0
    assert compare_csv(result, golds[:1]) == 0.0
    assert compare_csv(result, [tmp_path / "absent.csv", golds[1]]) == 1.0  # a missing candidate is skipped


def test_compare_csv_reads_a_bom_and_an_8_bit_export(tmp_path):
    gold = write(tmp_path / "gold.csv", "café\n")
    assert compare_csv(write(tmp_path / "bom.csv", "\ufeffcafé\n"), gold) == 1.0
    assert compare_csv(write(tmp_path / "latin.csv", "café\n", "latin-1"), gold) == 1.0


def test_compare_csv_bad_inputs(tmp_path):
    gold = write(tmp_path / "gold.csv", "x\n")
    assert compare_csv(None, gold) == 0.0
    with pytest.raises(MetricError, match="result file does not exist"):
        compare_csv(tmp_path / "absent.csv", gold)
    with pytest.raises(MetricError, match="result is not a regular file"):
        compare_csv(tmp_path, gold)
    with pytest.raises(MetricError, match="expected file does not exist"):
        compare_csv(gold, tmp_path / "absent.csv")
    with pytest.raises(UnsupportedOption, match="compare_csv: not supported here: delimiter"):
        compare_csv(gold, gold, delimiter=";")


# ---- compare_table: the rules --------------------------------------------------------------------------------

def test_sheet_name(tmp_path):
    same = {"A": [[1]], "B": [[2]]}
    assert table(tmp_path, [{"type": "sheet_name"}], result_sheets=same, expected_sheets=same) == 1.0
    swapped = {"B": [[2]], "A": [[1]]}
    assert table(tmp_path, [{"type": "sheet_name"}], result_sheets=swapped, expected_sheets=same) == 0.0


def test_sheet_data_compares_values_rounded_to_the_precision(tmp_path):
    rule = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert table(tmp_path, [rule]) == 1.0
    assert table(tmp_path, [rule], edit_result=cell("B2", 1.50001)) == 1.0  # 4 digits by default
    assert table(tmp_path, [{**rule, "precision": 6}], edit_result=cell("B2", 1.50001)) == 0.0
    assert table(tmp_path, [rule], edit_result=cell("A3", "bobby")) == 0.0


def test_sheet_data_reads_stored_values_so_a_formula_never_computed_reads_empty(tmp_path):
    # openpyxl writes a formula without its result (an office suite stores both): the checker sees no value
    def formula(wb):
        wb.active["B3"] = "=1+1.25"
    result, expected = pair(tmp_path, edit_result=formula)
    rule = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(result, expected, rules=[rule]) == 0.0  # no stored value: the cell reads empty


def test_sheet_data_ignore_case_is_accepted_and_changes_nothing_as_in_osworld(tmp_path):
    rule = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0", "ignore_case": True}
    assert table(tmp_path, [rule], edit_result=cell("A2", "ANN")) == 0.0
    assert table(tmp_path, [rule]) == 1.0


def test_sheet_print_compares_the_csv_exports_beside_the_workbooks(tmp_path):
    result, expected = pair(tmp_path)
    write(tmp_path / "result-Sheet1.csv", "Name,Amount\nann,1.5\n\n\n")
    write(tmp_path / "expected-Sheet1.csv", " Name,Amount\nann,1.5\n")
    rule = {"type": "sheet_print", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(result, expected, rules=[rule]) == 1.0
    write(tmp_path / "result-Sheet1.csv", "NAME,Amount\nann,1.5\n")
    assert compare_table(result, expected, rules=[rule]) == 0.0
    assert compare_table(result, expected, rules=[{**rule, "ignore_case": True}]) == 1.0


def test_sheet_print_without_the_export_is_an_error_naming_it(tmp_path):
    result, expected = pair(tmp_path)
    write(tmp_path / "expected-Sheet1.csv", "x\n")
    with pytest.raises(MetricError, match="result-Sheet1.csv"):
        compare_table(result, expected, rules=[{"type": "sheet_print", "sheet_idx0": "RNSheet1",
                                                "sheet_idx1": "ENSheet1"}])


FUZZY_CASES = [
    # (sub-rule, result cell, expected cell, holds)
    ({"type": "exact_match"}, "Main Rd", "Main Rd", True),
    ({"type": "exact_match"}, "Main Rd", "Main Road", False),
    ({"type": "exact_match", "ignore_case": True}, "MAIN RD", "main rd", True),
    ({"type": "exact_match", "normalization": [["Rd", "Road"]]}, "Main Rd", "Main Road", True),
    ({"type": "exact_match", "trim_leadings": "+ ", "trim_trailings": "-"}, "+ 12-", "12", True),
    # a text with an edge space is stored with xml:space="preserve", which OSWorld's reader gives as an element
    ({"type": "exact_match", "trim_leadings": "+ ", "trim_trailings": " "}, "+ 12 ", "12", False),
    ({"type": "exact_match", "ignore_chars": " ()-"}, "(555) 12-34", "5551234", True),
    ({"type": "includes"}, "Main Road 5", "Road", True),
    ({"type": "includes"}, "Road", "Main Road 5", False),
    ({"type": "included_by"}, "Road", "Main Road 5", True),
    ({"type": "included_by"}, "Main Road 5", "Road", False),
    ({"type": "fuzzy_match", "threshold": 80}, "Jonathan Smith", "Jonathon Smith", True),
    ({"type": "fuzzy_match", "threshold": 99}, "Jonathan Smith", "Jonathon Smith", False),
    ({"type": "fuzzy_match"}, "Jonathan Smith", "Mary Jones", False),
]


@pytest.mark.parametrize("sub,mine,gold,holds", FUZZY_CASES)
def test_sheet_fuzzy(tmp_path, sub, mine, gold, holds):
    rule = {"type": "sheet_fuzzy", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1",
            "rules": [{**sub, "range": ["A1:A2"]}]}
    both = lambda v: cell("A1", v)  # noqa: E731
    assert table(tmp_path, [rule], edit_result=both(mine), edit_expected=both(gold)) == float(holds)


def test_sheet_fuzzy_reads_cells_from_the_xml_as_osworld_does(tmp_path):
    """OSWorld's sheet_fuzzy compares str() of its XML reader's value: an inline string kept with its spaces is an
    element (never trimmed into a match), rich text and booleans are None (so any two of them match)."""
    from openpyxl.cell.rich_text import CellRichText, TextBlock
    from openpyxl.cell.text import InlineFont
    rule = {"type": "sheet_fuzzy", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1",
            "rules": [{"type": "exact_match", "trim_leadings": " ", "range": ["A1"]}]}
    assert table(tmp_path, [rule], edit_result=cell("A1", " Main Rd"), edit_expected=cell("A1", "Main Rd")) == 0.0
    assert table(tmp_path, [rule], edit_result=cell("A1", " Main Rd"), edit_expected=cell("A1", " Main Rd")) == 1.0
    rich = [CellRichText(["Ma", TextBlock(InlineFont(b=True), "in")]), CellRichText(["Ro", TextBlock(InlineFont(i=True), "ad")])]
    assert table(tmp_path, [rule], edit_result=cell("A1", rich[0]), edit_expected=cell("A1", rich[1])) == 1.0
    assert table(tmp_path, [rule], edit_result=cell("A1", True), edit_expected=cell("A1", False)) == 1.0
    assert table(tmp_path, [rule], edit_result=cell("A1", 2), edit_expected=cell("A1", 2.0)) == 1.0  # both "2.0"


def test_sheet_fuzzy_checks_every_cell_of_every_range(tmp_path):
    rule = {"type": "sheet_fuzzy", "sheet_idx0": 0, "sheet_idx1": "EI0",
            "rules": [{"type": "exact_match", "range": ["A1:A2", "B3"]}]}
    assert table(tmp_path, [rule]) == 1.0
    assert table(tmp_path, [rule], edit_result=cell("B3", 9)) == 0.0
    assert table(tmp_path, [rule], edit_result=cell("B2", 9)) == 1.0  # outside the ranges


def styled(coord, fill=None, **font):
    def edit(wb):
        c = wb.active[coord]
        if fill:
            c.fill = PatternFill("solid", fgColor=fill)
        if font:
            c.font = Font(**font)
    return edit


CELL_CASES = [
    # (props, edit of the result, holds)
    ({"value": {"method": "eq", "ref": "ann"}}, None, True),
    ({"value": {"method": "eq", "ref": "ann"}}, cell("A2", "anne"), False),
    ({"value": {"method": "ne", "ref": "ann"}}, cell("A2", "anne"), True),
    ({"value": {"method": "approx:0.01", "ref": 1.505}}, cell("A2", 1.5), True),
    ({"value": {"method": "approx:0.001", "ref": 1.505}}, cell("A2", 1.5), False),
    ({"value": {"method": "approx:0.1", "ref": 1.0}}, None, False),  # text is not near a number
    ({"value": {"method": "gt", "ref": 1}}, cell("A2", 2), True),
    ({"value": {"method": "lt", "ref": 1}}, cell("A2", 2), False),
    ({"value": {"method": "ge", "ref": 2}}, cell("A2", 2), True),
    ({"value": {"method": "le", "ref": 1}}, cell("A2", 2), False),
    ({"value": {"method": "lt", "ref": 1}}, None, False),  # "ann" < 1 cannot be compared: the rule fails
    ({"value": {"method": "approx:0.5", "ref": 45292.0}}, cell("A2", dt.date(2024, 1, 1)), True),
    ({"font_bold": {"method": "eq", "ref": True}}, styled("A2", bold=True), True),
    ({"font_bold": {"method": "eq", "ref": True}}, None, False),
    ({"font_italic": {"method": "eq", "ref": True}}, styled("A2", italic=True), True),
    ({"font_italic": {"method": "eq", "ref": True}}, styled("A2", bold=True), False),
    ({"font_underline": {"method": "eq", "ref": "single"}}, styled("A2", underline="single"), True),
    ({"font_underline": {"method": "eq", "ref": "single"}}, None, False),
    ({"font_name": {"method": "eq", "ref": "Arial"}}, styled("A2", name="Arial"), True),
    ({"font_name": {"method": "eq", "ref": "Arial"}}, styled("A2", name="Calibri"), False),
    ({"font_size": {"method": "eq", "ref": 14}}, styled("A2", size=14), True),
    ({"font_size": {"method": "gt", "ref": 14}}, styled("A2", size=14), False),
    ({"font_color": {"method": "eq", "ref": "FF00FF00"}}, styled("A2", color="FF00FF00"), True),
    ({"font_color": {"method": "eq", "ref": "FF00FF00"}}, styled("A2", color="FFFF0000"), False),
    ({"bgcolor": {"method": "eq", "ref": "FFFF0000"}}, styled("A2", fill="FFFF0000"), True),
    ({"bgcolor": {"method": "eq", "ref": "FFFF0000"}}, None, False),
]


@pytest.mark.parametrize("props,edit,holds", CELL_CASES)
def test_check_cell(tmp_path, props, edit, holds):
    rule = {"type": "check_cell", "sheet_idx": 0, "coordinate": "A2", "props": props}
    assert table(tmp_path, [rule], edit_result=edit) == float(holds)


def check_value(tmp_path, method, ref, edit=None, sheet_idx=0, coord="A2", result=None) -> float:
    rule = {"type": "check_cell", "sheet_idx": sheet_idx, "coordinate": coord,
            "props": {"value": {"method": method, "ref": ref}}}
    if result is None:
        return table(tmp_path, [rule], edit_result=edit)
    return compare_table(result, rules=[rule])


def test_check_cell_reads_a_boolean_as_none_as_osworld_reader_does(tmp_path):
    # OSWorld's read_cell_value has no branch for t="b": the value is None whatever the cell holds
    assert check_value(tmp_path, "eq", True, cell("A2", True)) == 0.0
    assert check_value(tmp_path, "eq", None, cell("A2", True)) == 1.0


def test_check_cell_reads_inline_strings_as_openpyxl_writes_them_as_osworld_does(tmp_path):
    from openpyxl.cell.rich_text import CellRichText, TextBlock
    from openpyxl.cell.text import InlineFont
    assert check_value(tmp_path, "eq", "ann") == 1.0  # a plain inline string: its one <t>
    # a <t xml:space="preserve"> (leading or trailing spaces) reads as an element, equal to no string
    assert check_value(tmp_path, "eq", " ann", cell("A2", " ann")) == 0.0
    assert check_value(tmp_path, "ne", " ann", cell("A2", " ann")) == 1.0
    rich = CellRichText(["an", TextBlock(InlineFont(b=True), "n")])
    assert check_value(tmp_path, "eq", "ann", cell("A2", rich)) == 0.0  # runs: no single <t>, None
    assert check_value(tmp_path, "eq", None, cell("A2", rich)) == 1.0


def renumbered(path: Path, ids: dict[str, str]) -> Path:
    """The workbook with the sheets' `sheetId`s changed (name → id), its sheet files left where they are."""
    import re
    import zipfile
    out = path.with_name("renumbered.xlsx")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "xl/workbook.xml":
                text = data.decode()
                for name, new in ids.items():
                    text = re.sub(f'(name="{name}" sheetId=")\\d+"', f'\\g<1>{new}"', text)
                data = text.encode()
            dst.writestr(item, data)
    return out


def test_check_cell_opens_the_sheet_file_its_sheet_id_names_as_osworld_does(tmp_path):
    two = {"One": [["x"], ["first"]], "Two": [["x"], ["second"]]}
    path = book(tmp_path / "two.xlsx", two)
    swapped = renumbered(path, {"One": "2", "Two": "1"})
    assert check_value(tmp_path, "eq", "second", result=swapped) == 1.0  # sheet One's id names sheet2.xml
    assert check_value(tmp_path, "eq", "first", sheet_idx="RNTwo", result=swapped) == 1.0
    missing = renumbered(path, {"One": "7"})
    assert check_value(tmp_path, "eq", "first", result=missing) == 0.0  # no sheet7.xml: None
    assert check_value(tmp_path, "eq", None, result=missing) == 1.0
    assert check_value(tmp_path, "eq", "first", result=path) == 1.0


def with_cell_xml(path: Path, xml: str) -> Path:
    """The workbook with its first sheet's A2 replaced by `xml` (a `<c>` element as another writer stores it)."""
    import re
    import zipfile
    out = path.with_name("rewritten.xlsx")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(r'<c r="A2"[^>]*>.*?</c>', xml, data.decode(), count=1).encode()
            dst.writestr(item, data)
    return out


def test_check_cell_reads_stored_strings_stripped_and_iso_dates_as_none_as_osworld_does(tmp_path):
    path = book(tmp_path / "plain.xlsx")
    formula = with_cell_xml(path, '<c r="A2" t="str"><f>" pad "</f><v> pad </v></c>')
    assert check_value(tmp_path, "eq", "pad", result=formula) == 1.0  # its XML-to-dict step strips the text
    iso = with_cell_xml(path, '<c r="A2" t="d"><v>2024-01-01T00:00:00</v></c>')
    assert check_value(tmp_path, "eq", None, result=iso) == 1.0  # no branch for t="d"
    empty = with_cell_xml(path, '<c r="A2"><f>1/0</f><v></v></c>')
    assert check_value(tmp_path, "eq", None, result=empty) == 1.0


def test_check_cell_merge_and_number_format(tmp_path):
    def merged(wb):
        wb.active.merge_cells("A1:B1")
        wb.active["B2"].number_format = "0.00%"
    for coord, props, holds in [("B1", {"merge": {"method": "eq", "ref": True}}, True),
                                ("A1", {"merge": {"method": "eq", "ref": True}}, False),  # the range's own cell
                                ("B2", {"number_format": {"method": "eq", "ref": "0.00%"}}, True),
                                ("B3", {"number_format": {"method": "eq", "ref": "0.00%"}}, False)]:
        rule = {"type": "check_cell", "sheet_idx": "RI0", "coordinate": coord, "props": props}
        assert table(tmp_path, [rule], edit_result=merged) == float(holds), (coord, props)


def test_style_compares_the_listed_props_of_every_cell(tmp_path):
    rule = {"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["bgcolor", "font_bold"]}
    red = styled("B2", fill="FFFF0000")
    assert table(tmp_path, [rule], edit_result=red, edit_expected=red) == 1.0
    assert table(tmp_path, [rule], edit_result=red) == 0.0
    assert table(tmp_path, [rule], edit_result=styled("A1", bold=True)) == 0.0
    assert table(tmp_path, [{**rule, "props": ["font_italic"]}], edit_result=red) == 1.0


def test_style_font_color_of_a_font_with_no_colour_scores_zero_as_osworld_crashes(tmp_path):
    # OSWorld's load_xlsx_styles reads font.color.rgb unguarded: a non-empty cell whose font has no colour raises
    rule = {"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["font_color"]}
    bold = styled("B2", bold=True)  # Font(bold=True): no colour at all
    assert table(tmp_path, [rule], edit_result=bold, edit_expected=bold) == 0.0
    assert table(tmp_path, [rule]) == 1.0  # the default font has its theme colour
    coloured = styled("B2", bold=True, color="FFFF0000")
    assert table(tmp_path, [rule], edit_result=coloured, edit_expected=coloured) == 1.0
    assert table(tmp_path, [{**rule, "props": ["font_bold"]}], edit_result=bold, edit_expected=bold) == 1.0
    check = {"type": "check_cell", "sheet_idx": 0, "coordinate": "B2",
             "props": {"font_color": {"method": "eq", "ref": None}}}
    assert table(tmp_path, [check], edit_result=bold) == 1.0  # check_cell catches the same failure: None


def test_style_refuses_a_sheet_with_conditional_formatting(tmp_path):
    def conditional(wb):
        wb.active.conditional_formatting.add("B2:B3", CellIsRule(operator="greaterThan", formula=["2"],
                                                                  fill=PatternFill("solid", fgColor="FFFF0000")))
    rule = {"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["bgcolor"]}
    with pytest.raises(MetricError, match="conditional formatting"):
        table(tmp_path, [rule], edit_result=conditional)


def frozen(at):
    def edit(wb):
        wb.active.freeze_panes = at
    return edit


def test_freeze_compares_what_is_frozen(tmp_path):
    rule = {"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert table(tmp_path, [rule], edit_result=frozen("A2"), edit_expected=frozen("A2")) == 1.0
    assert table(tmp_path, [rule], edit_result=frozen("B2"), edit_expected=frozen("A2")) == 0.0
    assert table(tmp_path, [rule], edit_expected=frozen("A2")) == 0.0

    def scrolled(wb):  # the same freeze, scrolled down: the pane's top-left cell moved
        wb.active.freeze_panes = "A2"
        wb.active.sheet_view.pane.topLeftCell = "A40"
    assert table(tmp_path, [rule], edit_result=scrolled, edit_expected=frozen("A2")) == 1.0


def test_zoom(tmp_path):
    def zoom(scale):
        def edit(wb):
            wb.active.sheet_view.zoomScale = scale
        return edit
    rule = {"type": "zoom", "sheet_idx": 0, "method": "lt", "ref": 100}
    assert table(tmp_path, [rule], edit_result=zoom(80)) == 1.0
    assert table(tmp_path, [rule], edit_result=zoom(120)) == 0.0
    assert table(tmp_path, [rule]) == 0.0  # unset reads as 100


def test_row_props_hidden(tmp_path):
    def hide(wb):
        wb.active.row_dimensions[3].hidden = True
    rule = {"type": "row_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["hidden"]}
    assert table(tmp_path, [rule], edit_result=hide, edit_expected=hide) == 1.0
    assert table(tmp_path, [rule], edit_expected=hide) == 0.0


def charted(kind=BarChart, title="Sales", direction="col", rows=3):
    def edit(wb):
        ws = wb.active
        chart = kind()
        if direction and kind is BarChart:
            chart.type = direction
        chart.title = title
        chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=rows), titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=rows))
        ws.add_chart(chart, "D2")
    return edit


def test_chart_compares_the_listed_properties_of_charts_on_the_same_data(tmp_path):
    rule = {"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["type", "title", "direction"]}
    gold = charted()
    assert table(tmp_path, [rule], edit_result=charted(), edit_expected=gold) == 1.0
    assert table(tmp_path, [rule], edit_result=charted(LineChart), edit_expected=gold) == 0.0
    assert table(tmp_path, [rule], edit_result=charted(title="Costs"), edit_expected=gold) == 0.0
    assert table(tmp_path, [rule], edit_result=charted(direction="bar"), edit_expected=gold) == 0.0
    assert table(tmp_path, [rule], edit_result=charted(rows=2), edit_expected=gold) == 0.0  # other cells charted
    assert table(tmp_path, [rule], edit_expected=gold) == 0.0  # no chart at all
    assert table(tmp_path, [{**rule, "chart_props": ["type"]}], edit_result=charted(title="Costs"),
                 edit_expected=gold) == 1.0


def test_chart_axis_titles_and_legend_of_a_pie_chart_read_as_osworld_reads_them(tmp_path):
    # a pie chart has no axes: OSWorld's load_charts reads their titles as None (score 1 on equal charts)
    rule = {"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["legend", "xtitle", "ytitle"]}
    pie = charted(PieChart)
    assert table(tmp_path, [rule], edit_result=pie, edit_expected=pie) == 1.0
    assert table(tmp_path, [rule], edit_result=charted(), edit_expected=pie) == 1.0  # same data, same None titles


def test_chart_direction_of_a_chart_that_has_none_scores_zero_as_osworld_crashes(tmp_path):
    rule = {"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["direction"]}
    pie = charted(PieChart)
    assert table(tmp_path, [rule], edit_result=pie, edit_expected=pie) == 0.0


def validated(cells="D2:D29", items='"Pass,Fail,Held"', kind="list"):
    def edit(wb):
        dv = DataValidation(type=kind, formula1=items)
        dv.add(cells)
        wb.active.add_data_validation(dv)
    return edit


DV_RULE = {"type": "data_validation", "sheet_idx": 0, "dv_props": [
    {"ranges": {"method": "spreadsheet_range", "ref": ["D2:D29", "D1:D1048576"]},
     "type": {"method": "eq", "ref": "list"},
     "formula1": {"method": "str_set_eq", "ref": ["Pass", "Fail", "Held"]}}]}


@pytest.mark.parametrize("edit,holds", [
    (validated(), True),
    (validated(items='"Held,Pass,Fail"'), True),  # a set: any order
    (validated(cells="D1:D40"), True),  # covers the cells and stays in column D
    (validated(cells="D2:D10"), False),  # does not cover D2:D29
    (validated(cells="D2:E29"), False),  # reaches beyond column D
    (validated(items='"Pass,Fail"'), False),
    (validated(kind="whole", items="5"), False),
    (None, False),  # no validation at all
])
def test_data_validation(tmp_path, edit, holds):
    assert table(tmp_path, [DV_RULE], edit_result=edit) == float(holds)


PIVOT_DATA = {"Sheet1": [["region", "kind", "amount"], ["n", "a", 1], ["s", "b", 2], ["n", "b", 3]], "Sheet2": []}


def pivoted(rows=(0,), page=(1,), total="sum", hidden=None):
    """A pivot table on Sheet2 summarising Sheet1 (what an office suite saves; openpyxl writes what it is given)."""
    def edit(wb):
        source = CacheSource(type="worksheet", worksheetSource=WorksheetSource(ref="A1:C4", sheet="Sheet1"))
        cache = CacheDefinition(cacheSource=source, recordCount=3, cacheFields=[
            CacheField(name=n, sharedItems=SharedItems()) for n in ("region", "kind", "amount")])
        cache.records = RecordList()
        axes = {i: "axisRow" for i in rows} | {i: "axisPage" for i in page}
        fields = [PivotField(axis=axes.get(i), items=[FieldItem(x=0, h=hidden), FieldItem(x=1), FieldItem(t="default")])
                  for i in (0, 1)] + [PivotField(dataField=True)]
        pivot = PivotTable(name="Pivot1", cacheId=1, dataCaption="Values", pivotFields=fields,
                           location=Location(ref="A3:B6", firstHeaderRow=1, firstDataRow=1, firstDataCol=1),
                           rowFields=[RowColField(x=i) for i in rows], pageFields=[PageField(fld=i) for i in page],
                           dataFields=[DataField(name="Total", fld=2, subtotal=total)])
        pivot.cache = cache
        wb["Sheet2"]._pivots.append(pivot)
    return edit


PIVOT_RULE = {"type": "pivot_table", "sheet_idx0": "RNSheet2", "sheet_idx1": "ENSheet2",
              "pivot_props": ["col_fields", "filter", "row_fields", "data_fields"]}


@pytest.mark.parametrize("edit,holds", [
    (pivoted(), True),
    (pivoted(rows=(1,), page=(0,)), False),  # the fields swapped between rows and filter
    (pivoted(total="count"), False),
    (pivoted(hidden=True), False),  # an item filtered out
    (None, False),  # no pivot table
])
def test_pivot_table(tmp_path, edit, holds):
    kw = {"result_sheets": PIVOT_DATA, "expected_sheets": PIVOT_DATA, "edit_expected": pivoted()}
    assert table(tmp_path, [PIVOT_RULE], edit_result=edit, **kw) == float(holds)


def test_every_rule_must_hold_and_the_first_failure_ends_it(tmp_path):
    ok = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    bad = {"type": "check_cell", "sheet_idx": 0, "coordinate": "A2", "props": {"value": {"method": "eq", "ref": "x"}}}
    assert table(tmp_path, [ok, ok]) == 1.0
    assert table(tmp_path, [ok, bad]) == 0.0
    assert table(tmp_path, [bad, {"type": "sheet_print", "sheet_idx0": 0, "sheet_idx1": "EI0"}]) == 0.0  # no CSV read


# ---- sheet indexes -------------------------------------------------------------------------------------------

def test_sheet_indexes_by_position_and_name_on_either_side(tmp_path):
    sheets = {"Intro": [["x"]], "Data": DATA}
    kw = {"result_sheets": sheets, "expected_sheets": sheets}
    for a, b in [(1, "EI1"), ("RI1", "ENData"), ("RNData", "EI1"), ("RNIntro", "ENIntro")]:
        assert table(tmp_path, [{"type": "sheet_data", "sheet_idx0": a, "sheet_idx1": b}], **kw) == 1.0, (a, b)
    assert table(tmp_path, [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI1"}], **kw) == 0.0


def test_a_missing_sheet_fails_the_rule(tmp_path):
    for idx in (5, "RI5", "RNNope"):
        assert table(tmp_path, [{"type": "sheet_data", "sheet_idx0": idx, "sheet_idx1": "EI0"}]) == 0.0, idx
        assert table(tmp_path, [{"type": "freeze", "sheet_idx0": idx, "sheet_idx1": "EI0"}]) == 0.0, idx


def test_a_bad_sheet_index_is_an_error(tmp_path):
    for idx in ("Sheet1", "RIx", 1.5):
        with pytest.raises(MetricError, match="bad sheet index"):
            table(tmp_path, [{"type": "sheet_data", "sheet_idx0": idx, "sheet_idx1": "EI0"}])


def test_a_rule_on_the_expected_side_without_an_expected_file_is_an_error(tmp_path):
    result = book(tmp_path / "r.xlsx")
    rule = {"type": "check_cell", "sheet_idx": 0, "coordinate": "A1", "props": {"value": {"method": "eq", "ref": "Name"}}}
    assert compare_table(result, None, rules=[rule]) == 1.0  # a check on the result alone needs no gold file
    with pytest.raises(MetricError, match="gives none"):
        compare_table(result, None, rules=[{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}])


# ---- bad inputs ----------------------------------------------------------------------------------------------

RULE = [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]


def test_no_result_scores_zero(tmp_path):
    assert compare_table(None, book(tmp_path / "e.xlsx"), rules=RULE) == 0.0


def test_a_corrupt_workbook_is_an_error_naming_it(tmp_path):
    bad = tmp_path / "broken.xlsx"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(MetricError, match="result is not a readable workbook: broken.xlsx"):
        compare_table(bad, book(tmp_path / "e.xlsx"), rules=RULE)
    with pytest.raises(MetricError, match="expected is not a readable workbook"):
        compare_table(book(tmp_path / "r.xlsx"), bad, rules=RULE)


def test_a_directory_or_a_missing_file_is_an_error(tmp_path):
    gold = book(tmp_path / "e.xlsx")
    (tmp_path / "dir.xlsx").mkdir()
    with pytest.raises(MetricError, match="not a regular file"):
        compare_table(tmp_path / "dir.xlsx", gold, rules=RULE)
    with pytest.raises(MetricError, match="does not exist"):
        compare_table(tmp_path / "absent.xlsx", gold, rules=RULE)
    with pytest.raises(MetricError, match="2 files"):
        compare_table([gold, gold], gold, rules=RULE)


def test_a_rule_value_of_the_wrong_kind_is_a_one_line_error(tmp_path):
    with pytest.raises(MetricError, match=r"rules\[0\] \(sheet_data\) cannot be applied"):
        table(tmp_path, [{**RULE[0], "precision": "four"}])


UNSUPPORTED = [
    ({"rules": [{"type": "sparkline", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}, ["rules[0].type=sparkline"]),
    ({"rules": [{"type": "pivot_table", "sheet_idx0": 0, "sheet_idx1": "EI0", "pivot_props": ["location"]}]},
     ["rules[0].pivot_props.location"]),
    ({"rules": [{"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["anchor"]}]},
     ["rules[0].chart_props.anchor"]),
    ({"rules": [{"type": "data_validation", "sheet_idx": 0, "dv_props": [{"imeMode": {"method": "eq", "ref": 1},
                                                                          "type": {"method": "re", "ref": "l"}}]}]},
     ["rules[0].dv_props[0].imeMode", "rules[0].dv_props[0].type.method=re"]),
    ({"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
                 "props": {"hyperlink": {"method": "eq", "ref": ""}, "value": {"method": "re", "ref": "x"}}}]},
     ["rules[0].props.hyperlink", "rules[0].props.value.method=re"]),
    ({"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A0", "props": {}}]},
     ["rules[0].coordinate='A0' (not a cell like B3)"]),
    ({"rules": [{"type": "sheet_data", "sheet_idx0": 0}]}, ["rules[0].sheet_idx1 (missing)"]),
    ({"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0", "tolerance": 2}]},
     ["rules[0].tolerance"]),
    ({"rules": [{"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["fill_type"]}]},
     ["rules[0].props.fill_type"]),
    ({"rules": [{"type": "sheet_fuzzy", "sheet_idx0": 0, "sheet_idx1": "EI0",
                 "rules": [{"type": "regex", "range": ["A1"]}, {"type": "includes", "range": "A1:B2"}]}]},
     ["rules[0].rules[0].type=regex", "rules[0].rules[1].range='A1:B2' (not a list of ranges like A1:B6)"]),
    ({"rules": [{"type": "zoom", "sheet_idx": 0, "method": "range.ee", "ref": [50, 90]}]},
     ["rules[0].method=range.ee"]),
    ({"rules": "sheet_data"}, ["rules (not a list)"]),
    ({"rules": [], "conj": "or"}, ["conj"]),
]


@pytest.mark.parametrize("options,problems", UNSUPPORTED)
def test_unsupported_options_are_named_and_refused(tmp_path, options, problems):
    assert unsupported_options("compare_table", options) == problems
    with pytest.raises(UnsupportedOption, match="compare_table: not supported here"):
        compare_table(*pair(tmp_path), **options)


def test_supported_options_list_nothing():
    rules = [{"type": "sheet_fuzzy", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1",
              "rules": [{"range": ["A1:A6", "D1:D6"], "type": "exact_match"},
                        {"range": ["B1:B6"], "type": "fuzzy_match", "threshold": 85,
                         "normalization": [["Rd", "Road"]], "ignore_case": True}]},
             {"type": "check_cell", "sheet_idx": 0, "coordinate": "E3",
              "props": {"value": {"method": "approx:0.001", "ref": 191.6667}}},
             {"type": "zoom", "sheet_idx": 0, "method": "lt", "ref": 260, "_note": "comments are ignored"}]
    assert unsupported_options("compare_table", {"rules": rules}) == []
    assert unsupported_options("compare_csv", {}) == []
    with pytest.raises(KeyError):
        unsupported_options("compare_docx_files", {})
