"""The `read_skill` action: an Agent Skill's instructions, or one of its files, on demand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.actions import ReadSkill, _Action, types_of
from conway.config import SkillsConfig
from conway.geometry import ScreenGeometry
from conway.protocols import Tool, ToolResult
from conway.store.skills import SkillSet, find_skills, listing, read_skill
from conway.tools.row import Setup, ToolRow


class SkillsTool(Tool):
    name = "skills"
    action_types = types_of("skill")

    def __init__(self, home_root: Path, cfg: SkillsConfig):
        self.cfg = cfg
        self.found: SkillSet = find_skills(home_root, cfg)

    def availability(self) -> tuple[bool, str]:
        n = len(self.found.skills)
        if not n:
            return False, "no skills found" + (f" ({len(self.found.problems)} left out)" if self.found.problems else "")
        left = f"; {len(self.found.problems)} left out" if self.found.problems else ""
        return True, f"{n} skill(s): {', '.join(s.name for s in self.found.skills)}{left}"

    def describe(self) -> str:
        """Names and descriptions for every prompt (bounded)."""
        return listing(self.found.skills, self.cfg.listing_max_chars)

    def findings(self) -> list[dict[str, Any]]:
        f = self.found
        summary = f"skills: {len(f.skills)} found" + (f", {len(f.problems)} left out: " + "; ".join(
            p.line() for p in f.problems[:3]) if f.problems else "")
        return [{"tool": "skills", "summary": summary, **f.record()}]

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        if not isinstance(action, ReadSkill):
            return ToolResult(ok=False, error=f"the skills tool cannot run {getattr(action, 'type', action)!r}")
        skill = self.found.by_name(action.name)
        if skill is None:
            known = ", ".join(s.name for s in self.found.skills) or "none"
            return ToolResult(ok=False, error=f"no skill named {action.name!r}; skills: {known}")
        try:
            text, facts = read_skill(skill, action.file, self.cfg.max_file_bytes)
        except ValueError as exc:
            return ToolResult(ok=False, error=str(exc))
        except OSError as exc:
            return ToolResult(ok=False, error=f"cannot read {action.file or 'SKILL.md'} of skill {skill.name!r}: "
                                              f"{exc.strerror or exc}")
        return ToolResult(ok=True, output=text, truncated=facts["truncated"], data=facts)


def _make(s: Setup) -> Tool | None:
    if s.home_root is None or s.skills is None:
        return None
    return SkillsTool(s.home_root, s.skills)


ROW = ToolRow("skill", _make, refused=("no Agent Skills are available",
                                       "no Agent Skills are installed (see `conway skills`)"))
