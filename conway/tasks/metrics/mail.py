"""Metrics on Thunderbird's profile files (`prefs.js`, `msgFilterRules.dat`), as OSWorld's thunderbird.py reads them.

The result is the path `vm_file` hands over. Where OSWorld's function raises (a preference value that is not JSON,
a rule that compares a number with a text, a filter line before its `name=`), its runner counts the metric as 0,
and so does this.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from conway.tasks.metrics.value_rules import rule_matches

PREF_LINE = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<val>.+)\);$')
"""One `user_pref("key", value);` line of prefs.js (OSWorld matches the stripped line against the same shape)."""
CONDITION = re.compile(r'\b(?:AND|OR) \([\w ]+,[\w \']+,(?:"(?:[^"]|")+"|[^)]+)\)|\bALL\b')
"""One term of a filter's `condition=` value: `AND (subject,contains,discount)`, or `ALL`."""
_CRASHES = (TypeError, ValueError, KeyError, AttributeError, IndexError, re.error, NotImplementedError,
            UnboundLocalError, OSError, UnicodeDecodeError)
"""What OSWorld's functions raise on odd input; each is a score of 0 here."""


def _lines(path: Any) -> list[str]:
    """The file's lines as Python's text mode gives them (universal newlines, ends kept)."""
    return io.StringIO(Path(path).read_bytes().decode("utf-8"), newline=None).readlines()


def _prefs_score(path: Any, rules: dict[str, Any]) -> float:
    expect, unexpect = rules.get("expect", {}), rules.get("unexpect", {})
    found = dict.fromkeys(expect, False)
    clean = True
    for line in _lines(path):
        match = PREF_LINE.match(line.strip())
        if match is None:
            continue
        key, value = match.group("key"), json.loads(match.group("val"))  # every pref is parsed, as OSWorld does
        if key in expect:
            found[key] = rule_matches(value, expect[key])
        elif key in unexpect:
            clean = clean and not rule_matches(value, unexpect[key])
    return float(all(found.values()) and clean)


def check_thunderbird_prefs(result: Any, rules: dict[str, Any]) -> float:
    """Every `expect` preference of prefs.js is set and matches its rule (the last line naming it decides), and no
    `unexpect` preference matches its rule (an unset one passes). No file scores 0."""
    if result is None:
        return 0.0
    try:
        return _prefs_score(result, rules)
    except _CRASHES:
        return 0.0


def _unquoted(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


_FILTER_FIELDS = (("name=", "name"), ("enabled=", "enabled"), ("type=", "type"), ("action=", "action"),
                  ("actionValue=", "actionValue"))


def _filters(path: Any) -> list[dict[str, Any]]:
    """Thunderbird's filters, each `{name, enabled, type, action, actionValue, condition: [terms]}`; a filter is
    complete at its `condition=` line (a quoted value per line, read as OSWorld slices it)."""
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in _lines(path):
        if line.startswith("name="):
            current = {"name": _unquoted(line[6:-2])}
            continue
        for prefix, field in _FILTER_FIELDS[1:]:
            if line.startswith(prefix):
                if current is None:  # OSWorld's filter_ is unbound here and its function raises
                    raise UnboundLocalError("a filter line before any name=")
                current[field] = _unquoted(line[len(prefix) + 1:-2])
        if line.startswith("condition="):
            if current is None:
                raise UnboundLocalError("a filter condition before any name=")
            current["condition"] = CONDITION.findall(_unquoted(line[11:-2]))
            filters.append(current)
    return filters


def _record_matches(pattern: dict[str, Any], item: dict[str, Any]) -> bool:
    return all(k in item and item[k] == v for k, v in pattern.items())


def check_thunderbird_filter(result: Any, rules: dict[str, Any]) -> float:
    """Each `expect` record matches some filter of msgFilterRules.dat (every key it names equal), and no filter
    matches an `unexpect` record. No file scores 0."""
    if result is None:
        return 0.0
    try:
        filters = _filters(result)
    except _CRASHES:
        return 0.0
    expect, unexpect = rules.get("expect", []), rules.get("unexpect", [])
    found = [any(_record_matches(r, f) for f in filters) for r in expect]
    clean = not any(_record_matches(r, f) for f in filters for r in unexpect)
    return float(all(found) and clean)


def _folder_key(path: Any, remove_duplicate: bool) -> str:
    """What OSWorld's check_thunderbird_folder keeps of a folder file. Its loop skips every piece of the text
    (split at `FROM - `) that is not blank, an inverted test, so only the blank pieces remain, each as a bare
    `FROM - `: one for an empty file or one that starts with `FROM - ` (more for back-to-back markers), at most one
    with `remove_duplicate` (the default). Its status and key options act on those blank pieces only: no effect."""
    text = "".join(_lines(path)).strip()
    blanks = sum(1 for piece in text.split("FROM - ") if not piece.strip())
    return "\n".join(["FROM - "] * (min(blanks, 1) if remove_duplicate else blanks))


def check_thunderbird_folder(result: Any, expected: Any, **options: Any) -> float:
    """Each result folder file matches its expected one as OSWorld's check_thunderbird_folder compares them
    (`_folder_key`); one file or lists of them, in pairs. A missing result scores 0; an unreadable file raises in
    OSWorld and scores 0 here."""
    if not isinstance(expected, list):
        result, expected = [result], [expected]
    dedupe = options.get("remove_duplicate", True)
    try:
        for pred, gold in zip(result, expected):
            if pred is None or _folder_key(pred, dedupe) != _folder_key(gold, dedupe):
                return 0.0
    except _CRASHES:
        return 0.0
    return 1.0


METRICS = {f.__name__: f for f in (check_thunderbird_prefs, check_thunderbird_filter, check_thunderbird_folder)}
