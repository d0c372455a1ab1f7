"""OSWorld's `compare_conference_city_in_order` (1 task), written afresh on openpyxl (the `tasks` extra).

As OSWorld's function of that name (table.py): the cells C2:C22 of the
workbook's active sheet (stored values, formulas as their text) must each
contain, once normalised, one of the candidates at the same place of
`rules.expected` (a string or a list of strings). Normalising lower-cases,
drops accents and turns every run of other characters than a-z and 0-9 into
one space. An empty cell, a candidate that normalises to nothing, or fewer
than 21 expected entries score 0, as does a file openpyxl cannot open (where
OSWorld's raises and its runner counts 0).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import library


def normalised(value: Any) -> str:
    if value is None:
        return ""
    text = unicodedata.normalize("NFKD", value if isinstance(value, str) else str(value))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _matches(actual: Any, entry: Any) -> bool:
    if isinstance(entry, str):
        candidates = [entry]
    elif isinstance(entry, list):
        candidates = entry
    else:
        raise TypeError("an expected city is a string or a list of strings")  # OSWorld's raises too: 0
    cell = normalised(actual)
    return any((c := normalised(candidate)) and c in cell for candidate in candidates)


def compare_conference_city_in_order(result: Any, rules: dict[str, Any]) -> float:
    expected = rules["expected"]
    openpyxl = library("openpyxl")
    try:
        sheet = openpyxl.load_workbook(os.fspath(result)).active
        cities = [cell.value for row in sheet["C2:C22"] for cell in row]
        return 1.0 if all(_matches(city, expected[i]) for i, city in enumerate(cities)) else 0.0
    except MetricError:
        raise
    except Exception:  # unreadable workbook, too few expected entries, an entry of another type: 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {"compare_conference_city_in_order": compare_conference_city_in_order}
