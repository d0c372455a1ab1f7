"""The rule_relativeTime getter's dates for fixed days, as OSWorld's get_rule_relativeTime computes them."""

from __future__ import annotations

import datetime as dt

import pytest

from conway.tasks import relative_time
from conway.tasks.getters import GETTERS

WED = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)  # a Wednesday in December: next month is next year


def _single(name: str, template: str, now: dt.datetime = WED):
    return relative_time.resolve({"relativeTime": {"from": name}, "expected": {"time": template}}, now)["expected"]["time"]


@pytest.mark.parametrize(("name", "want"), [
    ("tomorrow", "Thu, Dec 03, 2026"), ("5th next month", "Tue, Jan 05, 2027"), ("10th next month", "Sun, Jan 10, 2027"),
    ("this month", "Wed, Dec 02, 2026"), ("next Monday", "Mon, Dec 07, 2026"),
    ("first monday four months later", "Mon, Apr 05, 2027"), ("first monday eight months later", "Mon, Aug 02, 2027"),
])
def test_a_single_day(name, want):
    assert _single(name, "{DoW}, {Month} {Day0D}, {Year}") == want


def test_the_placeholders_and_a_list_of_templates():
    assert _single("tomorrow", ["{Year}-{Month0D}-{DayD}", "{MonthFull} {month} {MonthD}"]) == \
        ["2026-12-3", "December december 12"]
    assert _single("next Monday", "{month}-weather") == "december-weather"


def test_a_name_osworld_does_not_know_or_a_month_zero_fails():
    with pytest.raises(ValueError):
        _single("next Sunday", "{Year}")  # known to OSWorld only as a range's end
    with pytest.raises(ValueError):
        _single("bogus", "{Year}")
    with pytest.raises(ValueError):  # August + 4 is month 0 in OSWorld's arithmetic
        _single("first monday four months later", "{Year}", dt.datetime(2026, 8, 3, tzinfo=dt.timezone.utc))


def test_a_range_and_its_split_form():
    rules = {"relativeTime": {"from": "10th next month", "to": "11th next month"},
             "expected": {"from": "{DoW} {Day0D}", "to": "{DoW} {Day0D}", "start_location": "Boston"}}
    assert relative_time.resolve(rules, WED)["expected"] == {"from": "Sun 10", "to": "Mon 11", "start_location": "Boston"}
    assert rules["expected"]["from"] == "{DoW} {Day0D}"  # the task's own rules are left as they were
    split = {"relativeTime": {"from": "next Monday split", "to": "next Friday split"},
             "expected": {k: v for k, v in (("puDay", "{DayD}"), ("puMonth", "{MonthD}"), ("puYear", "{Year}"),
                                            ("doDay", "{DayD}"), ("doMonth", "{MonthD}"), ("doYear", "{Year}"))}}
    assert relative_time.resolve(split, WED)["expected"] == {"puDay": "7", "puMonth": "12", "puYear": "2026",
                                                             "doDay": "11", "doMonth": "12", "doYear": "2026"}
    weekend = {"relativeTime": {"from": "next Saturday", "to": "next Sunday"}, "expected": {"from": "{DayD}", "to": "{DayD}"}}
    assert relative_time.resolve(weekend, WED)["expected"] == {"from": "5", "to": "6"}
    sunday = dt.datetime(2026, 12, 6, tzinfo=dt.timezone.utc)
    assert relative_time.resolve(weekend, sunday)["expected"] == {"from": "12", "to": "13"}


def test_the_getter_uses_the_rules_timezone(tmp_path):
    config = {"type": "rule_relativeTime", "rules": {"relativeTime": {"from": "this month"}, "timezone": "Europe/Zurich",
                                                      "expected": {"time": "{Year}-{Month0D}-{Day0D}"}}}
    got = GETTERS["rule_relativeTime"](None, config)
    assert got["expected"]["time"] == dt.datetime.now(relative_time.ZoneInfo("Europe/Zurich")).strftime("%Y-%m-%d")
    assert got["timezone"] == "Europe/Zurich" and got["relativeTime"] == {"from": "this month"}
    assert relative_time.now_for({"timezone": "Nowhere/Atlantis"}).utcoffset() == dt.timedelta(0)
