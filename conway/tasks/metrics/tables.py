"""OSWorld's table metrics, `compare_csv` and `compare_table`, written afresh on openpyxl, pandas and rapidfuzz.

Each metric is `metric(result, expected, **options) -> float` with file paths (a
None result scores 0), as OSWorld's evaluator calls them. A missing, corrupt or
wrong-kind file raises `MetricError` (the evaluator's one-line error, score 0).

`compare_csv(result, expected, strict=True, ignore_case=False)`: the files' lines
equal (`strict: false` strips each line; `ignore_case` lowers them); `expected`
may be a list, any one of which matches.

`compare_table(result, expected, rules=[...])`: every rule holds (1) or the first
that fails ends it (0). Sheets are named as OSWorld's tasks name them: an int is
the result's sheet by position, `RI<n>`/`RN<name>` the result's by position/name,
`EI<n>`/`EN<name>` the expected's. Rule types, with how many rules of each type the 62
`compare_table` evaluators in OSWorld's evaluation_examples hold (counted for
this module), and what each compares:

- `sheet_data` (53): the sheets read as tables by pandas, numbers rounded to
  `precision` (default 4), equal. `ignore_case` (3 tasks) is accepted and, as in
  OSWorld's checker, has no effect.
- `check_cell` (21): one cell's `props`, each `{method, ref}` with method `eq`,
  `ne`, `lt`, `le`, `gt`, `ge` or `approx:<tolerance>`; props `value` (the stored
  value: numbers and dates as floats, as the file keeps them), `merge` (inside a
  merged range, not its first cell), `bgcolor`/`fgcolor`, `font_color`,
  `font_bold`, `font_italic`, `font_underline`, `font_name`, `font_size`,
  `number_format`.
- `sheet_print` (7): the sheets as printed, read from the CSV exports beside
  each workbook (`<workbook stem>-<sheet name>.csv`, what a task's postconfig
  makes with LibreOffice), lines stripped, trailing blank lines dropped,
  `ignore_case` optional.
- `sheet_fuzzy` (5): cells of `range`s compared one by one by sub-rules of type
  `exact_match`, `includes`, `included_by` or `fuzzy_match` (`threshold`, default
  85, rapidfuzz's ratio), after `normalization` pairs, `trim_leadings`,
  `trim_trailings`, `ignore_chars` and `ignore_case`.
- `style` (2): the listed `props` (as for `check_cell`) of every cell equal. A
  sheet with conditional formatting is refused: its rules are not evaluated here.
- `sheet_name` (2): the workbooks' sheet names equal, in order.
- `freeze` (1): the frozen rows and columns equal (the pane's split, not where it
  was scrolled to).
- `zoom` (1): the sheet's zoom (100 when unset) against `{method, ref}`.
- `row_props` (1): the listed row `props` (`hidden`, `height`, `collapsed`) of
  every row the file describes equal.
- `chart` (5): the sheets' charts, matched by the cell ranges their series
  read, with the listed `chart_props` (`type`, `title`, `direction`, `legend`,
  `xtitle`, `ytitle`) equal.
- `data_validation` (1): at least as many validations in the sheet as
  `dv_props` describes, and each one matching one description: attributes
  (`ranges`, `type`, `formula1`, `operator` ...) against `{method, ref}`, where
  method may also be `spreadsheet_range` (the validated cells cover `ref[0]` and
  stay within `ref[1]`) or `str_set_eq`/`str_list_eq` (a list validation's items).

Not implemented, and refused with an error naming them (so a task using one is
reported as not runnable, never mis-scored): `pivot_table` (5), and `sparkline`,
`filter`, `col_props` (unused), any other rule type, prop, method or option key.
`unsupported_options(func_name, options)` lists those names without opening a file.
"""

from __future__ import annotations

import datetime as dt
import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import existing_file, is_note, library, opened, refuse

_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
            "gt": operator.gt, "ge": operator.ge}
_STYLE_PROPS = {"merge", "bgcolor", "fgcolor", "font_color", "font_bold", "font_italic", "font_underline",
                "font_name", "font_size", "number_format"}
_ROW_PROPS = {"hidden", "height", "collapsed"}
_CHART_PROPS = {"type", "title", "direction", "legend", "xtitle", "ytitle"}
_DV_ATTRS = {"ranges", "sqref", "type", "formula1", "formula2", "operator", "allow_blank", "allowBlank", "showDropDown",
             "showErrorMessage", "showInputMessage", "errorStyle", "error", "errorTitle", "prompt", "promptTitle"}
