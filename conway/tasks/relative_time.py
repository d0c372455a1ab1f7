"""The `rule_relativeTime` getter's dates: a task's relative day names ("tomorrow", "next Monday", "10th next
month") turned into the dates they mean today, written into its expected values, as OSWorld's getter
(`get_rule_relativeTime`, getters/misc.py) does.

Only the names OSWorld's getter knows are known here, each computed its way (its "first monday four months later"
in August asks for month 0 and fails, and so does this); a name it does not know, or one it knows only on the other
side of a range, is an error, as its getter raises there. The day comes from the task machine's clock ("now" in
the rules' `timezone` when they name one, else the local time, as OSWorld reads the VM's).
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")
_NTH_NEXT_MONTH = {"5th next month": 5, "10th next month": 10, "11th next month": 11}


def now_for(rules: dict[str, Any]) -> dt.datetime:
    """Now in the rules' `timezone` (UTC for one that does not exist), else in the machine's local zone."""
    name = rules.get("timezone")
    if not name:
        return dt.datetime.now().astimezone()
    try:
        return dt.datetime.now(ZoneInfo(name))
    except (ZoneInfoNotFoundError, ValueError):
        return dt.datetime.now(dt.timezone.utc)


def _next_month(today: dt.date, day: int) -> dt.date:
    return dt.date(today.year + 1, 1, day) if today.month == 12 else dt.date(today.year, today.month + 1, day)


def _first_monday_later(today: dt.date, months: int) -> dt.date:
    """OSWorld's arithmetic: month (m + n) % 12, the year bumped once m + n passes 12 (month 0 is an error)."""
    month = (today.month + months) % 12
    first = dt.date(today.year + 1 if today.month + months > 12 else today.year, month, 1)
    return first + dt.timedelta(days=(7 - first.weekday()) % 7)


def _days(today: dt.date, n: int) -> dt.date:
    return today + dt.timedelta(days=n)


def _weekday_ahead(today: dt.date, target: int, same_day_gap: int) -> dt.date:
    """The next `target` weekday this week or next; `same_day_gap` days on that weekday itself."""
    gap = target - today.weekday()
    return _days(today, gap if gap > 0 else same_day_gap if gap == 0 else gap + 7)


def _common(name: str, today: dt.date) -> dt.date | None:
    if name == "tomorrow":
        return _days(today, 1)
    if name in _NTH_NEXT_MONTH:
        return _next_month(today, _NTH_NEXT_MONTH[name])
    if name in ("next Monday", "next Monday split"):
        return _days(today, 7 - today.weekday())
    return None


def _single_day(name: str, today: dt.date) -> dt.date:
    """A lone `from` day (no `to`)."""
    day = None if name in ("11th next month", "next Monday split") else _common(name, today)
    if day is not None:
        return day
    if name == "this month":
        return today
    if name in ("first monday four months later", "first monday eight months later"):
        return _first_monday_later(today, 4 if "four" in name else 8)
    raise ValueError(f"relative time {name!r} is not one OSWorld's getter knows as a single day")


def _from_day(name: str, today: dt.date) -> dt.date:
    day = None if name in ("5th next month", "11th next month") else _common(name, today)
    if day is not None:
        return day
    week_ahead = 7 - today.weekday()
    special = {"this Saturday": lambda: _days(today, 5 - today.weekday()),
               "next Friday": lambda: _weekday_ahead(today, 4, 7),
               "next Saturday": lambda: _weekday_ahead(today, 5, 7),
               "next week Friday": lambda: _days(today, week_ahead + 4),
               "next week Saturday": lambda: _days(today, week_ahead + 5),
               "next week Sunday": lambda: _days(today, week_ahead + 6)}
    if name not in special:
        raise ValueError(f"relative time {name!r} is not one OSWorld's getter knows as a range's start")
    return special[name]()


def _to_day(name: str, start_name: str, start: dt.date, today: dt.date) -> dt.date:
    if name == "tomorrow":
        return _days(today, 1)
    if name == "11th next month":
        return _next_month(today, 11)
    if name == "this Sunday":
        return _days(today, 6 - today.weekday())
    if name in ("next Friday", "next Friday split"):
        if start_name in ("next Monday", "next Monday split"):
            return _days(start, 4)  # the Friday of that Monday's week
        return _days(today, 4 - today.weekday() if today.weekday() < 4 else 11 - today.weekday())
    if name == "next Sunday":
        if start_name in ("next Friday", "next Saturday"):
            return _days(start, 6 - start.weekday())
        return _weekday_ahead(today, 6, 7)
    if name == "next week Sunday":
        if start_name in ("next week Friday", "next week Saturday"):
            return _days(start, 6 - start.weekday())
        return _days(today, 13 - today.weekday())
    raise ValueError(f"relative time {name!r} is not one OSWorld's getter knows as a range's end")


def format_day(template: str, day: dt.date) -> str:
    """The first of each placeholder replaced: {DoW} Mon, {Month} Jan, {DayD} 5, {Year}, {Month0D} 01, {month}
    january, {MonthFull} January, {Day0D} 05, {MonthD} 1."""
    month = MONTH_NAMES[day.month - 1]
    for key, value in (("{DoW}", DAY_NAMES[day.weekday()]), ("{Month}", month[:3]), ("{DayD}", str(day.day)),
                       ("{Year}", str(day.year)), ("{Month0D}", f"{day.month:02d}"), ("{month}", month.lower()),
                       ("{MonthFull}", month), ("{Day0D}", f"{day.day:02d}"), ("{MonthD}", str(day.month))):
        template = template.replace(key, value, 1)
    return template


def _fill(expected: dict[str, Any], keys: tuple[str, ...], day: dt.date) -> None:
    for key in keys:
        value = expected[key]
        expected[key] = [format_day(v, day) for v in value] if isinstance(value, list) else format_day(value, day)


def resolve(rules: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """A copy of the rules with the expected dates filled in for `now`: `time` for a lone `from`; `from` and `to`
    for a range, or `puDay`/`puMonth`/`puYear` and `doDay`/`doMonth`/`doYear` for its `split` names."""
    out = copy.deepcopy(rules)
    relative, expected, today = out["relativeTime"], out["expected"], now.date()
    if "to" not in relative:
        _fill(expected, ("time",), _single_day(relative["from"], today))
        return out
    start_name, end_name = relative["from"], relative["to"]
    start = _from_day(start_name, today)
    _fill(expected, ("puDay", "puMonth", "puYear") if start_name == "next Monday split" else ("from",), start)
    end = _to_day(end_name, start_name, start, today)
    _fill(expected, ("doDay", "doMonth", "doYear") if end_name == "next Friday split" else ("to",), end)
    return out
