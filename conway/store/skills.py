"""Agent Skills: folders with a SKILL.md (YAML front matter, then Markdown instructions).

Progressive disclosure: every prompt lists each skill's name and description
(bounded, the cut marked); the `read_skill` action returns the instructions,
or one file of the skill's folder, on demand. Skills come from the home's
`skills/` and the folders in `skills.paths`. A malformed skill (no front
matter, a bad or duplicate name, an oversized SKILL.md) is reported with its
reason and left out; it never stops a run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conway.config import SkillsConfig
from conway.text.bounded import cut_bytes, cut_text

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_LISTED_FILES_MAX = 50


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path
    source: str
    """`home` or the `skills.paths` entry it was found under."""


@dataclass(frozen=True)
class SkillProblem:
    where: Path
    problem: str

    def line(self) -> str:
        return f"{self.where}: {self.problem} (left out)"


@dataclass
class SkillSet:
    skills: list[Skill] = field(default_factory=list)
    problems: list[SkillProblem] = field(default_factory=list)

    def by_name(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def record(self) -> dict[str, Any]:
        return {"skills": [{"name": s.name, "folder": str(s.folder), "source": s.source} for s in self.skills],
                "problems": [p.line() for p in self.problems]}


def skill_roots(home_root: Path, cfg: SkillsConfig) -> list[tuple[Path, str]]:
    """(folder, source) in search order: the home's skills/ first, then skills.paths (relative to the home)."""
    roots = [(home_root / "skills", "home")]
    for entry in cfg.paths:
        p = Path(os.path.expanduser(entry))
        roots.append((p if p.is_absolute() else home_root / p, entry))
    return roots


def parse_skill_md(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body); ValueError with a reason when the front matter is missing or bad."""
    m = _FRONT.match(text)
    if not m:
        raise ValueError("SKILL.md has no YAML front matter (a '---' block at the top)")
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise ValueError(f"front matter is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(meta, dict):
        raise ValueError("front matter must be a mapping with name and description")
    return meta, text[m.end():]


def _load_one(folder: Path, source: str, max_bytes: int) -> Skill | SkillProblem:
    md = folder / SKILL_FILE
    try:
        size = md.stat().st_size
        if size > max_bytes:
            return SkillProblem(md, f"SKILL.md is {size} bytes, over skills.max_file_bytes ({max_bytes})")
        text = md.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return SkillProblem(md, "SKILL.md is not UTF-8 text")
    except OSError as exc:
        return SkillProblem(md, f"cannot read SKILL.md: {exc.strerror or exc}")
    try:
        meta, _ = parse_skill_md(text)
    except ValueError as exc:
        return SkillProblem(md, str(exc))
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not name:
        return SkillProblem(md, "front matter has no name")
    if len(name) > NAME_MAX or not NAME_RE.match(name):
        return SkillProblem(md, f"bad name {name!r}: lowercase letters, digits and single hyphens, "
                                f"at most {NAME_MAX} characters")
    if name != folder.name:
        return SkillProblem(md, f"name {name!r} differs from its folder name {folder.name!r}")
    if not isinstance(description, str) or not description.strip():
        return SkillProblem(md, "front matter has no description")
    if len(description) > DESCRIPTION_MAX:
        return SkillProblem(md, f"description is {len(description)} characters, over {DESCRIPTION_MAX}")
    return Skill(name=name, description=" ".join(description.split()), folder=folder, source=source)


def find_skills(home_root: Path, cfg: SkillsConfig) -> SkillSet:
    """Every skill under the roots, in order; problems for what is left out. Never raises."""
    found = SkillSet()
    for root, source in skill_roots(home_root, cfg):
        if not root.is_dir():
            if source != "home":
                found.problems.append(SkillProblem(root, "skills.paths entry is not a folder"))
            elif root.exists():  # the home's `skills` as a file: no skills, said (a missing one is no news)
                found.problems.append(SkillProblem(root, "the home's skills folder is a file; skills are folders "
                                                         "inside a skills folder"))
            continue
        try:
            folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError as exc:
            found.problems.append(SkillProblem(root, f"cannot list: {exc.strerror or exc}"))
            continue
        for folder in folders:
            if not (folder / SKILL_FILE).is_file():
                found.problems.append(SkillProblem(folder, "no SKILL.md in this skill folder"))
                continue
            item = _load_one(folder, source, cfg.max_file_bytes)
            if isinstance(item, SkillProblem):
                found.problems.append(item)
            elif (first := found.by_name(item.name)) is not None:
                found.problems.append(SkillProblem(folder / SKILL_FILE, f"duplicate name {item.name!r} "
                                                   f"(already found in {first.folder})"))
            else:
                found.skills.append(item)
    return found


def listing(skills: list[Skill], max_chars: int) -> str:
    """The prompt's skill list: name and description each, bounded, the cut marked."""
    if not skills:
        return ""
    head = ('Agent Skills (instructions for particular tasks; before such a task read one with '
            '{"type": "read_skill", "name": "<name>"}, and a file it mentions with "file": "<path>"):')
    lines, used = [head], len(head)
    for i, s in enumerate(skills):
        line = f"- {s.name}: {cut_text(s.description, 300)[0]}"
        if used + len(line) + 1 > max_chars:
            lines.append(f"[{len(skills) - i} more skill(s) left out to stay inside skills.listing_max_chars]")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def read_skill(skill: Skill, file: str | None, max_bytes: int) -> tuple[str, dict[str, Any]]:
    """(text, facts) of SKILL.md, or of one file inside the skill folder; ValueError with a reason."""
    root = skill.folder.resolve()
    if file is None:
        target = root / SKILL_FILE
    else:
        rel = Path(file)
        if rel.is_absolute() or ".." in rel.parts:
            raise ValueError(f"file {file!r} must be a relative path inside the skill {skill.name!r}")
        target = (root / rel).resolve()
        if not target.is_relative_to(root):  # a symlink pointing out of the folder
            raise ValueError(f"file {file!r} leads outside the skill {skill.name!r}")
    if not target.is_file():
        raise ValueError(f"skill {skill.name!r} has no file {file!r}" + _files_hint(root))
    data = target.read_bytes()
    if b"\0" in data[:8192]:
        raise ValueError(f"{file!r} is a binary file; read_skill returns text only")
    cut, truncated = cut_bytes(data, max_bytes)
    text = cut.decode("utf-8", "replace")
    if file is None:
        others = _files(root)
        if others:
            text += "\n\n[files in this skill: " + ", ".join(others) + "]"
    return text, {"skill": skill.name, "file": file or SKILL_FILE, "bytes": len(data), "truncated": truncated}


