"""Metrics on values a getter returns (command output, a rule, text): OSWorld's general comparisons.

`rules` is what the `rule` getter hands over (the task's `expected.rules`);
a result of None (a getter that found nothing) scores 0.
"""

from __future__ import annotations

import json
from typing import Any

from rapidfuzz import fuzz

FAILED_MARK = "__EVALUATION_FAILED__"
"""A value OSWorld's relative-time rule getter writes when it could not build the expected value."""


def exact_match(result: Any, rules: dict[str, Any]) -> float:
    return float(result == rules["expected"])


def match_in_list(result: Any, rules: dict[str, Any]) -> float:
    return float(result in rules["expected"])


def is_in_list(result: Any, rules: dict[str, Any]) -> float:
    """The expected value is among the result's items (match_in_list the other way round)."""
    if result is None:
        return 0.0
    return float(rules["expected"] in result)


def check_include_exclude(result: Any, rules: dict[str, Any]) -> float:
    """Every `include` text is in the result and no `exclude` text is."""
    if result is None:
        return 0.0
    include, exclude = rules.get("include", []), rules.get("exclude", [])
    return float(all(t in result for t in include) and not any(t in result for t in exclude))


def is_extension_installed(result: Any, rules: dict[str, Any], **options: Any) -> float:
    """The command's output contains (`type: contain`) or lacks (`type: not_contain`) `expected`."""
    if result is None:
        return 0.0
    if rules["type"] == "contain":
        return float(rules["expected"] in result)
    if rules["type"] == "not_contain":
        return float(rules["expected"] not in result)
    raise ValueError(f"is_extension_installed: unknown type {rules['type']!r} (contain or not_contain)")


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """Compared as text (`type: str`, the default) or item by item as text (`type: list`); `ignore_case`."""
    kind = options.get("type", "str")
    fold = (lambda s: str(s).lower()) if options.get("ignore_case", False) else str
    if kind == "str":
        return float(fold(result) == fold(expected))
    if kind == "list":
        if not isinstance(result, (list, tuple)) or not isinstance(expected, (list, tuple)):
            return 0.0
        return float([fold(x) for x in result] == [fold(x) for x in expected])
    raise ValueError(f"literal_match: unknown type {kind!r} (str or list)")


def fuzzy_match(result: Any, rules: dict[str, Any]) -> float:
    """Similarity in [0, 1] of the result to `expected` (rapidfuzz's ratio, as OSWorld's `fuzzy_match` in
    general.py). The values go to rapidfuzz as they are, never stringified: a list is compared item by item, and a
    number, which rapidfuzz rejects, crashes OSWorld's metric; a crash scores 0 here, as OSWorld's runner counts
    it (docs/checks.md)."""
    try:
        return fuzz.ratio(result, rules["expected"]) / 100.0
    except (TypeError, KeyError):  # rapidfuzz's refusals: TypeError for a number, KeyError for a mapping
        return 0.0


def _as_object(result: Any) -> Any:
    if isinstance(result, str):  # OSWorld reads single-quoted "JSON" too (Python reprs printed by a command)
        try:
            return json.loads(result.strip().replace("'", '"'))
        except json.JSONDecodeError:
            return None
    return result


def _contains(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, list):  # any one of the listed values, in a list or as the whole text
        return any((isinstance(actual, list) and w in actual) or (isinstance(actual, str) and w == actual)
                   for w in wanted)
    if isinstance(wanted, str):  # Python's `in`, as OSWorld: a substring of a text, a member of a list
        try:
            return wanted in actual
        except TypeError:  # OSWorld's `in` on None or a number raises; its metric catches that and scores 0
            return False
    return False


def _same(want: Any, have: Any, ignore_order: Any) -> bool:
    if not ignore_order:
        return want == have
    try:  # OSWorld sorts both sides of every key, the flag's own value too: sorted(True) fails, so the score is 0
        return sorted(want) == sorted(have)
    except TypeError:
        return False


def check_direct_json_object(result: Any, rules: dict[str, Any]) -> float:
    """Every key of `expected` has its value in the result object (JSON text or a mapping), as OSWorld's
    `check_direct_json_object` in general.py.

    `expect_in_result: true` (in the rules): a listed expected value means any one of them, a text means a
    substring (or a member of a listed result). `ignore_list_order` is read where OSWorld reads it, as a key
    inside `expected`: then every key, that one included, is compared sorted; at the rules' top level (where
    chrome/f5d96daf puts it) OSWorld ignores it, and so does this."""
    obj = _as_object(result)
    expected = rules.get("expected")
    if not isinstance(obj, dict) or not isinstance(expected, dict):
        return 0.0
    if any(v == FAILED_MARK for v in expected.values()):
        return 0.0
    in_result, ignore_order = rules.get("expect_in_result", False), expected.get("ignore_list_order", False)
    for key, want in expected.items():
        have = obj.get(key)
        if not (_contains(have, want) if in_result else _same(want, have, ignore_order)):
            return 0.0
    return 1.0


def infeasible(*_: Any, **__: Any) -> float:
    """An infeasible task is scored by the evaluator from the agent's last action (1 only for FAIL), before
    any metric runs; called as a metric it never passes."""
    return 0.0


METRICS = {f.__name__: f for f in (exact_match, match_in_list, is_in_list, check_include_exclude, literal_match,
                                   fuzzy_match, check_direct_json_object, is_extension_installed, infeasible)}
