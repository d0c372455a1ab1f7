"""`compare_table`'s rules: each reads both sheets it names from `Books` and says whether they agree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rapidfuzz import fuzz

from conway.tasks.metrics.cell_xml import CellCrash, read_cell_value, strict_cell_value
from conway.tasks.metrics.errors import MetricError, ScoredZeroAsOSWorld
from conway.tasks.metrics.workbooks import Books, cell_style, matches

ROW_PROPS = {"hidden", "height", "collapsed"}
CHART_PROPS = {"type", "title", "direction", "legend", "xtitle", "ytitle"}
DV_ATTRS = {"ranges", "sqref", "type", "formula1", "formula2", "operator", "allow_blank", "allowBlank", "showDropDown",
            "showErrorMessage", "showInputMessage", "errorStyle", "error", "errorTitle", "prompt", "promptTitle"}
DV_METHODS = {"spreadsheet_range", "str_list_eq", "str_set_eq"}
PIVOT_PROPS = {"col_fields", "row_fields", "data_fields", "data_fields_name", "filter", "selection", "ordered", "name",
               "show_total", "show_empty_row", "show_empty_col", "show_headers"}
FUZZY_TYPES = {"exact_match", "includes", "included_by", "fuzzy_match"}
FUZZY_KEYS = {"type", "range", "threshold", "normalization", "trim_leadings", "trim_trailings", "ignore_chars",
              "ignore_case"}
# rule type -> the keys it reads (besides "type"); what a task may ask is checked against these in `tables`
RULE_KEYS = {
    "sheet_name": set(),
    "sheet_data": {"sheet_idx0", "sheet_idx1", "precision", "ignore_case"},
    "sheet_print": {"sheet_idx0", "sheet_idx1", "ignore_case"},
    "sheet_fuzzy": {"sheet_idx0", "sheet_idx1", "rules"},
    "check_cell": {"sheet_idx", "coordinate", "props"},
    "style": {"sheet_idx0", "sheet_idx1", "props"},
    "freeze": {"sheet_idx0", "sheet_idx1"},
    "zoom": {"sheet_idx", "method", "ref"},
    "row_props": {"sheet_idx0", "sheet_idx1", "props"},
    "chart": {"sheet_idx0", "sheet_idx1", "chart_props"},
    "data_validation": {"sheet_idx", "dv_props"},
    "pivot_table": {"sheet_idx0", "sheet_idx1", "pivot_props"},
}
# rule type -> the keys it cannot do without
RULE_REQUIRED = {"sheet_data": ("sheet_idx0", "sheet_idx1"), "sheet_print": ("sheet_idx0", "sheet_idx1"),
                 "sheet_fuzzy": ("sheet_idx0", "sheet_idx1", "rules"), "check_cell": ("sheet_idx", "coordinate", "props"),
                 "style": ("sheet_idx0", "sheet_idx1"), "freeze": ("sheet_idx0", "sheet_idx1"),
                 "zoom": ("sheet_idx", "method", "ref"), "row_props": ("sheet_idx0", "sheet_idx1"),
                 "chart": ("sheet_idx0", "sheet_idx1"), "data_validation": ("sheet_idx", "dv_props"),
                 "pivot_table": ("sheet_idx0", "sheet_idx1")}


def _sheet_name(books: Books, rule: dict) -> bool:
    return books.names("result") == books.names("expected")


def _sheet_data(books: Books, rule: dict) -> bool:
    a, b = books.frame(rule["sheet_idx0"]), books.frame(rule["sheet_idx1"])
    if a is None or b is None:
        return False
    digits = rule.get("precision", 4)
    return bool(a.round(digits).equals(b.round(digits)))


def _sheet_print(books: Books, rule: dict) -> bool:
    a, b = books.printed(rule["sheet_idx0"]), books.printed(rule["sheet_idx1"])
    if a is None or b is None:
        return False
    if rule.get("ignore_case", False):
        a, b = [s.lower() for s in a], [s.lower() for s in b]
    return a == b


def _fuzzy_text(value: Any, sub: dict) -> str:
    text = str(value)
    for old, new in sub.get("normalization", []):
        text = text.replace(old, new)
    if "trim_leadings" in sub:
        text = text.lstrip(sub["trim_leadings"])
    if "trim_trailings" in sub:
        text = text.rstrip(sub["trim_trailings"])
    if "ignore_chars" in sub:
        text = "".join(ch for ch in text if ch not in set(sub["ignore_chars"]))
    if sub.get("ignore_case", False):
        text = text.lower()
    return text


def _xml_value(path: Any, sheet_name: str | None, coordinate: str) -> Any:
    """A cell as OSWorld's `sheet_fuzzy` reads it: from the file's XML (`cell_xml`: an inline string's one `<t>`,
    None for a boolean or a rich inline string), and where that reader raises, the whole metric does."""
    try:
        return strict_cell_value(path, sheet_name, coordinate)
    except CellCrash as exc:
        raise ScoredZeroAsOSWorld(f"sheet_fuzzy on {coordinate}: {exc}") from None


def _sheet_fuzzy(books: Books, rule: dict) -> bool:
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.cell_range import MultiCellRange

    (side_a, name_a), (side_b, name_b) = books.sheet(rule["sheet_idx0"]), books.sheet(rule["sheet_idx1"])
    for sub in rule["rules"]:
        for rng in MultiCellRange(" ".join(sub["range"])):
            for row, col in rng.cells:
                coordinate = f"{get_column_letter(col)}{row}"
                a = _fuzzy_text(_xml_value(books.paths[side_a], name_a, coordinate), sub)
                b = _fuzzy_text(_xml_value(books.paths[side_b], name_b, coordinate), sub)
                kind = sub["type"]
                if kind == "exact_match":
                    ok = a == b
                elif kind == "includes":
                    ok = b in a
                elif kind == "included_by":
                    ok = a in b
                else:
                    ok = fuzz.ratio(a, b) >= sub.get("threshold", 85.0)
                if not ok:
                    return False
    return True


def _check_cell(books: Books, rule: dict) -> bool:
    ws = books.worksheet(rule["sheet_idx"])
    if ws is None:
        return False
    coordinate = rule["coordinate"]
    for prop, match in rule["props"].items():
        if prop == "value":  # from the file's XML as OSWorld reads it, not as openpyxl does (cell_xml says how)
            side, name = books.sheet(rule["sheet_idx"])
            value = read_cell_value(books.paths[side], name, coordinate)
        else:
            value = cell_style(prop, ws[coordinate])
        if not matches(value, match):
            return False
    return True


def _styles(ws: Any, props: list[str], side: str) -> dict[str, list[Any]]:
    if ws is None:
        return {}
    if list(ws.conditional_formatting):
        raise MetricError(f"compare_table: the {side} sheet {ws.title!r} has conditional formatting, "
                          "which this checker does not evaluate")
    return {cell.coordinate: [_sheet_style(p, cell) for p in props] for col in ws.iter_cols() for cell in col}


def _sheet_style(prop: str, cell: Any) -> Any:
    """`cell_style`, except where OSWorld's `load_xlsx_styles` raises: it reads a non-empty cell's font colour
    unguarded, and a font with no colour has none to read (`check_cell` guards the same read: None there)."""
    if prop == "font_color" and cell.value is not None and cell.font.color is None:
        raise ScoredZeroAsOSWorld(f"font_color of {cell.coordinate}, whose font has no colour")
    return cell_style(prop, cell)


def _style_rule(books: Books, rule: dict) -> bool:
    props = rule.get("props", [])
    idx_a, idx_b = rule["sheet_idx0"], rule["sheet_idx1"]
    return (_styles(books.worksheet(idx_a), props, books.sheet(idx_a)[0])
            == _styles(books.worksheet(idx_b), props, books.sheet(idx_b)[0]))


def _freeze_key(ws: Any) -> tuple:
    """What is frozen, independent of scrolling: the pane's split counts (its top-left cell moves as one scrolls)."""
    pane = ws.sheet_view.pane
    if pane is None:
        return ("none",)
    split = (int(pane.xSplit or 0), int(pane.ySplit or 0))
    if (pane.state or "").lower() in ("frozen", "frozensplit"):
        return ("frozen", *split)
    return ("split", *split, pane.topLeftCell)


