"""The flags that say what a success cost (`conway rollouts`, `conway judge`): prices per token, reference steps."""

from __future__ import annotations

import argparse
from typing import Any

from conway.errors import UserError


def add_cost_args(p: argparse.ArgumentParser) -> None:
    """--price-in, --price-out, --reference-steps (read by `conway.evals.best_of_n`)."""
    g = p.add_argument_group("what a success cost (conway.evals.best_of_n)")
    g.add_argument("--price-in", type=float, metavar="P", help="price per million prompt tokens (money in the figures)")
    g.add_argument("--price-out", type=float, metavar="P", help="price per million generated tokens")
    g.add_argument("--reference-steps", metavar="FILE", help="reference steps per task: a JSON object {task id: "
                   "steps}, or a folder of OSWorld-Human's task files (steps against it, and its WES+/WES-)")


def cost_args(args: argparse.Namespace) -> dict[str, Any]:
    """{"prices": {"in", "out"} per million tokens or None, "reference": {task: steps} or None}."""
    from conway.evals.best_of_n import load_reference

    prices = None
    given = [x for x in (args.price_in, args.price_out) if x is not None]
    if given:
        if min(given) < 0:
            raise UserError("--price-in and --price-out must not be negative")
        prices = {"in": args.price_in or 0.0, "out": args.price_out or 0.0}
    return {"prices": prices, "reference": load_reference(args.reference_steps) if args.reference_steps else None}
