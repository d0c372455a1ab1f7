"""check_json on JSON and YAML files written here, scored as OSWorld's `check_json` (general.py) scores them."""

from __future__ import annotations

import json

import pytest

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.errors import UnsupportedOption
from conway.tasks.metrics.files import check_json

MANIFEST = {"name": "happy-extension", "version": "0.0.1", "background": {"scripts": ["a.js", "b.js"]},
            "size": 10.2, "mode": "smart folders"}


def expect(*rules):
    return {"expect": [{"key": key, "method": method, "ref": ref} for key, method, ref in rules]}


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(MANIFEST))
    return str(path)


def test_check_json_is_registered():
    assert METRICS["check_json"] is check_json


def test_matching_rules_score_one(manifest):
    rules = expect((["name"], "eq", "happy-extension"), (["background", "scripts"], "eq", ["a.js", "b.js"]),
                   (["background", "scripts", 1], "eq", "b.js"), (["mode"], "re", r"\bsmart\b"),
                   (["name"], "re.IGNORECASE", "HAPPY"), (["size"], "approx:0.5", 10), (["size"], "range.te", [10, 11]),
                   (["version"], "str_list_eq", ["0.0.1"]), (["size"], "gt", 3))
    assert check_json(manifest, rules) == 1.0


def test_one_value_changed_or_key_missing_scores_zero(manifest):
    assert check_json(manifest, expect((["version"], "eq", "0.0.2"))) == 0.0
    assert check_json(manifest, expect((["name"], "eq", "happy-extension"), (["author"], "eq", "x"))) == 0.0
    assert check_json(manifest, expect((["name", "first"], "eq", "x"))) == 0.0  # a string indexed by a name
    assert check_json(manifest, expect((["background", "scripts", 5], "eq", "x"))) == 0.0  # past the list's end
    assert check_json(manifest, expect((["size"], "approx:0.1", 10))) == 0.0


def test_unexpect_rules(manifest):
    assert check_json(manifest, {"unexpect": [{"key": ["name"], "method": "eq", "ref": "sad"}]}) == 1.0
    assert check_json(manifest, {"unexpect": [{"key": ["name"], "method": "eq", "ref": "happy-extension"}]}) == 0.0
    assert check_json(manifest, {"unexpect": [{"key": ["absent"], "method": "eq", "ref": "x"}]}) == 1.0
    # a missing key is None there, and a regex on None raises in OSWorld, which scores it 0
    assert check_json(manifest, {"unexpect": [{"key": ["absent"], "method": "re", "ref": "x"}]}) == 0.0


def test_a_raising_rule_scores_zero(manifest):
    assert check_json(manifest, expect((["size"], "re", "10"))) == 0.0  # a regex on a number
    assert check_json(manifest, expect((["name"], "contains", "happy"))) == 0.0  # no such method
    assert check_json(manifest, {"expect": [{"key": ["name"], "ref": "x"}]}) == 0.0  # no method


def test_yaml(tmp_path):
    path = tmp_path / "_config.yml"
    path.write_text("name: Test Account\nauthor:\n  name: Test Account\n  email: Test@gmail.com\n")
    rules = expect((["name"], "eq", "Test Account"), (["author", "email"], "eq", "Test@gmail.com"))
    assert check_json(str(path), rules, is_yaml=True) == 1.0
    assert check_json(str(path), rules) == 0.0  # read as JSON it does not parse
    empty = tmp_path / "empty.yml"
    empty.write_text("")
    assert check_json(str(empty), {"expect": []}, is_yaml=True) == 0.0  # an empty YAML file scores 0


def test_missing_empty_and_malformed_files_score_zero(tmp_path):
    rules = expect((["name"], "eq", "x"))
    empty, broken, latin = tmp_path / "empty.json", tmp_path / "broken.json", tmp_path / "latin.json"
    empty.write_text("")
    broken.write_text('{"name": ')
    latin.write_bytes(b'{"name": "caf\xe9"}')
    assert check_json(None, rules) == 0.0
    assert check_json(str(tmp_path / "absent.json"), rules) == 0.0
    for path in (empty, broken, latin):
        assert check_json(str(path), rules) == 0.0


def test_options_and_cell_ranges_are_refused(manifest):
    with pytest.raises(UnsupportedOption):
        check_json(manifest, expect((["name"], "eq", "x")), strict=True)
    with pytest.raises(UnsupportedOption):
        check_json(manifest, expect((["name"], "spreadsheet_range", ["A1", "B2"])))