def _freeze(books: Books, rule: dict) -> bool:
    a, b = books.worksheet(rule["sheet_idx0"]), books.worksheet(rule["sheet_idx1"])
    if a is None or b is None:
        return False
    return _freeze_key(a) == _freeze_key(b)


def _zoom(books: Books, rule: dict) -> bool:
    ws = books.worksheet(rule["sheet_idx"])
    if ws is None:
        return False
    return matches(ws.sheet_view.zoomScale or 100.0, rule)


def _rows(ws: Any, props: list[str]) -> dict[int, dict[str, Any]]:
    if ws is None:
        return {}
    return {idx: {p: getattr(dim, p) for p in props} for idx, dim in ws.row_dimensions.items()}


def _row_props(books: Books, rule: dict) -> bool:
    props = rule.get("props", [])
    return _rows(books.worksheet(rule["sheet_idx0"]), props) == _rows(books.worksheet(rule["sheet_idx1"]), props)


def _title_text(owner: Any, *path: str) -> Any:
    """The text of the first run of a chart's or an axis's title (`path` from `owner`: "title", or "x_axis",
    "title"); None when any step is missing, as OSWorld's `load_charts` (utils.py) reads it: a pie chart has no
    axes, so its axis titles read None."""
    try:
        for name in path:
            owner = getattr(owner, name)
        return owner.tx.rich.p[0].r[0].t
    except (AttributeError, IndexError, TypeError):
        return None