def _files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            rel = str((Path(dirpath) / f).relative_to(root))
            if rel != SKILL_FILE and not f.startswith("."):
                out.append(rel)
            if len(out) >= _LISTED_FILES_MAX:
                return out + ["…"]
    return out


def _files_hint(root: Path) -> str:
    files = _files(root)
    return f"; its files: {', '.join(files)}" if files else ""


def render_skills(found: SkillSet, roots: list[tuple[Path, str]]) -> str:
    """`conway skills`: one line a skill, then what was left out and why."""
    lines = [f"skills folders: {', '.join(str(r) for r, _ in roots)}"]
    if not found.skills:
        lines.append("no skills found (a skill is a folder with SKILL.md; `conway init` installs an example)")
    for s in found.skills:
        lines.append(f"  {s.name:<24} {s.description if len(s.description) <= 100 else s.description[:99] + '…'}")
        lines.append(f"  {'':<24} {s.folder}")
    if found.problems:
        lines.append("left out:")
        lines += [f"  {p.line()}" for p in found.problems]
    return "\n".join(lines)


# --- the example skill `conway init` installs ----------------------------------------

EXAMPLE_NAME = "conway-home"

EXAMPLE_SKILL = """\
---
name: conway-home
description: What the files of this Conway home are, which ones you may edit, and which ones only Conway writes. Read it before touching goals.md, memory.md or anything outside scratch/.
---

# Conway's own file state

You run inside Conway. Everything Conway keeps lives in one folder, the home
(`CONWAY_HOME`). Paths below are relative to it; your file tools resolve relative
paths against `scratch/` unless the configuration says otherwise.

## Files you read and may edit

- `goals.md`: the current work. Conway rereads it at the start of every cycle, so
  an edit takes effect at once. Keep finished items short or remove them.
- `scratch/`: your working folder. Notes, drafts and results go here.

## Files you read but never edit

- `constitution.md`: identity, goals and scope, written by the owner. It is sent
  at the top of every decision.
- `memory.md`: Conway's rolling summary of recent steps. Conway compacts it by
  itself (the prior excerpt moves to `memory.previous.md`).

## Files only Conway writes (never edit, move or delete)

- `state.json`, `state.previous.json`: the current state and the pending action.
- `control.json`: pause/resume/stop requests from the owner.
- `instance.lock`: one running agent per home.
- `journal/*.jsonl`: the append-only record of every intent and result. See
  `journal.md` in this skill for its event kinds.
- `screenshots/`, `mcp/`: recent screenshots and images returned by MCP tools.

## Rules of the loop that matter to you

- An action with a side effect is written to the journal before it runs. If
  Conway stops in the middle, the action is recorded as uncertain and is never
  repeated: look at the result before trying again.
- Repeating the same side-effect action more than three times in a row is
  suppressed; change approach instead.
- `finish` with DONE or FAIL is your own report; only an independent check
  counts as verified success.
"""

EXAMPLE_FILES = {
    "journal.md": """\
# Journal event kinds

One JSON object per line: `schema`, `session`, `step`, `kind`, `ts`, `payload`.

| kind | written when |
| --- | --- |
| session | a run starts or ends; what the tools found at start |
| observation | a screenshot (or synthetic image) was taken |
| decision | the model answered (raw text, parsed actions) |
| intent | just before an action with a side effect (fsynced) |
| result / error | what an action returned |
| uncertain | an action may or may not have happened; it is not replayed |
| suppressed | a repeated action was not run |
| finish | the model reported DONE or FAIL (its own word) |
| control, recovery | pause/resume/stop; state recovered after a crash |
""",
}


def install_example(home_root: Path) -> str:
    """Write the example skill unless a folder of that name exists; returns a message."""
    folder = home_root / "skills" / EXAMPLE_NAME
    if folder.exists():
        return f"kept existing skill {EXAMPLE_NAME} (not overwritten)"
    folder.mkdir(parents=True)
    (folder / SKILL_FILE).write_text(EXAMPLE_SKILL, encoding="utf-8")
    for name, text in EXAMPLE_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return f"wrote example skill skills/{EXAMPLE_NAME}"
