"""`check_accessibility_tree` and `check_left_panel` on generated accessibility trees in OSWorld's XML, scored as
OSWorld's functions score them (match, no match, exact and fuzzy text, missing tree, malformed XML), and the
`accessibility_tree` getter handing the environment's tree to them through the evaluator."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.extras import need_extra
from helpers.task_env import TestTaskEnv

from conway.tasks.evaluate import evaluate
from conway.tasks.getters import GETTERS
from conway.tasks.metrics import METRICS
from conway.tasks.metrics.errors import MetricError
from conway.tasks.task import parse_osworld

need_extra("tasks", "lxml")  # CSS selectors and XPath on the tree, as OSWorld's (lxml, cssselect)
need_extra("tasks", "cssselect")

check = METRICS["check_accessibility_tree"]
left_panel = METRICS["check_left_panel"]
ST = "https://accessibility.ubuntu.example.org/ns/state"
ATTR = "https://accessibility.ubuntu.example.org/ns/attributes"


def tree(*, pills=("fox@someuniversity.edu", "iron@someuniversity.edu"), tab="About Profiles",
         entry="anonym-x2024@outlook.com", slides=True) -> str:
    """A desktop as OSWorld's server writes it: Thunderbird's compose header and tabs, and Impress."""
    pill = ''.join(f'<section name="{p}" attr:class="address-pill"><label name="{p}" attr:class="pill-label"/>'
                   '</section>' for p in pills)
    panel = '<document-frame name="Slides View" st:showing="true"/>' if slides else ''
    return (f'<desktop-frame xmlns:st="{ST}" xmlns:attr="{ATTR}">'
            '<application name="Thunderbird"><frame name="Write: reminder" st:active="true">'
            f'<tool-bar name="" attr:id="MsgHeadersToolbar"><label name="To"/>{pill}<entry name="To"/></tool-bar>'
            f'<page-tab-list name="" attr:id="tabmail-tabs"><page-tab name="{tab}"/></page-tab-list>'
            f'<entry name="Email address" st:focused="true">{entry}</entry><password-text name="Password"/>'
            '</frame></application>'
            f'<application name="soffice"><frame name="Untitled 1 - LibreOffice Impress">{panel}'
            '<document-presentation name="Slide 1"/></frame></application></desktop-frame>')


def pill_rule(address: str) -> dict:
    """multi_apps/f5c13cdd's rule, one per address."""
    return {"selectors": ['tool-bar[attr|id=MsgHeadersToolbar] label[name=To]~[attr|class="address-pill"]>'
                          f'label[attr|class="pill-label"][name*="{address}"]']}


PROFILES_TAB = {"selectors": ['application[name=Thunderbird] page-tab-list[attr|id="tabmail-tabs"]>'
                              'page-tab[name="About Profiles"]']}  # thunderbird/7b1e1ff9
ACCOUNT = [{"xpath": "//application[@name='Thunderbird']//*[contains(text(), 'anonym-x2024@outlook.com') or "
                     "contains(@name, 'anonym-x2024@outlook.com')]"},
           {"xpath": "//application[@name='Thunderbird']//*[contains(@name, 'password') or "
                     "contains(@name, 'Password')]"}]  # thunderbird/15c3b339


def test_css_selectors_with_namespaced_attributes_match_or_not():
    assert check(tree(), [pill_rule("fox@someuniversity.edu"), pill_rule("iron@someuniversity.edu")]) == 1.0
    assert check(tree(), [pill_rule("fox@someuniversity.edu"), pill_rule("nancy@someuniversity.edu")]) == 0.0
    assert check(tree(), [PROFILES_TAB]) == 1.0
    assert check(tree(tab="Add-ons Manager"), [PROFILES_TAB]) == 0.0


def test_xpath_matches_text_or_name():
    assert check(tree(), ACCOUNT) == 1.0
    assert check(tree(entry="someone@else.org"), ACCOUNT) == 0.0
    # xpath wins where a rule gives both, as in OSWorld
    assert check(tree(), [{"xpath": "//page-tab", "selectors": ["nothing-here"]}]) == 1.0
    assert check(tree(), [{"xpath": "//st:nothing", "selectors": ["page-tab"]}]) == 0.0
    assert check(tree(), [{"xpath": "//entry[@st:focused='true']"}]) == 1.0


