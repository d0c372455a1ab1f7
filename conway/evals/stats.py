"""Small statistics every eval report uses: Wilson intervals and nearest-rank percentiles."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (95% by default)."""
    if n <= 0:
        return (0.0, 1.0)
    p = hits / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if hits == 0 else max(0.0, centre - half)
    hi = 1.0 if hits == n else min(1.0, centre + half)
    return (lo, hi)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def rate_record(hits: int, n: int) -> dict[str, object]:
    """{"n", "hits", "hit_rate", "hit_rate_ci95"} of one group of cases."""
    lo, hi = wilson(hits, n)
    return {"n": n, "hits": hits, "hit_rate": round(hits / n, 4) if n else 0.0,
            "hit_rate_ci95": [round(lo, 4), round(hi, 4)]}
