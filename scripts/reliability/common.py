"""What every proof returns: named checks with a measured figure, a limit and examples of violations."""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MAX_EXAMPLES = 20
"""Violations kept verbatim per check (the count is always exact)."""


@dataclass
class Check:
    name: str
    measured: Any
    """The figure, e.g. 0 (violations) or 3.2 (MiB)."""
    limit: str
    """What the promise allows, in words: "0", "<= 5 MiB"."""
    ok: bool
    examples: list[str] = field(default_factory=list)
    """Precise descriptions of the first violations (what, where, how to reproduce)."""


@dataclass
class ProofResult:
    proof: str
    params: dict[str, Any]
    figures: dict[str, Any]
    checks: list[Check]
    seconds: float

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"proof": self.proof, "ok": self.ok, "seconds": round(self.seconds, 2), "params": self.params,
                "figures": self.figures, "checks": [asdict(c) for c in self.checks]}


class Violations:
    """Counts violations per check and keeps the first few descriptions."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[str]] = {}

    def add(self, check: str, description: str) -> None:
        self.counts[check] = self.counts.get(check, 0) + 1
        kept = self.examples.setdefault(check, [])
        if len(kept) < MAX_EXAMPLES:
            kept.append(description)

    def zero_check(self, check: str, name: str | None = None) -> Check:
        """A check whose promise is "no violation at all"."""
        n = self.counts.get(check, 0)
        return Check(name=name or check, measured=n, limit="0", ok=n == 0, examples=self.examples.get(check, []))


def child_env() -> dict[str, str]:
    """Environment for `conway` child processes: this checkout's package first, no home from outside."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("CONWAY_HOME", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def conway_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "conway.cli.main", *args]


def table(results: list[ProofResult]) -> str:
    """The summary table: one row per check."""
    rows = [("proof", "check", "measured", "limit", "verdict")]
    for r in results:
        for c in r.checks:
            measured = f"{c.measured:.2f}" if isinstance(c.measured, float) else str(c.measured)
            rows.append((r.proof, c.name, measured, c.limit, "ok" if c.ok else "VIOLATED"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
