"""Metrics on a settings file read as a whole or by key: `compare_config` (OSWorld's vscode.py) and `check_json`
(its general.py), on the path `vm_file` hands over.

Where OSWorld's function raises (a file that is missing or not UTF-8, a rule its matcher cannot apply), its runner
counts 0, and so does this.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import yaml

from conway.tasks.metrics.value_rules import rule_matches

_CRASHES = (TypeError, ValueError, KeyError, AttributeError, IndexError, NotImplementedError, re.error)
"""What OSWorld's rule matching raises on a value it cannot compare; each is a score of 0."""


def _text(path: Any) -> str | None:
    """The file as Python's text mode reads it (UTF-8, newlines translated); None where that fails."""
    try:
        return io.StringIO(Path(path).read_bytes().decode("utf-8"), newline=None).read()
    except (OSError, TypeError, UnicodeDecodeError):
        return None


def _is_subset(expected: Any, actual: Any) -> bool:
    """Every key of an expected mapping is in the actual one with a value that is a subset in turn; anything else
    (lists included) must be equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _is_subset(v, actual[k]) for k, v in expected.items())
    return expected == actual


def _json_or_none(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def compare_config(result: Any, rules: dict[str, Any], **options: Any) -> float:
    """The settings file against `expected` text. `containment_ok` (default true): both JSON and the expected
    keys a subset of the file's; where either is not JSON, the stripped expected text is in the file. Else the
    text equal, or both JSON and equal. No file or no expected text scores 0."""
    expected = rules.get("expected")
    if not result or not expected:
        return 0.0
    actual = _text(result)
    if actual is None:
        return 0.0
    try:
        ok_actual, actual_json = _json_or_none(actual)
        ok_expected, expected_json = _json_or_none(expected)
    except TypeError:  # an expected value that is not text: OSWorld's json.loads raises outside its guard too
        return 0.0
    if options.get("containment_ok", True):
        if ok_actual and ok_expected:
            return float(_is_subset(expected_json, actual_json))
        return float(expected.strip() in actual)
    return float(actual == expected or (ok_actual and ok_expected and actual_json == expected_json))


def _load(text: str, is_yaml: bool) -> tuple[bool, Any]:
    """(whether OSWorld's check_json goes on, the file's data): not for unparsable text or an empty YAML document."""
    try:
        data = yaml.safe_load(text) if is_yaml else json.loads(text)
    except (yaml.YAMLError, ValueError):
        return False, None
    return not (is_yaml and data is None), data


def _walk(data: Any, keys: list[Any]) -> Any:
    for key in keys:
        data = data[key]  # KeyError / TypeError where the path is not there
    return data


def _score(data: Any, rules: dict[str, Any]) -> float:
    for rule in rules.get("expect", []):
        if not rule_matches(_walk(data, rule["key"]), rule):  # a missing key raises: 0, as OSWorld returns 0
            return 0.0
    for rule in rules.get("unexpect", []):
        try:
            value = _walk(data, rule["key"])
        except (KeyError, TypeError):  # an absent key is None to OSWorld's unexpect rules
            value = None
        if rule_matches(value, rule):
            return 0.0
    return 1.0


def check_json(result: Any, rules: dict[str, Any], is_yaml: bool = False) -> float:
    """Each `expect` rule (`key`: a path of keys and indexes, `method`, `ref`) matches the value at its path in the
    JSON (or, `is_yaml`, YAML) file, and no `unexpect` rule matches (an absent path is None there). A missing,
    unparsable or empty file scores 0."""
    text = _text(result) if result is not None else None
    if text is None:
        return 0.0
    ok, data = _load(text, is_yaml)
    if not ok:
        return 0.0
    try:
        return _score(data, rules)
    except _CRASHES:
        return 0.0


METRICS = {f.__name__: f for f in (compare_config, check_json)}
