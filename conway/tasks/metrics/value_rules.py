"""One `{method, ref}` rule against one value, as OSWorld's `_match_value_to_rule` (metrics/utils.py) reads it:
what `check_thunderbird_prefs` and `check_json` compare a setting with."""

from __future__ import annotations

import functools
import operator
import re
from typing import Any

_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
            "gt": operator.gt, "ge": operator.ge}


def rule_matches(value: Any, rule: dict[str, Any]) -> bool:
    """`value` against a `{method, ref}` rule as OSWorld's `_match_value_to_rule` (metrics/utils.py) reads it:
    `re[.FLAG...]` (a regex search), `eq`/`ne`/`lt`/`le`/`gt`/`ge`, `approx:<tolerance>`, `range.<l><r>` (`t`
    strict, `e` inclusive) and `str_list_eq`/`str_set_eq`. Raises where OSWorld's does (another method: it has no
    answer; `spreadsheet_range`, whose cell ranges no settings value holds, raises too)."""
    method, ref = rule["method"], rule["ref"]
    if method.startswith("re"):
        flags = functools.reduce(operator.or_, (getattr(re, f) for f in method.split(".")[1:]), re.RegexFlag(0))
        return re.search(ref, value, flags) is not None
    if method in _COMPARE:
        return bool(_COMPARE[method](value, ref))
    if method.startswith("approx"):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return False
        return abs(number - ref) <= float(method.split(":")[1])
    if method.startswith("range."):
        low, high = getattr(operator, "l" + method[6]), getattr(operator, "l" + method[7])
        return bool(low(ref[0], value) and high(value, ref[1]))
    if method in ("str_list_eq", "str_set_eq"):
        kind = list if method == "str_list_eq" else set
        return kind(value.strip("\"'").split(",")) == kind(ref)
    raise NotImplementedError(f"rule method {method!r}")