_DV_METHODS = {"spreadsheet_range", "str_list_eq", "str_set_eq"}
_FUZZY_TYPES = {"exact_match", "includes", "included_by", "fuzzy_match"}
_FUZZY_KEYS = {"type", "range", "threshold", "normalization", "trim_leadings", "trim_trailings", "ignore_chars",
               "ignore_case"}
# rule type -> the keys it reads (besides "type")
_RULE_KEYS = {
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
}
# rule type -> the keys it cannot do without
_RULE_REQUIRED = {"sheet_data": ("sheet_idx0", "sheet_idx1"), "sheet_print": ("sheet_idx0", "sheet_idx1"),
                  "sheet_fuzzy": ("sheet_idx0", "sheet_idx1", "rules"), "check_cell": ("sheet_idx", "coordinate", "props"),
                  "style": ("sheet_idx0", "sheet_idx1"), "freeze": ("sheet_idx0", "sheet_idx1"),
                  "zoom": ("sheet_idx", "method", "ref"), "row_props": ("sheet_idx0", "sheet_idx1"),
                  "chart": ("sheet_idx0", "sheet_idx1"), "data_validation": ("sheet_idx", "dv_props")}
_CSV_OPTIONS = {"strict", "ignore_case"}
_CELL = re.compile(r"\$?[A-Z]{1,3}\$?[1-9][0-9]{0,6}")


# ---- which options a task may use ----------------------------------------------------------------------------

def _method_problem(where: str, rule: Any) -> list[str]:
    if not isinstance(rule, dict) or "method" not in rule or "ref" not in rule:
        return [f"{where} (not a {{method, ref}} object)"]
    method = rule["method"]
    if method in _COMPARE:
        return []
    if isinstance(method, str) and method.startswith("approx:"):
        try:
            float(method.split(":", 1)[1])
            return []
        except ValueError:
            pass
    return [f"{where}.method={method}"]


def _rule_problems(i: int, rule: Any) -> list[str]:
    where = f"rules[{i}]"
    if not isinstance(rule, dict) or not isinstance(rule.get("type"), str):
        return [f"{where} (not an object with a type)"]
    kind = rule["type"]
    if kind not in _RULE_KEYS:
        return [f"{where}.type={kind}"]
    problems = [f"{where}.{k}" for k in rule if k != "type" and k not in _RULE_KEYS[kind] and not is_note(k)]
    missing = [f"{where}.{k} (missing)" for k in _RULE_REQUIRED.get(kind, ()) if k not in rule]
    if missing:
        return problems + missing
    if kind == "check_cell":
        if not isinstance(rule["coordinate"], str) or not _CELL.fullmatch(rule["coordinate"]):
            problems.append(f"{where}.coordinate={rule['coordinate']!r} (not a cell like B3)")
        props = rule.get("props")
        if not isinstance(props, dict):
            return problems + [f"{where}.props (not an object)"]
        for name, match in props.items():
            if name != "value" and name not in _STYLE_PROPS:
                problems.append(f"{where}.props.{name}")
            else:
                problems += _method_problem(f"{where}.props.{name}", match)
    elif kind in ("style", "row_props"):
        allowed = _STYLE_PROPS if kind == "style" else _ROW_PROPS
        props = rule.get("props", [])
        if not isinstance(props, list):
            return problems + [f"{where}.props (not a list)"]
        problems += [f"{where}.props.{p}" for p in props if p not in allowed]
    elif kind == "chart":
        props = rule.get("chart_props", [])
        if not isinstance(props, list):
            return problems + [f"{where}.chart_props (not a list)"]
        problems += [f"{where}.chart_props.{p}" for p in props if p not in _CHART_PROPS]
    elif kind == "data_validation":
        wanted = rule["dv_props"]
        if not isinstance(wanted, list) or not all(isinstance(w, dict) for w in wanted):
            return problems + [f"{where}.dv_props (not a list of objects)"]
        for j, attrs in enumerate(wanted):
            for attr, match in attrs.items():
                at = f"{where}.dv_props[{j}].{attr}"
                if attr not in _DV_ATTRS:
                    problems.append(at)
                elif isinstance(match, dict) and match.get("method") in _DV_METHODS and "ref" in match:
                    continue
                else:
                    problems += _method_problem(at, match)
    elif kind == "zoom":
        problems += _method_problem(where, rule)
    elif kind == "sheet_fuzzy":
        subrules = rule.get("rules")
        if not isinstance(subrules, list):
            return problems + [f"{where}.rules (not a list)"]
        for j, sub in enumerate(subrules):
            at = f"{where}.rules[{j}]"
            if not isinstance(sub, dict) or sub.get("type") not in _FUZZY_TYPES:
                problems.append(f"{at}.type={sub.get('type')}" if isinstance(sub, dict) else f"{at} (not an object)")
                continue
            problems += [f"{at}.{k}" for k in sub if k not in _FUZZY_KEYS and not is_note(k)]
            ranges = sub.get("range")
            if not isinstance(ranges, list) or not all(isinstance(r, str) and all(_CELL.fullmatch(c) for c in r.split(":"))
                                                       for r in ranges):
                problems.append(f"{at}.range={ranges!r} (not a list of ranges like A1:B6)")
    return problems


