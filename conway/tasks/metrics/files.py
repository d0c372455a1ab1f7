"""Metrics on files a getter returns by path (`vm_file`, `cloud_file`, `cache_file`): text, lists, JSON settings.

A path of None (the file was not there) scores 0. Files are read as UTF-8, strictly, as OSWorld's
checkers read them (`open()` in a UTF-8 locale): a file that is not UTF-8 scores 0, whether OSWorld's
metric crashes on it (`compare_text_file`, `diff_text_file`, `check_list`: 0, as OSWorld's runner counts a
crash, docs/checks.md) or catches it (`file_contains`, the JSON ones). Any other file that cannot be read
(a missing expected file) raises, and the evaluator records that metric's error.
"""

from __future__ import annotations

import builtins
import csv
import difflib
import functools
import io
import json
import operator
import re
from pathlib import Path
from typing import Any

import yaml

from conway.tasks.metrics.errors import UnsupportedOption
from conway.tasks.metrics.inputs import refuse


def _text(path: str) -> str:
    """The file's text (newlines translated, as Python's text mode does); UnicodeDecodeError on bytes that are not
    UTF-8: never replaced, or a file OSWorld cannot read would compare equal to its expected text."""
    return Path(path).read_text(encoding="utf-8")


def _utf8_texts(*paths: str) -> list[str] | None:
    """Each file's text, or None when one is not UTF-8: OSWorld's metric crashes there, and a crash scores 0."""
    try:
        return [_text(path) for path in paths]
    except UnicodeDecodeError:
        return None


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\t", " ").replace("\n", " ")).strip()


def compare_text_file(actual: str | None, expected: str, **options: Any) -> float:
    """The two files' text is equal; `ignore_blanks` folds runs of white space, `ignore_case` case."""
    if not actual:
        return 0.0
    texts = _utf8_texts(actual, expected)
    if texts is None:
        return 0.0
    a, b = texts
    if options.get("ignore_blanks", False):
        a, b = _squash(a), _squash(b)
    if options.get("ignore_case", False):
        a, b = a.lower(), b.lower()
    return float(a == b)


def diff_text_file(result: str | None, expected: str) -> float:
    """How alike the two files are, line by line, in [0, 1] (difflib's ratio)."""
    if result is None:
        return 0.0
    texts = _utf8_texts(result, expected)
    if texts is None:
        return 0.0
    return difflib.SequenceMatcher(a=texts[0].splitlines(), b=texts[1].splitlines()).ratio()


def file_contains(result: str | None, rules: dict[str, Any]) -> float:
    """Every text of `expected` occurs in the file; a file that cannot be read (missing, not UTF-8) scores 0, as
    OSWorld's `file_contains` (general.py) catches every failure and scores 0."""
    if not result:
        return 0.0
    try:
        text = _text(result)
        return float(all(t in text for t in rules["expected"]))
    except (OSError, ValueError, TypeError, KeyError):
        return 0.0


def check_list(result: str | None, rules: dict[str, Any]) -> float:
    """Each `expect` regular expression matches some line of the file, no `unexpect` one matches any. Lines are
    what iterating a text file gives, as OSWorld's `check_list` (general.py) reads them: split after each newline
    only, never at a form feed, vertical tab or Unicode line separator (which `str.splitlines` splits at)."""
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    texts = _utf8_texts(result)
    if texts is None:
        return 0.0
    for line in io.StringIO(texts[0], newline="\n"):
        found = [f or p.search(line) is not None for f, p in zip(found, expect)]
        if any(p.search(line) for p in unexpect):
            return 0.0
    return float(all(found))


def check_json_settings(actual: str | None, expected: dict[str, Any], **options: Any) -> float:
    """The JSON file (an editor's settings.json) holds every key of `expected.expected` with that value."""
    if not actual:
        return 0.0
    try:
        data = json.loads(_text(actual))
    except (OSError, ValueError):  # not JSON, or not UTF-8: OSWorld catches either and scores 0
        return 0.0
    if not isinstance(data, dict):
        return 0.0
    return float(all(k in data and data[k] == v for k, v in expected["expected"].items()))


def check_json_keybindings(actual: str | None, expected: dict[str, Any], **options: Any) -> float:
    """The JSON list in the file (an editor's keybindings.json, perhaps after one comment line) holds
    `expected.expected` as one of its entries."""
    if not actual:
        return 0.0
    try:
        text = _text(actual)
    except (OSError, ValueError):  # not UTF-8 too: OSWorld's loader catches it and scores 0
        return 0.0
    for candidate in (text, text.partition("\n")[2]):  # VS Code writes a `// …` line above the list
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, list):
            return float(expected["expected"] in data)
    return 0.0


