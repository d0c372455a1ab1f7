"""Thunderbird's prefs.js and msgFilterRules.dat metrics on generated files, each with OSWorld's score."""

from __future__ import annotations

import pytest

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.mail import check_thunderbird_filter, check_thunderbird_prefs
from conway.tasks.metrics.value_rules import rule_matches

PREFS = ('// Mozilla User Preferences\n\nuser_pref("mail.identity.id1.auto_quote", false);\n'
         'user_pref("mail.identity.id1.htmlSigText", "Anonym\\nXYZ Lab");\n'
         'user_pref("extensions.activeThemeID", "thunderbird-compact-dark@mozilla.org");\n'
         'user_pref("mail.server.default.autosync_offline_stores", true);\n')


def _file(tmp_path, text: str | bytes, name: str = "prefs.js") -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


def test_the_metrics_are_registered():
    assert METRICS["check_thunderbird_prefs"] is check_thunderbird_prefs
    assert METRICS["check_thunderbird_filter"] is check_thunderbird_filter


@pytest.mark.parametrize(("rules", "score"), [
    ({"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": False}}}, 1.0),
    ({"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": True}}}, 0.0),
    ({"expect": {"mail.identity.id1.htmlSigText": {"method": "re.S", "ref": "Anonym\\nXYZ Lab"}}}, 1.0),
    ({"expect": {"extensions.activeThemeID": {"method": "re", "ref": "dark"}}}, 1.0),
    ({"expect": {"extensions.activeThemeID": {"method": "re", "ref": "light"}}}, 0.0),
    ({"expect": {"mail.imap.use_status_for_biff": {"method": "eq", "ref": False}}}, 0.0),  # never set
    ({"unexpect": {"mail.server.default.autosync_offline_stores": {"method": "eq", "ref": False}}}, 1.0),
    ({"unexpect": {"mail.server.default.autosync_offline_stores": {"method": "eq", "ref": True}}}, 0.0),
    ({"unexpect": {"mail.never.set": {"method": "eq", "ref": True}}}, 1.0),
    ({"expect": {"mail.identity.id1.auto_quote": {"method": "re", "ref": "f"}}}, 0.0),  # re on a bool: raises
    ({"expect": {"mail.identity.id1.auto_quote": {"method": "unknown", "ref": 1}}}, 0.0),
])
def test_check_thunderbird_prefs(tmp_path, rules, score):
    assert check_thunderbird_prefs(_file(tmp_path, PREFS), rules) == score


