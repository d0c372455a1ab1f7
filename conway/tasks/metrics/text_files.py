"""OSWorld's small text-file comparisons (one to three tasks each), written afresh on the standard library.

Each mirrors OSWorld's function of the same name; files are read as UTF-8,
strictly, and a file that is missing or not UTF-8 scores 0 (OSWorld's catches
it, or crashes and its runner counts 0).

- `compare_result_files(result, expected)` (vscode.py): the two files' texts,
  stripped; when the expected one is a number, 1 if it occurs in the result's
  text or the result's is a number within 1e-4 of it; otherwise 1 when equal.
- `compare_python_pure_text(result, expected)` (general.py): the two source
  files equal once a shebang or coding line among the first three is
  dropped, blank lines removed, tabs expanded to 4 and line ends stripped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conway.tasks.metrics.files import utf8_texts


def _pair(result: Any, expected: Any) -> list[str] | None:
    """Both files' texts, read strictly as UTF-8 (`files.utf8_texts`); None when either is not given, missing,
    not a path or not UTF-8: each scores 0 here."""
    if not result or not expected:
        return None
    try:
        return utf8_texts(result, expected)
    except (OSError, TypeError):
        return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def compare_result_files(result: Any, expected: Any) -> float:
    texts = _pair(result, expected)
    if texts is None:
        return 0.0
    mine, gold = (text.strip() for text in texts)
    gold_number = _number(gold)
    if gold_number is None:
        return 1.0 if mine == gold else 0.0
    if gold in mine:  # the result may say the number in a sentence
        return 1.0
    mine_number = _number(mine)
    if mine_number is None:  # OSWorld's float() raises here and it falls back to equality, already ruled out
        return 0.0
    return 1.0 if abs(mine_number - gold_number) < 1e-4 else 0.0


_METADATA = ("#!", "# -*- coding:", "# coding:", "# coding=")


def _pure_source(text: str) -> str:
    lines = text.splitlines()
    start = 0
    while start < min(3, len(lines)) and lines[start].strip().startswith(_METADATA):
        start += 1
    return "\n".join(line.expandtabs(4).rstrip() for line in lines[start:] if line.strip())


def compare_python_pure_text(result: Any, expected: Any) -> float:
    texts = _pair(result, expected)
    if texts is None:
        return 0.0
    mine, gold = texts
    return 1.0 if _pure_source(mine) == _pure_source(gold) else 0.0


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    compare_result_files, compare_python_pure_text)}