def _rule_matches(value: Any, rule: dict[str, Any]) -> bool:
    """One `{"method", "ref"}` rule on a value, as OSWorld's `_match_value_to_rule` (utils.py) reads it for
    `check_json`: `re` (with `.FLAG` suffixes), `eq`/`ne`/`lt`/`le`/`gt`/`ge`, `approx:THRESHOLD`, `range.XY`
    (X, Y each `t` strict or `e` inclusive), `str_list_eq`/`str_set_eq`. Raises where OSWorld's raises
    (the caller scores that 0); `spreadsheet_range`, a cell-range rule no JSON task uses, is refused."""
    method = rule["method"]
    if method.startswith("re"):
        flags = functools.reduce(operator.or_, (getattr(re, f) for f in method.split(".")[1:]), re.RegexFlag(0))
        return re.search(rule["ref"], value, flags) is not None
    if method in {"eq", "ne", "le", "lt", "ge", "gt"}:
        return getattr(operator, method)(value, rule["ref"])
    if method.startswith("approx"):
        threshold = float(method.split(":")[1])
        try:
            number = float(value)
        except (ValueError, TypeError):
            return False
        return abs(number - rule["ref"]) <= threshold
    if method == "spreadsheet_range":
        refuse("check_json", ["method spreadsheet_range"])
    if method.startswith("range."):
        low, high = getattr(operator, "l" + method[6]), getattr(operator, "l" + method[7])
        return low(rule["ref"][0], value) and high(value, rule["ref"][1])
    if method in {"str_list_eq", "str_set_eq"}:
        container = getattr(builtins, method[4:-3])
        return container(value.strip("\"'").split(",")) == container(rule["ref"])
    raise NotImplementedError(method)


def _at(data: Any, keys: Any, missing: Any) -> Any:
    """The value under the key path, or `missing` where a key is absent or the value cannot be indexed by it."""
    for key in keys:
        try:
            data = data[key]
        except (KeyError, TypeError):
            return missing
    return data


_ABSENT = object()


def check_json(result: str | None, rules: dict[str, Any], **options: Any) -> float:
    """1 when every `expect` rule matches the value at its key path in the JSON (or, with `is_yaml`, YAML) file
    and no `unexpect` rule matches its own (a missing key there counts as None); 0 when the file is absent or
    unreadable, an `expect` key is missing, or a rule raises, as OSWorld's `check_json` (general.py) scores."""
    refuse("check_json", [k for k in options if k != "is_yaml" and not k.startswith("_")])
    if result is None or not Path(result).exists():
        return 0.0
    try:
        text = _text(result)
        data = yaml.safe_load(text) if options.get("is_yaml") else json.loads(text)
    except Exception:  # not UTF-8, not JSON or YAML: OSWorld catches each and scores 0
        return 0.0
    if options.get("is_yaml") and data is None:
        return 0.0
    try:
        for rule in rules.get("expect", {}):
            value = _at(data, rule["key"], _ABSENT)
            if value is _ABSENT or not _rule_matches(value, rule):
                return 0.0
        for rule in rules.get("unexpect", {}):
            if _rule_matches(_at(data, rule["key"], None), rule):
                return 0.0
    except UnsupportedOption:
        raise
    except Exception:  # a rule that raises (a regex on a number, an unknown method): OSWorld catches it, 0
        return 0.0
    return 1.0


def check_csv(result: str | None, rules: dict[str, Any]) -> float:
    """1 when each `expect` pattern (column -> value) matches some row of the CSV file (read with its header
    row) and no `unexpect` pattern matches any row, as OSWorld's `check_csv` (general.py) reads it; a file that
    is missing or not UTF-8 scores 0 (OSWorld's crashes)."""
    if result is None:
        return 0.0
    try:
        with open(result, encoding="utf-8") as f:  # no newline="": opened as OSWorld opens it
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return 0.0

    def matches(pattern: dict[str, Any], row: dict[str, Any]) -> bool:
        return all(k in row and row[k] == v for k, v in pattern.items())

    expected = all(any(matches(p, row) for row in rows) for p in rules.get("expect", []))
    unexpected = any(matches(p, row) for p in rules.get("unexpect", []) for row in rows)
    return 1.0 if expected and not unexpected else 0.0


METRICS = {f.__name__: f for f in (compare_text_file, diff_text_file, file_contains, check_list,
                                   check_json_settings, check_json_keybindings, check_json, check_csv)}
