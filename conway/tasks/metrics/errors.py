"""Why a metric could not score: the evaluator records the message as the task's one-line error, and the score is 0."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any


class MetricError(ValueError):
    """A metric's input could not be read as what the metric compares (a missing, corrupt or wrong-kind file),
    or the task asked for something it does not do; the message says which, in one line."""


class UnsupportedOption(MetricError):
    """The task uses an option or rule this metric does not implement: the task is not runnable here, never
    scored by a partial reading of its checker."""


class ScoredZeroAsOSWorld(Exception):
    """A case where OSWorld's own metric raises (a chart property its object lacks, a font with no colour): its
    runner counts a raising metric as 0, so the metric catching this scores 0 rather than reporting an error.
    docs/checks.md lists each such case."""


def zero_where_osworld_raises(check: Callable[..., float]) -> Callable[..., float]:
    """A metric whose every raise is a case where OSWorld's own function raises (an unreadable file, a shape its
    code trips on): scored 0, as OSWorld's runner counts it. docs/checks.md lists the cases per metric."""
    @wraps(check)
    def scored(*args: Any, **kwargs: Any) -> float:
        try:
            return float(check(*args, **kwargs))
        except Exception:  # OSWorld's function raises here: its runner counts 0
            return 0.0
    return scored
