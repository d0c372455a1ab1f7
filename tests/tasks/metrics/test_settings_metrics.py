"""compare_config and check_json on generated settings files, each with the score OSWorld's vscode.py / general.py
give."""

from __future__ import annotations

import pytest

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.settings import check_json, compare_config


def _file(tmp_path, text: str | bytes, name: str = "settings.json") -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


def test_the_metrics_are_registered():
    assert METRICS["compare_config"] is compare_config and METRICS["check_json"] is check_json


DARK = {"expected": '{"workbench.colorTheme": "Visual Studio Dark"}\n'}


def test_compare_config_containment(tmp_path):
    settings = _file(tmp_path, '{\n  "editor.fontSize": 14,\n  "workbench.colorTheme": "Visual Studio Dark"\n}')
    assert compare_config(settings, DARK, containment_ok=True) == 1.0
    assert compare_config(settings, DARK) == 1.0  # containment is the default
    assert compare_config(_file(tmp_path, '{"workbench.colorTheme": "Light"}', "l.json"), DARK) == 0.0
    assert compare_config(_file(tmp_path, '{"workbench": {"colorTheme": "x", "a": 1}}', "n.json"),
                          {"expected": '{"workbench": {"colorTheme": "x"}}'}) == 1.0
    assert compare_config(_file(tmp_path, '{"a": [1, 2, 3]}', "list.json"), {"expected": '{"a": [1, 2]}'}) == 0.0
    # not JSON on either side: the stripped expected text is looked for in the file
    assert compare_config(_file(tmp_path, "the project\n", "p.txt"), {"expected": "project"}) == 1.0
    assert compare_config(_file(tmp_path, "nothing\n", "q.txt"), {"expected": "project"}) == 0.0
    # both JSON but not a subset: 0, with no text fallback
    assert compare_config(_file(tmp_path, '"a project"', "s.json"), {"expected": '"project"'}) == 0.0


def test_compare_config_strict(tmp_path):
    settings = _file(tmp_path, '{"workbench.colorTheme": "Visual Studio Dark"}\n')
    assert compare_config(settings, DARK, containment_ok=False) == 1.0
    assert compare_config(_file(tmp_path, '{ "workbench.colorTheme" : "Visual Studio Dark" }', "f.json"), DARK,
                          containment_ok=False) == 1.0  # JSON equal, formatting apart
    assert compare_config(_file(tmp_path, '{"workbench.colorTheme": "Visual Studio Dark", "a": 1}', "x.json"), DARK,
                          containment_ok=False) == 0.0


def test_compare_config_missing_empty_malformed(tmp_path):
    assert compare_config(None, DARK) == 0.0
    assert compare_config(str(tmp_path / "none.json"), DARK) == 0.0
    assert compare_config(_file(tmp_path, ""), DARK) == 0.0
    assert compare_config(_file(tmp_path, "{}"), {"expected": ""}) == 0.0
    assert compare_config(_file(tmp_path, b'{"a": "\xff"}', "bad.json"), {"expected": '{"a": 1}'}) == 0.0
    assert compare_config(_file(tmp_path, "{}"), {"expected": {"a": 1}}) == 0.0  # not text: OSWorld raises


XUL = '{"chrome://messenger/content/messenger.xhtml": {"folderTree": {"mode": "smart,favorite"}}}'
SMART = {"expect": [{"key": ["chrome://messenger/content/messenger.xhtml", "folderTree", "mode"],
                     "method": "re", "ref": "\\bsmart\\b"}]}


@pytest.mark.parametrize(("text", "rules", "score"), [
    (XUL, SMART, 1.0),
    (XUL.replace("smart,", ""), SMART, 0.0),
    ('{"chrome://messenger/content/messenger.xhtml": {}}', SMART, 0.0),  # the key is not there
    ('{"a": [10, 20]}', {"expect": [{"key": ["a", 1], "method": "eq", "ref": 20}]}, 1.0),
    ('{"a": [10, 20]}', {"expect": [{"key": ["a", 5], "method": "eq", "ref": 20}]}, 0.0),  # IndexError
    ('{"a": 1}', {"unexpect": [{"key": ["b"], "method": "eq", "ref": 1}]}, 1.0),
    ('{"a": 1}', {"unexpect": [{"key": ["a"], "method": "eq", "ref": 1}]}, 0.0),
    ('{"a": 1}', {"unexpect": [{"key": ["b"], "method": "re", "ref": "x"}]}, 0.0),  # re on None raises: 0
    ('{"a": 1}', {"expect": [{"key": ["a"], "method": "re", "ref": "1"}]}, 0.0),  # re on a number raises
    ('{"a": 1}', {}, 1.0),
    ("{", SMART, 0.0), ("", SMART, 0.0),
])
def test_check_json(tmp_path, text, rules, score):
    assert check_json(_file(tmp_path, text), rules) == score


def test_check_json_yaml_and_missing(tmp_path):
    config = _file(tmp_path, "name: Test Account\nauthor:\n  name: Test Account\n  email: Test@gmail.com\n", "c.yml")
    rules = {"expect": [{"key": ["name"], "method": "eq", "ref": "Test Account"},
                        {"key": ["author", "email"], "method": "eq", "ref": "Test@gmail.com"}]}
    assert check_json(config, rules, is_yaml=True) == 1.0
    assert check_json(config, {"expect": [{"key": ["author", "email"], "method": "eq", "ref": "x@y.z"}]},
                      is_yaml=True) == 0.0
    assert check_json(config, rules) == 0.0  # YAML read as JSON does not parse
    assert check_json(_file(tmp_path, "", "e.yml"), {}, is_yaml=True) == 0.0  # an empty YAML document
    assert check_json(_file(tmp_path, "a: [", "m.yml"), rules, is_yaml=True) == 0.0
    assert check_json(None, rules) == 0.0 and check_json(str(tmp_path / "none.json"), rules) == 0.0
