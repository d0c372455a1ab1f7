"""The flags that say what a success cost (`conway rollouts`, `conway judge`): prices per token, reference steps."""

from __future__ import annotations

import argparse


def add_cost_args(p: argparse.ArgumentParser) -> None:
    """--price-in, --price-out, --reference-steps (read by `conway.evals.best_of_n`)."""
    g = p.add_argument_group("what a success cost (conway.evals.best_of_n)")
    g.add_argument("--price-in", type=float, metavar="P", help="price per million prompt tokens (money in the figures)")
    g.add_argument("--price-out", type=float, metavar="P", help="price per million generated tokens")
    g.add_argument("--reference-steps", metavar="FILE", help="reference steps per task: a JSON object {task id: "
                   "steps}, or a folder of OSWorld-Human's task files (steps against it, and its WES+/WES-)")