def _bar_direction(chart: Any) -> Any:
    """A bar chart's direction; OSWorld's `load_charts` reads `barDir` unguarded, so on any other chart its
    metric raises and scores 0."""
    if not hasattr(chart, "barDir"):
        raise ScoredZeroAsOSWorld(f"chart_props direction on a {chart.tagname}, which has no direction")
    return chart.barDir


def _series_ref(source: Any) -> str:
    for kind in ("numRef", "strRef"):
        ref = getattr(getattr(source, kind, None), "f", None)
        if ref is not None:
            return ref
    return ""


def _charts(ws: Any, props: list[str]) -> dict[str, dict[str, Any]]:
    """Each chart of the sheet, keyed by the cell ranges its series read, with the listed properties."""
    if ws is None:
        return {}
    out = {}
    for chart in ws._charts:  # openpyxl keeps the charts it read here; there is no public accessor
        key = ";".join(f"{_series_ref(s.val)},{_series_ref(s.cat)}" for s in chart.series)
        facts = {"type": lambda: chart.tagname, "title": lambda: _title_text(chart, "title"),
                 "direction": lambda: _bar_direction(chart),
                 "legend": lambda: chart.legend.position if chart.legend is not None else None,
                 "xtitle": lambda: _title_text(chart, "x_axis", "title"),
                 "ytitle": lambda: _title_text(chart, "y_axis", "title")}
        out[key] = {p: facts[p]() for p in props}
    return out


def _chart(books: Books, rule: dict) -> bool:
    props = rule.get("chart_props", [])
    return _charts(books.worksheet(rule["sheet_idx0"]), props) == _charts(books.worksheet(rule["sheet_idx1"]), props)