def test_check_thunderbird_prefs_missing_empty_malformed(tmp_path):
    rules = {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": False}}}
    assert check_thunderbird_prefs(None, rules) == 0.0
    assert check_thunderbird_prefs(str(tmp_path / "none.js"), rules) == 0.0
    assert check_thunderbird_prefs(_file(tmp_path, ""), rules) == 0.0
    assert check_thunderbird_prefs(_file(tmp_path, ""), {"expect": {}}) == 1.0
    # any pref whose value is not JSON makes OSWorld's json.loads raise, even one the rules never name
    assert check_thunderbird_prefs(_file(tmp_path, PREFS + 'user_pref("x", undefined);\n'), rules) == 0.0
    assert check_thunderbird_prefs(_file(tmp_path, PREFS.encode() + b"// \xff\n"), rules) == 0.0
    # the last line naming a pref decides
    assert check_thunderbird_prefs(_file(tmp_path, PREFS + 'user_pref("mail.identity.id1.auto_quote", true);\n'),
                                   rules) == 0.0


def test_rule_matches_methods():
    assert rule_matches(3.05, {"method": "approx:0.1", "ref": 3})
    assert not rule_matches("x", {"method": "approx:0.1", "ref": 3})
    assert rule_matches(2, {"method": "range.te", "ref": [0, 2]}) and not rule_matches(0, {"method": "range.te",
                                                                                             "ref": [0, 2]})
    assert rule_matches('"b,a"', {"method": "str_set_eq", "ref": ["a", "b"]})
    assert not rule_matches('"b,a"', {"method": "str_list_eq", "ref": ["a", "b"]})
    assert rule_matches("ABC", {"method": "re.I", "ref": "abc"}) and not rule_matches("ABC", {"method": "re",
                                                                                             "ref": "abc"})


FILTERS = ('version="9"\nlogging="no"\nname="Promotions"\nenabled="yes"\ntype="17"\naction="Move to folder"\n'
           'actionValue="mailbox://nobody@Local%20Folders/Promotions"\ncondition="AND (subject,contains,discount)"\n'
           'name="Forward all"\nenabled="no"\ntype="17"\naction="Forward"\nactionValue="anonym-x2024@gmail.com"\n'
           'condition="ALL"\n')
MOVE = {"enabled": "yes", "action": "Move to folder", "actionValue": "mailbox://nobody@Local%20Folders/Promotions",
        "condition": ["AND (subject,contains,discount)"]}


def test_check_thunderbird_filter(tmp_path):
    path = _file(tmp_path, FILTERS, "msgFilterRules.dat")
    assert check_thunderbird_filter(path, {"expect": [MOVE]}) == 1.0
    assert check_thunderbird_filter(path, {"expect": [{**MOVE, "condition": ["AND (subject,contains,sale)"]}]}) == 0.0
    forward = {"enabled": "yes", "action": "Forward", "actionValue": "anonym-x2024@gmail.com", "condition": ["ALL"]}
    assert check_thunderbird_filter(path, {"expect": [forward]}) == 0.0  # that filter is disabled
    assert check_thunderbird_filter(path, {"expect": [{**forward, "enabled": "no"}]}) == 1.0
    assert check_thunderbird_filter(path, {"expect": [MOVE], "unexpect": [{"action": "Forward"}]}) == 0.0
    two = FILTERS.replace('condition="AND (subject,contains,discount)"',
                          'condition="AND (subject,contains,discount) OR (from,is,\\"a b\\")"')
    assert check_thunderbird_filter(_file(tmp_path, two, "two.dat"), {"expect": [
        {"condition": ["AND (subject,contains,discount)", 'OR (from,is,"a b")']}]}) == 1.0


def test_check_thunderbird_filter_missing_empty_malformed(tmp_path):
    assert check_thunderbird_filter(None, {"expect": [MOVE]}) == 0.0
    assert check_thunderbird_filter(str(tmp_path / "none.dat"), {"expect": [MOVE]}) == 0.0
    assert check_thunderbird_filter(_file(tmp_path, 'version="9"\n', "e.dat"), {"expect": [MOVE]}) == 0.0
    assert check_thunderbird_filter(_file(tmp_path, 'version="9"\n', "e.dat"), {"expect": []}) == 1.0
    # a filter field before any name= makes OSWorld's function raise
    assert check_thunderbird_filter(_file(tmp_path, 'enabled="yes"\n' + FILTERS, "m.dat"), {"expect": [MOVE]}) == 0.0


def test_check_thunderbird_folder_compares_what_osworlds_inverted_test_keeps(tmp_path):
    metric = METRICS["check_thunderbird_folder"]
    one = _file(tmp_path, "FROM - Mon\nSubject: a\n\nbody\n", "one")
    other = _file(tmp_path, "FROM - Tue\nSubject: b\n\nFROM - Wed\nSubject: c\n", "other")
    no_marker = _file(tmp_path, "From - Mon\nSubject: a\n", "lower")
    empty = _file(tmp_path, "", "empty")
    assert metric(one, other) == 1.0  # different messages, both starting with the marker: OSWorld passes them
    assert metric(one, no_marker) == 0.0
    assert metric(empty, one) == 1.0
    twice = _file(tmp_path, "FROM - FROM - Mon\n", "twice")
    assert metric(twice, one) == 1.0 and metric(twice, one, remove_duplicate=False) == 0.0
    assert metric([one, no_marker], [other, no_marker]) == 1.0
    assert metric([one, None], [other, no_marker]) == 0.0
    assert metric(None, one) == 0.0 and metric(one, None) == 0.0
    assert metric(_file(tmp_path, b"FROM - \xff", "bad"), one) == 0.0
