"""Each value metric with an input that passes and one that fails, on OSWorld's own rule shapes."""

from __future__ import annotations

import pytest

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.values import (
    check_direct_json_object,
    check_include_exclude,
    exact_match,
    fuzzy_match,
    infeasible,
    literal_match,
    match_in_list,
)


def test_exact_match():
    assert exact_match("Directory exists.\n", {"expected": "Directory exists.\n"}) == 1.0
    assert exact_match("Directory exists.", {"expected": "Directory exists.\n"}) == 0.0


def test_match_in_list():
    assert match_in_list("Dark", {"expected": ["Dark", "Black"]}) == 1.0
    assert match_in_list("Light", {"expected": ["Dark", "Black"]}) == 0.0


def test_check_include_exclude():
    rules = {"include": ["Large text enabled"], "exclude": ["error"]}
    assert check_include_exclude("Large text enabled (factor: 1.5)\n", rules) == 1.0
    assert check_include_exclude("Large text enabled, error\n", rules) == 0.0
    assert check_include_exclude("No text scaling enabled\n", rules) == 0.0
    assert check_include_exclude(None, rules) == 0.0


def test_literal_match_as_text_and_as_lists():
    assert literal_match(42, "42") == 1.0
    assert literal_match("Hello", "hello") == 0.0
    assert literal_match("Hello", "hello", ignore_case=True) == 1.0
    assert literal_match(["A", 1], ["a", "1"], type="list", ignore_case=True) == 1.0
    assert literal_match(["A", 1], ["a"], type="list", ignore_case=True) == 0.0
    assert literal_match("A", ["A"], type="list") == 0.0
    with pytest.raises(ValueError, match="unknown type 'set'"):
        literal_match("a", "a", type="set")


def test_fuzzy_match_is_a_ratio():
    assert fuzzy_match("hello world", {"expected": "hello world"}) == 1.0
    assert 0.8 < fuzzy_match("hello wrld", {"expected": "hello world"}) < 1.0
    assert fuzzy_match("abc", {"expected": "xyz"}) == 0.0
    assert fuzzy_match(None, {"expected": "xyz"}) == 0.0


def test_fuzzy_match_hands_the_values_to_rapidfuzz_unchanged():
    """OSWorld's fuzzy_match (general.py) passes its result to rapidfuzz as it is: a number crashes it, and a
    list is compared item by item. Stringifying scored 1 where OSWorld's evaluation crashes (a 0 here)."""
    assert fuzzy_match(42, {"expected": "42"}) == 0.0  # OSWorld crashes: scored 0, as its runner counts it
    assert fuzzy_match(4.2, {"expected": "4.2"}) == 0.0
    assert fuzzy_match("42", {"expected": 42}) == 0.0
    assert fuzzy_match(["a", "b"], {"expected": "ab"}) == 1.0  # items compared one by one, not "['a', 'b']"


def test_check_direct_json_object_compares_each_expected_key():
    rules = {"expected": {"locationName": "Zürich", "sortBy": "PRICE"}}
    assert check_direct_json_object({"locationName": "Zürich", "sortBy": "PRICE", "other": 1}, rules) == 1.0
    assert check_direct_json_object({"locationName": "Zürich", "sortBy": "NAME"}, rules) == 0.0
    assert check_direct_json_object("{'locationName': 'Zürich', 'sortBy': 'PRICE'}\n", rules) == 1.0  # a printed dict
    assert check_direct_json_object("not json", rules) == 0.0
    assert check_direct_json_object(None, rules) == 0.0


def test_check_direct_json_object_options():
    assert check_direct_json_object({"a": "x/manchester/y"}, {"expected": {"a": "/manchester/"},
                                                             "expect_in_result": True}) == 1.0
    assert check_direct_json_object({"a": "x/leeds/y"}, {"expected": {"a": "/manchester/"},
                                                         "expect_in_result": True}) == 0.0
    assert check_direct_json_object({"a": ["p", "q"]}, {"expected": {"a": ["z", "q"]}, "expect_in_result": True}) == 1.0
    assert check_direct_json_object({"a": [2, 1]}, {"expected": {"a": [1, 2]}}) == 0.0
    assert check_direct_json_object({"a": 1}, {"expected": {"a": "__EVALUATION_FAILED__"}}) == 0.0
    assert check_direct_json_object({"a": ["p", "q"]}, {"expected": {"a": "q"}, "expect_in_result": True}) == 1.0
    assert check_direct_json_object({"a": None}, {"expected": {"a": "q"}, "expect_in_result": True}) == 0.0


def test_check_direct_json_object_reads_ignore_list_order_where_osworld_does():
    """OSWorld reads the flag from inside `expected`, never from the rules' top level (where the real task
    chrome/f5d96daf puts it, so there the order counts); inside `expected` every key is compared sorted, the
    flag's own `true` too, which cannot be sorted: OSWorld catches that and scores 0."""
    models = ["iphone-15-pro-max", "iphone-14-pro-max", "iphone-13-pro-max"]
    f5d96daf = {"expected": {"modelList": models}, "ignore_list_order": True}
    assert check_direct_json_object({"modelList": models}, f5d96daf) == 1.0
    assert check_direct_json_object({"modelList": models[::-1]}, f5d96daf) == 0.0
    assert check_direct_json_object({"modelList": models[::-1]}, {"expected": {"modelList": models}}) == 0.0
    inside = {"expected": {"modelList": models, "ignore_list_order": True}}
    assert check_direct_json_object({"modelList": models[::-1], "ignore_list_order": True}, inside) == 0.0
    assert check_direct_json_object({"modelList": models}, {"expected": {"modelList": models,
                                                                         "ignore_list_order": False}}) == 0.0
    assert check_direct_json_object({"modelList": models, "ignore_list_order": False},
                                    {"expected": {"modelList": models, "ignore_list_order": False}}) == 1.0


def test_infeasible_never_passes_as_a_metric():
    assert infeasible() == 0.0 and infeasible("x", {"y": 1}) == 0.0  # the evaluator scores it from FAIL


def test_the_registry_holds_every_metric_by_its_osworld_name():
    for name in ("exact_match", "check_include_exclude", "match_in_list", "check_list", "check_direct_json_object",
                 "compare_text_file", "check_json_settings", "fuzzy_match", "literal_match", "infeasible"):
        assert METRICS[name].__name__ == name


def test_is_in_list():
    from conway.tasks.metrics.values import is_in_list
    assert is_in_list(["Dark", "Black"], {"expected": "Dark"}) == 1.0
    assert is_in_list(["Light"], {"expected": "Dark"}) == 0.0
    assert is_in_list(None, {"expected": "Dark"}) == 0.0


def test_is_extension_installed():
    from conway.tasks.metrics.values import is_extension_installed
    listed = "ms-python.python\nmattn.lisp\n"
    assert is_extension_installed(listed, {"type": "contain", "expected": "mattn.lisp"}) == 1.0
    assert is_extension_installed(listed, {"type": "contain", "expected": "njpwerner.autodocstring"}) == 0.0
    assert is_extension_installed(listed, {"type": "not_contain", "expected": "mattn.lisp"}) == 0.0
    assert is_extension_installed(None, {"type": "contain", "expected": "x"}) == 0.0
