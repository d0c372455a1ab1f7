"""Every model-output parser takes linear time on every pathological shape.

Speed is asserted as a ratio against a same-run baseline, never as wall time:
each shape is parsed at 20k and at 200k characters (the input limit) and the
larger must cost less than 40x the smaller (linear work is about 10x,
quadratic about 100x; the quadratic OpenCUA split this guards against was
100x). The absolute figures are in docs/measurements.md, from `scripts/bench/bench_parsers.py`,
which builds the same shapes.
"""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO

from conway.actions import ActionProblem

_spec = importlib.util.spec_from_file_location("bench_parsers", REPO / "scripts" / "bench" / "bench_parsers.py")
bench = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(bench)  # type: ignore[union-attr]

SMALL, LARGE = 20_000, 200_000
FLOOR_S = 0.002
"""Times under this are noise on a busy machine; a quadratic shape costs far more at 200k."""
MAX_RATIO = 40


@pytest.mark.parametrize("shape", sorted(bench.SHAPES))
def test_every_parser_is_linear_on(shape: str) -> None:
    build = bench.SHAPES[shape]
    small, large = build(SMALL), build(LARGE)
    for name, parse in bench.parsers().items():
        t_small = bench.best_time(parse, small, 3)
        t_large = bench.best_time(parse, large, 3)
        ratio = t_large / max(t_small, FLOOR_S)
        assert ratio < MAX_RATIO, f"{name} on {shape!r}: {t_small * 1000:.1f} ms at 20k, {t_large * 1000:.1f} ms at 200k"
        out = parse(large)
        assert all(not isinstance(a, ActionProblem) or "internal" not in a.message for a in out.actions)  # type: ignore[attr-defined]


def test_the_issue_s_opencua_shape_fails_cleanly() -> None:
    from conway.policies.families.opencua import parse as parse_opencua

    out = parse_opencua.parse("## Code:\n```\n```\n" * 10000, **bench.SETUP)  # type: ignore[arg-type]
    assert not out.ok and out.problems and "internal" not in out.problems[0].message


def test_an_answer_with_thousands_of_headings_is_refused_as_not_opencua() -> None:
    from conway.policies.families.opencua import parse as parse_opencua

    out = parse_opencua.parse("## Action\n" * 500 + "```python\npyautogui.click(x=1, y=1)\n```",
                              **bench.SETUP)  # type: ignore[arg-type]
    assert "more than 100 section headings" in out.problems[0].message
