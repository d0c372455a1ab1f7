"""The host-facts part: what the agent should know about its machine, in the prompt's stable part.

Gathered at the first prompt and again at most every `agent.host_facts_refresh_s` (the gathering is a few
system calls, but nothing needs it every cycle), rendered with coarse values (whole GiB of memory, free disk
to two significant figures) so the text, and with it a prompt cache's prefix, stays the same between
refreshes and across most of them. The display size is the latest screenshot's, taken at a refresh like
the rest. `agent.host_facts` chooses the facts shown; `[]` leaves the part out.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from conway.config import AgentConfig
from conway.machine.facts import host_facts, os_name, programs_on_path

__all__ = ["HostFacts", "coarse_bytes", "gather", "render"]

Size = tuple[int, int]


def gather(disk_of: Path, programs: list[str]) -> dict[str, Any]:
    """The facts this part can show, read now (`conway.machine.facts`: the same gatherer as `doctor`'s)."""
    facts = host_facts(disk_of)
    return {"os": f"{os_name()} ({facts['machine']})", "cpus": facts["cpus"],
            "memory_bytes": facts["memory_total_gb"] * 2**30, "disk_free_bytes": facts["disk_free_gb"] * 2**30,
            "programs": programs_on_path(programs)}


def coarse_bytes(n: float) -> str:
    """`n` bytes to two significant figures, in GiB (MiB below 1 GiB): a disk filling slowly keeps its text."""
    gib = n / 2**30
    if gib < 1:
        return f"{_two_figures(n / 2**20):g} MiB"
    return f"{_two_figures(gib):g} GiB"


def _two_figures(x: float) -> float:
    if x <= 0:
        return 0.0
    digits = 1 - int(math.floor(math.log10(x)))
    return round(x, digits) if digits > 0 else float(round(x, digits))


def render(facts: dict[str, Any], display: Size | None, shown: list[str]) -> str:
    """The part's text: one line per fact shown, in `shown`'s order."""
    lines = []
    for key in shown:
        if key == "os":
            lines.append(f"- operating system: {facts['os']}")
        elif key == "cpus":
            lines.append(f"- CPUs: {facts['cpus'] or 'unknown'}")
        elif key == "memory":
            lines.append(f"- memory: {round(facts['memory_bytes'] / 2**30)} GiB")
        elif key == "disk":
            lines.append(f"- free disk (the home's filesystem): {coarse_bytes(facts['disk_free_bytes'])}")
        elif key == "display":
            lines.append(f"- display: {display[0]}x{display[1]} pixels" if display else "- display: none seen yet")
        elif key == "programs":
            found = facts["programs"]
            lines.append(f"- programs on PATH: {', '.join(found) if found else 'none of those looked for'}")
    return "\n".join(lines)


class HostFacts:
    """The part's text for each prompt; gathers again only when `refresh_s` has passed (`clock`: monotonic)."""

    def __init__(self, cfg: AgentConfig, disk_of: Path, clock: Callable[[], float],
                 source: Callable[[], dict[str, Any]] | None = None):
        self.shown = list(cfg.host_facts)
        self.refresh_s = cfg.host_facts_refresh_s
        self.clock = clock
        self.source = source or (lambda: gather(disk_of, list(cfg.host_facts_programs)))
        """Where the facts come from (a test gives its own)."""
        self._at: float | None = None
        self._text = ""
        self._display: Size | None = None
        """The size of the latest screenshot seen: shown from the next refresh on."""

    def text(self, display: Size | None) -> str:
        """The part's text now (empty when off); `display`: this observation's screen size, None without one."""
        if not self.shown:
            return ""
        if display:
            self._display = display
        now = self.clock()
        if self._at is None or now - self._at >= self.refresh_s:
            self._at = now
            try:
                self._text = render(self.source(), self._display, self.shown)
            except OSError as exc:  # the home's filesystem gone, /proc unreadable …: the facts wait, the run goes on
                self._text = self._text or f"(host facts unavailable: {exc.strerror or exc})"
        return self._text
