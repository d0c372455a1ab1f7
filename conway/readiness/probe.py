"""`conway probe`: one decision of the configured policy on a synthetic image, reported in full.

The check itself (`probe`, `ProbeReport`, `probe_context`) lives in
`conway/readiness/checks/decision.py`, shared with preflight; this module builds the
configured policy around it and always closes it.
"""

from __future__ import annotations

from typing import Any

from conway.readiness.checks.decision import ProbeReport, probe

__all__ = ["probe_configured"]


def probe_configured(config: Any, home: Any) -> ProbeReport:
    """Build the configured policy, probe it once, and always close it (a server Conway started stops)."""
    from conway.policies.factory import build_policy
    policy = build_policy(config, home)
    try:
        return probe(policy)
    finally:
        policy.close()
