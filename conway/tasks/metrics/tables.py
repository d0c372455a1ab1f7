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
  value read from the file's XML as OSWorld reads it, `cell_xml.py`: numbers and
  dates as floats, booleans as None, the sheet file named by its `sheetId`), `merge` (inside a
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
  `font_color` of a non-empty cell whose font has no colour scores 0 (OSWorld's
  checker raises there; docs/checks.md lists such cases).
- `sheet_name` (2): the workbooks' sheet names equal, in order.
- `freeze` (1): the frozen rows and columns equal (the pane's split, not where it
  was scrolled to).
- `zoom` (1): the sheet's zoom (100 when unset) against `{method, ref}`.
- `row_props` (1): the listed row `props` (`hidden`, `height`, `collapsed`) of
  every row the file describes equal.
- `chart` (5): the sheets' charts, matched by the cell ranges their series
  read, with the listed `chart_props` (`type`, `title`, `direction`, `legend`,
  `xtitle`, `ytitle`) equal; a title that is missing (a pie chart's axes) reads
  None, `direction` of a chart that has none scores 0 (OSWorld's raises).
- `data_validation` (1): at least as many validations in the sheet as
  `dv_props` describes, and each one matching one description: attributes
  (`ranges`, `type`, `formula1`, `operator` ...) against `{method, ref}`, where
  method may also be `spreadsheet_range` (the validated cells cover `ref[0]` and
  stay within `ref[1]`) or `str_set_eq`/`str_list_eq` (a list validation's items).

- `pivot_table` (5): the sheets' pivot tables, matched by the cells they
  summarise, with the listed `pivot_props` equal: `row_fields`, `col_fields`,
  `data_fields` (field, summary function, shown-as; its name too with
  `data_fields_name`), `filter` (the page fields and each field's chosen items),
  `selection` (`ordered` keeps their order), `name`, `show_total`,
  `show_empty_row`, `show_empty_col`, `show_headers`.

Not implemented, and refused with an error naming them (so a task using one is
reported as not runnable, never mis-scored): `sparkline`, `filter`,
`col_props` (no task uses them), any other rule type, prop, method or option key.
`unsupported_options(func_name, options)` lists those names without opening a file.

Of OSWorld's evaluators, all 62 `compare_table` and all 4 `compare_csv` use
only what is supported here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from conway.tasks.metrics.errors import MetricError, ScoredZeroAsOSWorld
from conway.tasks.metrics.inputs import existing_file, is_note, refuse
from conway.tasks.metrics.table_rules import (
    CHART_PROPS,
    DV_ATTRS,
    DV_METHODS,
    FUZZY_KEYS,
    FUZZY_TYPES,
    PIVOT_PROPS,
    ROW_PROPS,
    RULE_KEYS,
    RULE_REQUIRED,
    RULES,
)
from conway.tasks.metrics.workbooks import COMPARE, STYLE_PROPS, Books, text_lines

_CSV_OPTIONS = {"strict", "ignore_case"}
_CELL = re.compile(r"\$?[A-Z]{1,3}\$?[1-9][0-9]{0,6}")

# ---- which options a task may use ----------------------------------------------------------------------------

def _method_problem(where: str, rule: Any) -> list[str]:
    if not isinstance(rule, dict) or "method" not in rule or "ref" not in rule:
        return [f"{where} (not a {{method, ref}} object)"]
    method = rule["method"]
    if method in COMPARE:
        return []
    if isinstance(method, str) and method.startswith("approx:"):
        try:
            float(method.split(":", 1)[1])
            return []
        except ValueError:
            pass
    return [f"{where}.method={method}"]


def _cell_rule(where: str, rule: dict[str, Any]) -> list[str]:
    problems = []
    if not isinstance(rule["coordinate"], str) or not _CELL.fullmatch(rule["coordinate"]):
        problems.append(f"{where}.coordinate={rule['coordinate']!r} (not a cell like B3)")
    props = rule.get("props")
    if not isinstance(props, dict):
        return problems + [f"{where}.props (not an object)"]
    for name, match in props.items():
        if name != "value" and name not in STYLE_PROPS:
            problems.append(f"{where}.props.{name}")
        else:
            problems += _method_problem(f"{where}.props.{name}", match)
    return problems


def _listed_props(key: str, allowed: Collection[str]) -> Callable[[str, dict[str, Any]], list[str]]:
    """The check of a rule whose `key` lists the properties to compare, each one of `allowed`."""
    def check(where: str, rule: dict[str, Any]) -> list[str]:
        props = rule.get(key, [])
        if not isinstance(props, list):
            return [f"{where}.{key} (not a list)"]
        return [f"{where}.{key}.{p}" for p in props if p not in allowed]
    return check


def _validation_rule(where: str, rule: dict[str, Any]) -> list[str]:
    wanted = rule["dv_props"]
    if not isinstance(wanted, list) or not all(isinstance(w, dict) for w in wanted):
        return [f"{where}.dv_props (not a list of objects)"]
    problems = []
    for j, attrs in enumerate(wanted):
        for attr, match in attrs.items():
            at = f"{where}.dv_props[{j}].{attr}"
            if attr not in DV_ATTRS:
                problems.append(at)
            elif not (isinstance(match, dict) and match.get("method") in DV_METHODS and "ref" in match):
                problems += _method_problem(at, match)
    return problems


def _fuzzy_rule(where: str, rule: dict[str, Any]) -> list[str]:
    subrules = rule.get("rules")
    if not isinstance(subrules, list):
        return [f"{where}.rules (not a list)"]
    problems = []
    for j, sub in enumerate(subrules):
        at = f"{where}.rules[{j}]"
        if not isinstance(sub, dict) or sub.get("type") not in FUZZY_TYPES:
            problems.append(f"{at}.type={sub.get('type')}" if isinstance(sub, dict) else f"{at} (not an object)")
            continue
        problems += [f"{at}.{k}" for k in sub if k not in FUZZY_KEYS and not is_note(k)]
        ranges = sub.get("range")
        if not isinstance(ranges, list) or not all(isinstance(r, str) and all(_CELL.fullmatch(c) for c in r.split(":"))
                                                   for r in ranges):
            problems.append(f"{at}.range={ranges!r} (not a list of ranges like A1:B6)")
    return problems


RULE_CHECKS: dict[str, Callable[[str, dict[str, Any]], list[str]]] = {
    "check_cell": _cell_rule, "style": _listed_props("props", STYLE_PROPS),
    "row_props": _listed_props("props", ROW_PROPS),
    "chart": _listed_props("chart_props", CHART_PROPS), "pivot_table": _listed_props("pivot_props", PIVOT_PROPS),
    "data_validation": _validation_rule, "zoom": _method_problem, "sheet_fuzzy": _fuzzy_rule,
}
"""A rule type's own checks of its values, past its keys (a type without an entry has none)."""


def _rule_problems(i: int, rule: Any) -> list[str]:
    where = f"rules[{i}]"
    if not isinstance(rule, dict) or not isinstance(rule.get("type"), str):
        return [f"{where} (not an object with a type)"]
    kind = rule["type"]
    if kind not in RULE_KEYS:
        return [f"{where}.type={kind}"]
    problems = [f"{where}.{k}" for k in rule if k != "type" and k not in RULE_KEYS[kind] and not is_note(k)]
    missing = [f"{where}.{k} (missing)" for k in RULE_REQUIRED.get(kind, ()) if k not in rule]
    if missing:
        return problems + missing
    check = RULE_CHECKS.get(kind)
    return problems + (check(where, rule) if check else [])


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


# ---- the metrics ---------------------------------------------------------------------------------------------

def compare_csv(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result's lines equal those of the expected file (or of any one of a list of them)."""
    refuse("compare_csv", unsupported_options("compare_csv", options))
    if result is None:
        return 0.0
    mine = text_lines(existing_file(result, "result"), "result")
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
            readable.append(text_lines(existing_file(candidate, "expected"), "expected"))
        except MetricError as exc:
            missing.append(str(exc))
    if not readable:  # a missing gold file is the task's problem, not the agent's: say so
        raise MetricError(missing[0])
    return 1.0 if any(norm(mine) == norm(lines) for lines in readable) else 0.0


def compare_table(result: Any, expected: Any = None, **options: Any) -> float:
    """1 when every rule in `options["rules"]` holds between the result workbook and the expected one."""
    refuse("compare_table", unsupported_options("compare_table", options))
    if result is None:
        return 0.0
    books = Books(existing_file(result, "result"),
                   None if expected is None else existing_file(expected, "expected"))
    for i, rule in enumerate(options["rules"]):
        try:
            holds = RULES[rule["type"]](books, rule)
        except MetricError:
            raise
        except ScoredZeroAsOSWorld:  # OSWorld's own metric raises here, and its runner counts that 0
            return 0.0
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a value of the wrong kind in the rule
            raise MetricError(f"compare_table: rules[{i}] ({rule['type']}) cannot be applied: "
                              f"{type(exc).__name__}: {exc}") from None
        if not holds:
            return 0.0
    return 1.0


METRICS: dict[str, Callable[..., float]] = {"compare_csv": compare_csv, "compare_table": compare_table}
