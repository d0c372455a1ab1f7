"""Metrics on files a getter returns by path (`vm_file`, `cloud_file`, `cache_file`): text, lists, JSON settings.

A path of None (the file was not there) scores 0; a file that cannot be read
raises, and the evaluator records that metric's error.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any


def _text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace")


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\t", " ").replace("\n", " ")).strip()


def compare_text_file(actual: str | None, expected: str, **options: Any) -> float:
    """The two files' text is equal; `ignore_blanks` folds runs of white space, `ignore_case` case."""
    if not actual:
        return 0.0
    a, b = _text(actual), _text(expected)
    if options.get("ignore_blanks", False):
        a, b = _squash(a), _squash(b)
    if options.get("ignore_case", False):
        a, b = a.lower(), b.lower()
    return float(a == b)


def diff_text_file(result: str | None, expected: str) -> float:
    """How alike the two files are, line by line, in [0, 1] (difflib's ratio)."""
    if result is None:
        return 0.0
    return difflib.SequenceMatcher(a=_text(result).splitlines(), b=_text(expected).splitlines()).ratio()


def file_contains(result: str | None, rules: dict[str, Any]) -> float:
    """Every text of `expected` occurs in the file; a file that cannot be read scores 0, as in OSWorld."""
    if not result:
        return 0.0
    try:
        text = _text(result)
    except OSError:
        return 0.0
    return float(all(t in text for t in rules["expected"]))


def check_list(result: str | None, rules: dict[str, Any]) -> float:
    """Each `expect` regular expression matches some line of the file, no `unexpect` one matches any."""
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    for line in _text(result).splitlines(keepends=True):
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
    except (OSError, json.JSONDecodeError):
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
    except OSError:
        return 0.0
    for candidate in (text, text.partition("\n")[2]):  # VS Code writes a `// …` line above the list
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, list):
            return float(expected["expected"] in data)
    return 0.0


METRICS = {f.__name__: f for f in (compare_text_file, diff_text_file, file_contains, check_list,
                                   check_json_settings, check_json_keybindings)}
