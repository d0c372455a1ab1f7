"""Readiness: is this machine, this home and this model ready to run? One place for the checks.

Each check is a small named function that tries the real thing (never guesses,
never downloads, never touches the desktop unless asked) and returns a
`Check`. The commands only select checks and render them:

- `conway doctor` (`conway/readiness/doctor.py`): the machine: `host`, the display,
  accessibility, the tools tried (`extensions.toolbox_checks`), MCP servers
  and skills.
- `conway preflight` (`conway/evals/preflight.py`): the home and the model:
  `home_files` (configuration, constitution.md, recovery state, the tools' working
  directory), `host.memory_check`, `model` (endpoint or local files, context
  fit, one real decision), `memory_summary` (who writes memory's summary), skills and MCP
  servers, and with `--desktop` one
  screenshot (`host.desktop_check`).
- `conway probe` (`conway/readiness/probe.py`): one decision on a synthetic image
  (`decision.probe`), reported in detail.

Modules: `host` (the machine), `home_files` (the home's files), `model` (the model
and its window), `memory_summary` (memory's summariser), `decision` (one real decision),
`extensions` (tools, MCP servers, skills). Nothing here imports the commands or `conway.evals`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Check:
    """One named readiness check: status ok | warn | fail | not_checked, and what was observed."""

    check: str
    status: str
    detail: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def record(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "detail": self.detail,
                **({"data": self.data} if self.data else {})}