def unsupported_options(func_name: str, options: dict[str, Any] | None) -> list[str]:
    """The options, rules, props and methods of one evaluator entry this module does not implement (empty: all
    supported). Raises KeyError for a metric this module does not define."""
    options = options or {}
    if func_name == "compare_csv":
        return [k for k in options if k not in _CSV_OPTIONS and not is_note(k)]
    if func_name != "compare_table":
        raise KeyError(func_name)
    problems = [k for k in options if k != "rules" and not is_note(k)]
    rules = options.get("rules")
    if not isinstance(rules, list):
        return problems + ["rules (not a list)"]
    for i, rule in enumerate(rules):
        problems += _rule_problems(i, rule)
    return problems


# ---- compare_csv ---------------------------------------------------------------------------------------------

def _text_lines(path: Path, what: str) -> list[str]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MetricError(f"the {what} cannot be read: {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:  # LibreOffice may export in the locale's 8-bit code page
        return data.decode("latin-1").splitlines()


def compare_csv(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result's lines equal those of the expected file (or of any one of a list of them)."""
    refuse("compare_csv", unsupported_options("compare_csv", options))
    if result is None:
        return 0.0
    mine = _text_lines(existing_file(result, "result"), "result")
    candidates = expected if isinstance(expected, (list, tuple)) else [expected]
    if not candidates:
        raise MetricError("compare_csv: no expected file")

    def norm(lines: list[str]) -> list[str]:
        if not options.get("strict", True):
            lines = [s.strip() for s in lines]
        if options.get("ignore_case", False):
            lines = [s.lower() for s in lines]
        return lines

    readable, missing = [], []
    for candidate in candidates:
        try:
            readable.append(_text_lines(existing_file(candidate, "expected"), "expected"))
        except MetricError as exc:
            missing.append(str(exc))
    if not readable:  # a missing gold file is the task's problem, not the agent's: say so
        raise MetricError(missing[0])
    return 1.0 if any(norm(mine) == norm(lines) for lines in readable) else 0.0


# ---- compare_table: the two workbooks ------------------------------------------------------------------------

class _Books:
    """The result and expected workbooks, each opened at most once per way of reading it."""

    def __init__(self, result: Path, expected: Path | None) -> None:
        self.paths = {"result": result, "expected": expected}
        self._cache: dict[tuple[str, str], Any] = {}

    def _load(self, side: str, how: str) -> Any:
        key = (side, how)
        if key not in self._cache:
            path = self.paths[side]
            if path is None:
                raise MetricError("compare_table: the rule names the expected workbook but the task gives none")
            if how == "frames":
                pd = library("pandas")
                self._cache[key] = opened(lambda p: pd.ExcelFile(p, engine="openpyxl"), path, side, "workbook")
            else:
                openpyxl = library("openpyxl")
                self._cache[key] = opened(lambda p: openpyxl.load_workbook(p, data_only=(how == "values")),
                                          path, side, "workbook")
        return self._cache[key]

    def names(self, side: str) -> list[str]:
        if (side, "frames") in self._cache and (side, "styles") not in self._cache:  # no second parse for names
            return list(self._cache[(side, "frames")].sheet_names)
        return list(self._load(side, "styles").sheetnames)

    def sheet(self, idx: Any) -> tuple[str, str | None]:
        """A task's sheet index → (side, sheet name); the name is None when a position is out of range."""
        if isinstance(idx, int) and not isinstance(idx, bool):
            side, pos = "result", idx
        elif isinstance(idx, str) and idx[:2] in ("RI", "RN", "EI", "EN"):
            side = "result" if idx[0] == "R" else "expected"
            if idx[1] == "N":
                return side, idx[2:]
            try:
                pos = int(idx[2:])
            except ValueError:
                raise MetricError(f"compare_table: bad sheet index {idx!r}") from None
        else:
            raise MetricError(f"compare_table: bad sheet index {idx!r} (an int, RI<n>, RN<name>, EI<n> or EN<name>)")
        names = self.names(side)
        return side, names[pos] if 0 <= pos < len(names) else None

    def worksheet(self, idx: Any, how: str = "styles") -> Any:
        """The openpyxl sheet (`how`: "styles" keeps formulas, "values" reads their stored results), or None."""
        side, name = self.sheet(idx)
        book = self._load(side, how)
        return book[name] if name in book.sheetnames else None

    def frame(self, idx: Any) -> Any:
        side, name = self.sheet(idx)
        frames = self._load(side, "frames")
        if name not in frames.sheet_names:
            return None
        pd = library("pandas")
        return opened(lambda _: pd.read_excel(frames, sheet_name=name), self.paths[side], side, f"sheet {name!r}")

    def printed(self, idx: Any) -> list[str] | None:
        side, name = self.sheet(idx)
        if name is None:
            return None
        book = self.paths[side]
        csv = book.with_name(f"{book.stem}-{name}.csv")
        lines = _text_lines(existing_file(csv, f"{side} sheet's CSV export"), side)
        lines = [s.strip() for s in lines]
        while lines and not lines[-1]:
            lines.pop()
        return lines


def _stored_value(cell: Any) -> Any:
    """A cell's value as the file stores it: numbers and dates as floats (an xlsx keeps dates as serial numbers)."""
    value = cell.value
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        from openpyxl.utils.datetime import to_excel
        return float(to_excel(value))
    return value


def _cell_value(ws: Any, coordinate: str) -> Any:
    return None if ws is None else _stored_value(ws[coordinate])


def _style(prop: str, cell: Any) -> Any:
    """One style property of a cell, read as OSWorld's checker reads it (font properties only of non-empty cells)."""
    if prop == "merge":
        return type(cell).__name__ == "MergedCell"
    if prop in ("bgcolor", "fgcolor"):  # the solid fill's colour is its foreground colour in an xlsx
        return getattr(cell.fill.fgColor, "rgb", None)
    if cell.value is None:
        return None
    if prop == "number_format":
        return cell.number_format if cell.data_type == "n" else None
    font = cell.font
    return {"font_color": lambda: getattr(font.color, "rgb", None) if font.color is not None else None,
            "font_bold": lambda: font.bold, "font_italic": lambda: font.italic,
            "font_underline": lambda: font.underline, "font_name": lambda: font.name,
            "font_size": lambda: font.size}[prop]()


def _matches(value: Any, rule: dict[str, Any]) -> bool:
    method, ref = rule["method"], rule["ref"]
    if method.startswith("approx:"):
        try:
            return abs(float(value) - float(ref)) <= float(method.split(":", 1)[1])
        except (TypeError, ValueError):
            return False
    try:
        return bool(_COMPARE[method](value, ref))
    except TypeError:  # e.g. None < 5: the cell does not hold what the rule compares
        return False


# ---- compare_table: the rules --------------------------------------------------------------------------------

def _sheet_name(books: _Books, rule: dict) -> bool:
    return books.names("result") == books.names("expected")


def _sheet_data(books: _Books, rule: dict) -> bool:
    a, b = books.frame(rule["sheet_idx0"]), books.frame(rule["sheet_idx1"])
    if a is None or b is None:
        return False
    digits = rule.get("precision", 4)
    return bool(a.round(digits).equals(b.round(digits)))


def _sheet_print(books: _Books, rule: dict) -> bool:
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


def _sheet_fuzzy(books: _Books, rule: dict) -> bool:
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.cell_range import MultiCellRange

    ws_a, ws_b = books.worksheet(rule["sheet_idx0"], "values"), books.worksheet(rule["sheet_idx1"], "values")
    for sub in rule["rules"]:
        for rng in MultiCellRange(" ".join(sub["range"])):
            for row, col in rng.cells:
                coordinate = f"{get_column_letter(col)}{row}"
                a = _fuzzy_text(_cell_value(ws_a, coordinate), sub)
                b = _fuzzy_text(_cell_value(ws_b, coordinate), sub)
                kind = sub["type"]
                if kind == "exact_match":
                    ok = a == b
                elif kind == "includes":
                    ok = b in a
                elif kind == "included_by":
                    ok = a in b
                else:
                    ok = library("rapidfuzz").fuzz.ratio(a, b) >= sub.get("threshold", 85.0)
                if not ok:
                    return False
    return True


def _check_cell(books: _Books, rule: dict) -> bool:
    ws = books.worksheet(rule["sheet_idx"])
    if ws is None:
        return False
    coordinate = rule["coordinate"]
    for prop, match in rule["props"].items():
        if prop == "value":
            value = _cell_value(books.worksheet(rule["sheet_idx"], "values"), coordinate)
        else:
            value = _style(prop, ws[coordinate])
        if not _matches(value, match):
            return False
    return True


def _styles(ws: Any, props: list[str], side: str) -> dict[str, list[Any]]:
    if ws is None:
        return {}
    if list(ws.conditional_formatting):
        raise MetricError(f"compare_table: the {side} sheet {ws.title!r} has conditional formatting, "
                          "which this checker does not evaluate")
    return {cell.coordinate: [_style(p, cell) for p in props] for col in ws.iter_cols() for cell in col}


def _style_rule(books: _Books, rule: dict) -> bool:
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


def _freeze(books: _Books, rule: dict) -> bool:
    a, b = books.worksheet(rule["sheet_idx0"]), books.worksheet(rule["sheet_idx1"])
    if a is None or b is None:
        return False
    return _freeze_key(a) == _freeze_key(b)


def _zoom(books: _Books, rule: dict) -> bool:
    ws = books.worksheet(rule["sheet_idx"])
    if ws is None:
        return False
    return _matches(ws.sheet_view.zoomScale or 100.0, rule)


def _rows(ws: Any, props: list[str]) -> dict[int, dict[str, Any]]:
    if ws is None:
        return {}
    return {idx: {p: getattr(dim, p) for p in props} for idx, dim in ws.row_dimensions.items()}


def _row_props(books: _Books, rule: dict) -> bool:
    props = rule.get("props", [])
    return _rows(books.worksheet(rule["sheet_idx0"]), props) == _rows(books.worksheet(rule["sheet_idx1"]), props)


def _first_run_text(title: Any) -> Any:
    """A chart or axis title's text as its first run holds it (None when it has none)."""
    try:
        return title.tx.rich.p[0].r[0].t
    except (AttributeError, IndexError, TypeError):
        return None


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
        facts = {"type": lambda: chart.tagname, "title": lambda: _first_run_text(chart.title),
                 "direction": lambda: getattr(chart, "barDir", None),
                 "legend": lambda: chart.legend.position if chart.legend is not None else None,
                 "xtitle": lambda: _first_run_text(getattr(chart.x_axis, "title", None)),
                 "ytitle": lambda: _first_run_text(getattr(chart.y_axis, "title", None))}
        out[key] = {p: facts[p]() for p in props}
    return out


def _chart(books: _Books, rule: dict) -> bool:
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
    return _matches(value, match)


def _data_validation(books: _Books, rule: dict) -> bool:
    ws = books.worksheet(rule["sheet_idx"])
    if ws is None:
        return False
    validations = list(ws.data_validations.dataValidation)
    wanted = rule["dv_props"]
    # as many validations as described, and each one in the sheet is one of those described
    return len(validations) >= len(wanted) and all(
        any(all(_dv_matches(getattr(dv, attr), match) for attr, match in attrs.items()) for attrs in wanted)
        for dv in validations)


_RULES: dict[str, Callable[[_Books, dict], bool]] = {
    "sheet_name": _sheet_name, "sheet_data": _sheet_data, "sheet_print": _sheet_print,
    "sheet_fuzzy": _sheet_fuzzy, "check_cell": _check_cell, "style": _style_rule, "freeze": _freeze,
    "zoom": _zoom, "row_props": _row_props, "chart": _chart, "data_validation": _data_validation,
}
assert set(_RULES) == set(_RULE_KEYS)


def compare_table(result: Any, expected: Any = None, **options: Any) -> float:
    """1 when every rule in `options["rules"]` holds between the result workbook and the expected one."""
    refuse("compare_table", unsupported_options("compare_table", options))
    if result is None:
        return 0.0
    books = _Books(existing_file(result, "result"),
                   None if expected is None else existing_file(expected, "expected"))
    for i, rule in enumerate(options["rules"]):
        try:
            holds = _RULES[rule["type"]](books, rule)
        except MetricError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a value of the wrong kind in the rule
            raise MetricError(f"compare_table: rules[{i}] ({rule['type']}) cannot be applied: "
                              f"{type(exc).__name__}: {exc}") from None
        if not holds:
            return 0.0
    return 1.0


METRICS: dict[str, Callable[..., float]] = {"compare_csv": compare_csv, "compare_table": compare_table}
