"""Chance: what a policy that acts validly at random scores on a suite, and whether a measured rate is apart from it.

A learning result means something only against chance. A base that never presses anything scores 0, so "above
the base" is true of a candidate that learned merely to press *a* button; on "press the named one of two" such
a candidate sits at 50% and has learned nothing about the instruction. So every learning report compares a
success rate with the suite's chance level, and says what was learned only by that comparison.

A task declares its chance in its JSON (`"chance": 0.5`, a number in [0, 1]; OSWorld's loader keeps unknown
fields in `Task.raw`): the probability that a policy which acts validly but uniformly at random (presses one of
the task's N targets) passes it, 1/N for "press the named one of N". Chance is declared by the suite's writer,
who knows the task's targets, and never guessed: a suite in which any scored task does not declare it has no
chance level (None), and reports say "chance unknown".

The suite's chance is the mean of its scored tasks' chances: the expected success rate of the random policy.
Chance is an exact expectation, not a measurement, so a rate is compared with it by its own Wilson 95%
interval alone: *above chance* when the interval's lower end lies above it, *below chance* when its upper end
lies below, otherwise *at chance* (indistinguishable from it with this many tasks).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

ABOVE, AT, BELOW = "above chance", "at chance", "below chance"


def task_chance(raw: dict[str, Any] | None) -> float | None:
    """A task's declared chance (its raw `chance` field), or None when it declares none or a value out of [0, 1]."""
    value = (raw or {}).get("chance")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        return None
    return float(value)


def suite_chance(records: Iterable[dict[str, Any]]) -> float | None:
    """The mean declared chance of the tasks whose records are given (each record's `raw`); None when any of them
    declares none, or there are none."""
    chances = [task_chance(r.get("raw")) for r in records]
    if not chances or any(c is None for c in chances):
        return None
    return round(math.fsum(chances) / len(chances), 4)  # type: ignore[arg-type]


def verdict(ci95: list[float] | tuple[float, float], chance: float | None) -> str | None:
    """ABOVE, AT or BELOW chance by the Wilson interval `ci95`; None when the chance is unknown."""
    if chance is None:
        return None
    lo, hi = ci95
    if lo > chance:
        return ABOVE
    if hi < chance:
        return BELOW
    return AT


def against(rate: dict[str, Any], chance: float | None) -> dict[str, Any]:
    """{"chance", "verdict", "separated"} of a rate record ({"hit_rate_ci95"} or {"ci95"}): `separated` is True only
    when its interval lies wholly above chance."""
    ci = rate.get("ci95") or rate.get("hit_rate_ci95") or [0.0, 1.0]
    v = verdict(ci, chance)
    return {"chance": chance, "verdict": v, "separated": v == ABOVE}


def describe(chance: float | None) -> str:
    """One phrase for a report: "chance 33.3%" or "chance unknown (a task declares none)"."""
    return f"chance {chance:.1%}" if chance is not None else "chance unknown (a task declares none)"