def test_text_exact_and_fuzzy():
    exact = {"xpath": "//entry", "exact": True}
    assert check(tree(), [{**exact, "text": "anonym-x2024@outlook.com"}]) == 1.0
    assert check(tree(), [{**exact, "text": "anonym-x2024@outlook.co"}]) == 0.0
    fuzzy = check(tree(), [{"xpath": "//entry", "text": "anonym-x2024@outlook.co", "exact": False}])
    assert fuzzy == pytest.approx(2 * 23 / 47)  # rapidfuzz's ratio: the best of the selected elements
    # an element without text compares as None: 0 either way
    assert check(tree(), [{"xpath": "//page-tab", "text": "About Profiles", "exact": True}]) == 0.0
    assert check(tree(), [{"xpath": "//page-tab", "text": "About Profiles", "exact": False}]) == 0.0
    # the rules' scores multiply
    both = [{"xpath": "//entry[@name='Email address']", "text": "anonym-x2024@outlook.co", "exact": False},
            {"xpath": "//entry[@name='Email address']", "text": "anonym-x2024@outlook.com", "exact": True}]
    assert check(tree(), both) == pytest.approx(fuzzy)


def test_missing_malformed_and_bad_rules_raise_a_one_line_error():
    with pytest.raises(MetricError, match="not an accessibility tree's XML: NoneType"):
        check(None, [PROFILES_TAB])
    with pytest.raises(MetricError, match="not well-formed XML"):
        check(tree()[:-10], [PROFILES_TAB])
    with pytest.raises(MetricError, match="needs `xpath` or `selectors`"):
        check(tree(), [{"text": "x", "exact": True}])
    with pytest.raises(MetricError, match="needs `exact`"):
        check(tree(), [{"xpath": "//entry", "text": "x"}])
    with pytest.raises(MetricError, match="does not apply"):
        check(tree(), [{"xpath": "//entry[["}])
    with pytest.raises(MetricError, match="does not apply"):
        check(tree(), [{"selectors": ["page-tab[name="]}])
    with pytest.raises(MetricError, match="not elements"):
        check(tree(), [{"xpath": "count(//entry)"}])
    with pytest.raises(MetricError, match="osname"):
        check(tree(), [PROFILES_TAB], osname="plan9")


def test_other_platforms_namespaces():
    windows = ('<desktop xmlns:class="https://accessibility.windows.example.org/ns/class">'
               '<window name="Notepad" class:name="Notepad"/></desktop>')
    assert check(windows, [{"xpath": "//window[@class:name='Notepad']"}], osname="windows") == 1.0
    assert check(windows, [{"selectors": ["window[class|name=Notepad]"]}], osname="windows") == 1.0


def test_left_panel_open_closed_missing_malformed():
    assert left_panel(tree()) == 1.0
    assert left_panel(tree(slides=False)) == 0.0
    assert left_panel(tree().replace("Slides View", "Outline View")) == 0.0
    with pytest.raises(MetricError, match="not an accessibility tree's XML"):
        left_panel(None)
    with pytest.raises(MetricError, match="not well-formed XML"):
        left_panel("<desktop-frame><application>")


def test_the_getter_hands_the_environments_tree_to_the_metric(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    env = TestTaskEnv(home=home, task_id="t")
    task = parse_osworld({"id": "t", "instruction": "x", "evaluator": {
        "func": "check_accessibility_tree", "result": {"type": "accessibility_tree"},
        "expected": {"type": "rule", "rules": [PROFILES_TAB]}}}, Path("t.json"))
    with pytest.raises(RuntimeError, match="accessibility tree could not be read"):
        GETTERS["accessibility_tree"](env, {})
    unread = evaluate(task, env, declared_fail=False)
    assert unread.score == 0.0 and "accessibility tree could not be read" in (unread.metrics[0].error or "")
    env.tree_xml = tree()
    assert GETTERS["accessibility_tree"](env, {}) == tree()
    assert evaluate(task, env, declared_fail=False).score == 1.0
    env.tree_xml = tree(tab="Inbox")
    assert evaluate(task, env, declared_fail=False).score == 0.0