def _dv_matches(value: Any, match: dict[str, Any]) -> bool:
    method, ref = match["method"], match["ref"]
    if method == "spreadsheet_range":  # the validated cells cover ref[0] and stay within ref[1]
        from openpyxl.worksheet.cell_range import MultiCellRange
        inner, outer = MultiCellRange(ref[0] if isinstance(ref[0], str) else " ".join(ref[0])), \
            MultiCellRange(ref[1] if isinstance(ref[1], str) else " ".join(ref[1]))
        return all(r in value for r in inner.ranges) and all(r in outer for r in value.ranges)
    if method in ("str_list_eq", "str_set_eq"):  # a list validation's items, as its formula spells them
        items = str(value or "").strip("\"'").split(",")
        return items == list(ref) if method == "str_list_eq" else set(items) == set(ref)
    return matches(value, match)


def _data_validation(books: Books, rule: dict) -> bool:
    ws = books.worksheet(rule["sheet_idx"])
    if ws is None:
        return False
    validations = list(ws.data_validations.dataValidation)
    wanted = rule["dv_props"]
    # as many validations as described, and each one in the sheet is one of those described
    return len(validations) >= len(wanted) and all(
        any(all(_dv_matches(getattr(dv, attr), match) for attr, match in attrs.items()) for attrs in wanted)
        for dv in validations)


def _pivots(ws: Any, props: list[str]) -> dict[tuple, dict[str, Any]]:
    """Each pivot table of the sheet, keyed by the cells it summarises, with the listed properties.

    Field positions count from the first source column that any field selects items of, so a pivot made
    from a wider range than needed still matches one made from the exact columns."""
    if ws is None:
        return {}
    from openpyxl.utils import coordinate_to_tuple
    out = {}
    for pivot in ws._pivots:  # openpyxl keeps the pivot tables it read here; there is no public accessor
        chosen = [[(item.h, item.x) for item in field.items if item.x is not None] for field in pivot.pivotFields]
        first = next((i for i, c in enumerate(chosen) if c), len(chosen))
        last = next((i for i, c in enumerate(reversed(chosen)) if c), 0)
        selection = chosen[first:len(chosen) - last]
        source = pivot.cache.cacheSource
        top, bottom = (coordinate_to_tuple(c) for c in source.worksheetSource.ref.split(":"))
        key = (source.type, (top[0], top[1] + first), (bottom[0], bottom[1] - last), source.worksheetSource.sheet)
        facts: dict[str, Any] = {}
        for prop, attr in (("name", "name"), ("show_total", "visualTotals"), ("show_empty_row", "showEmptyRow"),
                           ("show_empty_col", "showEmptyCol"), ("show_headers", "showHeaders")):
            if prop in props:
                facts[prop] = getattr(pivot, attr)
        if "filter" in props or "selection" in props:
            facts["selection"] = selection if "ordered" in props else [set(c) for c in selection]
        if "filter" in props:
            facts["filter_fields"] = {f.fld for f in pivot.pageFields}
        if "col_fields" in props:
            facts["col_fields"] = [f.x - first for f in pivot.colFields]
        if "row_fields" in props:
            facts["row_fields"] = [f.x - first for f in pivot.rowFields]
        if "data_fields" in props:
            named = "data_fields_name" in props
            facts["data_fields"] = [(f.fld - first, f.name if named else "", f.subtotal, f.showDataAs)
                                    for f in pivot.dataFields]
        out[key] = facts
    return out


def _pivot_table(books: Books, rule: dict) -> bool:
    props = rule.get("pivot_props", [])
    return _pivots(books.worksheet(rule["sheet_idx0"]), props) == _pivots(books.worksheet(rule["sheet_idx1"]), props)


RULES: dict[str, Callable[[Books, dict], bool]] = {
    "sheet_name": _sheet_name, "sheet_data": _sheet_data, "sheet_print": _sheet_print,
    "sheet_fuzzy": _sheet_fuzzy, "check_cell": _check_cell, "style": _style_rule, "freeze": _freeze,
    "zoom": _zoom, "row_props": _row_props, "chart": _chart, "data_validation": _data_validation,
    "pivot_table": _pivot_table,
}
