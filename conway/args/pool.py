"""The worker-pool flags (`conway.evals.pool`) every command that runs cases shares."""

from __future__ import annotations

import argparse


def add_pool_args(p: argparse.ArgumentParser, *, endpoints: bool = True, resume: bool = True) -> None:
    """--workers, --ray, --pool-endpoint and --resume, for a command whose cases can run in a pool (a command
    that serves its own local models takes no --pool-endpoint; one with its own partial report no --resume)."""
    g = p.add_argument_group("worker pool (conway.evals.pool)")
    g.add_argument("--workers", type=int, default=1, metavar="N",
                   help="run the cases in N worker processes here (each builds its own policy; default 1: this "
                        "process); with --ray, N Ray actors")
    g.add_argument("--ray", metavar="ADDRESS",
                   help="run the workers as Ray actors on the cluster at ADDRESS (HOST:PORT, 'auto' for the one "
                        "this machine joined, 'local' for a private one here); needs the ray extra")
    g.add_argument("--desktops-per-node", type=int, metavar="K",
                   help="with --ray local: the desktops (workers at once) the private node hosts (default: its CPUs); "
                        "a cluster's nodes declare theirs with ray start --resources '{\"desktop\": K}'")
    if endpoints:
        g.add_argument("--pool-endpoint", action="append", default=[], metavar="URL[@SLOTS]",
                       help="spread the workers over these model endpoints, never more cases in flight on one than "
                            "its SLOTS (default 1); repeat for several (default: the configured endpoint, one slot per "
                            "worker)")
    if resume:
        g.add_argument("--resume", metavar="REPORT",
                       help="a partial report of the same command (Ctrl+C, conway stop): keep its finished cases and "
                            "run only the rest")
