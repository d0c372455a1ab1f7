"""Metrics on files a getter returns by path (`vm_file`, `cloud_file`, `cache_file`): text, lists, JSON settings.

A path of None (the file was not there) scores 0. Files are read as UTF-8, strictly, as OSWorld's
checkers read them (`open()` in a UTF-8 locale): a file that is not UTF-8 scores 0, whether OSWorld's
metric crashes on it (`compare_text_file`, `diff_text_file`, `check_list`: 0, as OSWorld's runner counts a
crash, docs/checks.md) or catches it (`file_contains`, the JSON ones). Any other file that cannot be read
(a missing expected file) raises, and the evaluator records that metric's error.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from pathlib import Path
from typing import Any


def _text(path: str) -> str:
    """The file's text (newlines translated, as Python's text mode does); UnicodeDecodeError on bytes that are not
    UTF-8: never replaced, or a file OSWorld cannot read would compare equal to its expected text."""
    return Path(path).read_text(encoding="utf-8")


def utf8_texts(*paths: str) -> list[str] | None:
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
    texts = utf8_texts(actual, expected)
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
    texts = utf8_texts(result, expected)
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
    texts = utf8_texts(result)
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
                                   check_json_settings, check_json_keybindings, check_csv)}
