"""Every stored prompt and tool file is the text its SOURCES.md row names, and every file taken from an official
source is the text the golden builder extracted from that source (its sha256 in
`tests/data/goldens/prompt_sources.json`, written by `scripts/build/osworld_goldens.py` from the unmodified
OSWorld `mm_agents/` and hai-cookbook notebook): an edited prompt, or an edited prompt with its SOURCES.md sum
edited to match, fails."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from helpers.prompt_frames import FAMILIES_FOLDER

SOURCES_SUMS = Path(__file__).resolve().parents[1] / "data" / "goldens" / "prompt_sources.json"
_ROW = re.compile(r"^\| `([^`]+)` \|.*\| ([0-9a-f]{64}) \|$", re.M)


def official_sums() -> dict[str, str]:
    return json.loads(SOURCES_SUMS.read_text(encoding="utf-8"))["sha256"]


def check(families: Path, official: dict[str, str]) -> list[str]:
    """Each stored file whose bytes are not its SOURCES.md sum or not the official text, one line each."""
    problems = []
    for sources in sorted(families.glob("*/prompts/SOURCES.md")):
        folder, family = sources.parent, sources.parent.parent.name
        listed = dict(_ROW.findall(sources.read_text(encoding="utf-8")))
        for path in sorted(p for p in folder.iterdir() if p.name != "SOURCES.md"):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if listed.get(path.name) != digest:
                problems.append(f"{family}/{path.name}: sha256 {digest} is not the sum SOURCES.md lists")
            if official.get(f"{family}/{path.name}", digest) != digest:
                problems.append(f"{family}/{path.name}: not the official text (scripts/build/osworld_goldens.py)")
        problems += [f"{family}/{name}: listed in SOURCES.md, not stored" for name in listed
                     if not (folder / name).exists()]
    problems += [f"{name}: official, not stored" for name in official
                 if not (families / name.split("/")[0] / "prompts" / name.split("/")[1]).exists()]
    return problems


def test_the_stored_prompts_are_the_official_text():
    assert check(FAMILIES_FOLDER, official_sums()) == []


def _conways_own() -> set[str]:
    """The stored files whose SOURCES.md row says they are Conway's own (no official text to hold them to)."""
    own = set()
    for sources in FAMILIES_FOLDER.glob("*/prompts/SOURCES.md"):
        for line in sources.read_text(encoding="utf-8").splitlines():
            found = re.match(r"^\| `([^`]+)` \| Conway's own", line)
            if found:
                own.add(f"{sources.parent.parent.name}/{found.group(1)}")
    return own


def test_every_stored_prompt_of_every_family_is_held_to_its_official_location():
    """Every stored file but Conway's own is in prompt_sources.json, with its sum and where in which repository
    (at which commit) its official text is: nothing is held only by the sums the project wrote itself."""
    sums = json.loads(SOURCES_SUMS.read_text(encoding="utf-8"))
    assert any("b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6" in s for s in sums["sources"])
    official = set(STORED) - _conways_own()
    assert set(sums["sha256"]) == official == set(sums["locations"])
    for name, where in sums["locations"].items():
        repo, _, symbol = where.partition(": ")
        # a repository at a commit, or a documentation page by its digest (a family with no agent code: Holo3.1)
        assert re.search(r" @ ([0-9a-f]{40}|sha256:[0-9a-f]{64})$", repo) and symbol, (name, where)
    assert {n.split("/")[0] for n in official} == {"evocua", "guiowl", "gta1", "holo", "holo2", "holo3", "jedi",
                                                   "kimi", "maiui", "opencua", "qwen25vl", "qwen3vl", "uitars",
                                                   "uivenus"}
    from scripts.build.goldens_holo3 import PAGE_SHA256
    assert all(where.split(" @ sha256:")[1].startswith(PAGE_SHA256) for where in sums["locations"].values()
               if " @ sha256:" in where)  # the page the golden was recorded from


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "families"
    for sources in FAMILIES_FOLDER.glob("*/prompts/SOURCES.md"):
        shutil.copytree(sources.parent, copy / sources.parent.parent.name / "prompts")
    return copy


STORED = sorted(f"{p.parent.parent.name}/{p.name}" for p in FAMILIES_FOLDER.glob("*/prompts/*")
                if p.name != "SOURCES.md" and (p.parent / "SOURCES.md").exists())


@pytest.mark.parametrize("name", STORED)
def test_an_edited_prompt_or_tool_file_fails_the_check(tmp_path, name):
    copy = _copy(tmp_path)
    family, file = name.split("/")
    path = copy / family / "prompts" / file
    old = hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_bytes(path.read_bytes().replace(b"e", b"E", 1) if b"e" in path.read_bytes() else path.read_bytes() + b" ")
    assert any(line.startswith(f"{name}:") for line in check(copy, official_sums()))
    if name in official_sums():  # its SOURCES.md sum edited to match: still not the official text
        new = hashlib.sha256(path.read_bytes()).hexdigest()
        sources = copy / family / "prompts" / "SOURCES.md"
        sources.write_text(sources.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
        assert [line for line in check(copy, official_sums()) if line.startswith(f"{name}:")] == \
            [f"{name}: not the official text (scripts/build/osworld_goldens.py)"]
