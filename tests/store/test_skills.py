"""Agent Skills: discovery, the bounded listing in every prompt, `read_skill`, and malformed skills left out."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import run_cli
from helpers.loop_harness import run_script


def make_skill(root: Path, folder: str, text: str | None = None, **files: str) -> Path:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    if text is None:
        text = f"---\nname: {folder}\ndescription: Does {folder} things.\n---\n\n# {folder}\n\nStep one.\n"
    (d / "SKILL.md").write_text(text, encoding="utf-8")
    for name, body in files.items():
        (d / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (d / name.replace("__", "/")).write_text(body, encoding="utf-8")
    return d


def test_init_installs_the_example_skill_and_conway_skills_lists_it(conway_home):
    r = run_cli("init")
    assert r.returncode == 0 and "wrote example skill skills/conway-home" in r.stdout
    skill = conway_home / "skills" / "conway-home" / "SKILL.md"
    assert "state.json" in skill.read_text() and (skill.parent / "journal.md").is_file()
    r = run_cli("skills")
    assert r.returncode == 0 and "conway-home" in r.stdout and "left out" not in r.stdout
    # init keeps an owner's edited copy
    skill.write_text(skill.read_text() + "\nmine\n")
    assert "kept existing skill conway-home" in run_cli("init").stdout
    assert skill.read_text().endswith("mine\n")


def test_malformed_skills_are_reported_and_left_out_never_a_crash(conway_home, tmp_path):
    assert run_cli("init").returncode == 0
    skills = conway_home / "skills"
    make_skill(skills, "good")
    make_skill(skills, "no-front", "# just markdown\n")
    make_skill(skills, "bad-yaml", "---\nname: [unclosed\n---\nbody\n")
    make_skill(skills, "Bad_Name", "---\nname: Bad_Name\ndescription: x\n---\n")
    make_skill(skills, "other-folder", "---\nname: not-the-folder\ndescription: x\n---\n")
    make_skill(skills, "no-desc", "---\nname: no-desc\n---\n")
    make_skill(skills, "huge", "---\nname: huge\ndescription: big\n---\n" + "x" * 70_000)
    (skills / "empty-folder").mkdir()
    extra = tmp_path / "more-skills"
    make_skill(extra, "good")  # duplicate of the home's
    make_skill(extra, "extra-one")
    (conway_home / "config.yaml").write_text(yaml.safe_dump({"skills": {"paths": [str(extra), str(tmp_path / "nope")]}}))

    r = run_cli("skills", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [s["name"] for s in data["skills"]] == ["conway-home", "good", "extra-one"]
    problems = "\n".join(data["problems"])
    for words in ("has no YAML front matter", "front matter is not valid YAML", "bad name 'Bad_Name'",
                  "differs from its folder name", "front matter has no description", "over skills.max_file_bytes",
                  "no SKILL.md in this skill folder", "duplicate name 'good'", "skills.paths entry is not a folder"):
        assert words in problems, words

    r = run_cli("doctor", "--json")
    assert r.returncode == 0
    doc = json.loads(r.stdout)["skills"]
    assert [s["name"] for s in doc["skills"]] == ["conway-home", "good", "extra-one"] and len(doc["problems"]) == 9

    report = tmp_path / "pf.json"
    r = run_cli("preflight", "--mock", "--output", str(report))
    check = next(c for c in json.loads(report.read_text())["cases"] if c["check"] == "skills")
    assert check["status"] == "warn" and "9 malformed skill(s) left out" in check["detail"]

    # and a run offers exactly the good ones
    run = run_script([{"action": {"type": "read_skill", "name": "Bad_Name"}}], overrides=["agent.max_steps=1"])
    found = next(p for p in run.payloads("session") if p.get("event") == "tools" and p["tool"] == "skills")
    assert [s["name"] for s in found["skills"]] == ["conway-home", "good", "extra-one"]
    assert "no skill named 'Bad_Name'" in run.payloads("error")[0]["error"]


def test_read_skill_returns_instructions_and_path_checked_files(conway_home, tmp_path):
    from conway.store.home import init_home, resolve_home
    init_home(resolve_home(None))
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    d = make_skill(conway_home / "skills", "notes", docs__guide_md="# Guide\nuse it\n")
    (d / "escape.txt").symlink_to(secret)
    (d / "blob.bin").write_bytes(b"\x00\x01\x02")
    steps = [{"action": {"type": "read_skill", "name": "notes"}},
             {"action": {"type": "read_skill", "name": "notes", "file": "docs/guide_md"}},
             {"action": {"type": "read_skill", "name": "notes", "file": "../conway-home/SKILL.md"}},
             {"action": {"type": "read_skill", "name": "notes", "file": str(secret)}},
             {"action": {"type": "read_skill", "name": "notes", "file": "escape.txt"}},
             {"action": {"type": "read_skill", "name": "notes", "file": "blob.bin"}},
             {"action": {"type": "read_skill", "name": "notes", "file": "missing.md"}}]
    run = run_script(steps, overrides=[f"agent.max_steps={len(steps)}"])
    assert "intent" not in run.kinds()  # reading a skill has no side effect
    outcomes = [e["payload"] for e in run.events if e["kind"] in ("result", "error")]
    assert outcomes[0]["ok"] and "Step one." in outcomes[0]["output"] and "docs/guide_md" in outcomes[0]["output"]
    assert outcomes[1]["ok"] and outcomes[1]["output"] == "# Guide\nuse it\n"
    assert "must be a relative path inside the skill" in outcomes[2]["error"]
    assert "must be a relative path inside the skill" in outcomes[3]["error"]
    assert "leads outside the skill" in outcomes[4]["error"]
    assert "binary file" in outcomes[5]["error"]
    assert "has no file 'missing.md'" in outcomes[6]["error"] and "docs/guide_md" in outcomes[6]["error"]
    assert "TOP-SECRET-CONTENT" not in json.dumps(outcomes)


def test_every_prompt_lists_skills_bounded_with_the_cut_marked():
    from conway.store.skills import Skill, listing
    skills = [Skill(name=f"skill-{i}", description="d" * 150, folder=Path("/x"), source="home") for i in range(40)]
    text = listing(skills, 2000)
    assert len(text) <= 2000 + 120 and "skill-0: " in text
    assert "more skill(s) left out to stay inside skills.listing_max_chars]" in text
    assert listing([], 2000) == ""


def test_skills_as_a_file_in_the_home_is_said_not_silent(conway_home):
    assert run_cli("init").returncode == 0
    skills = conway_home / "skills"
    for p in sorted(skills.rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    skills.rmdir()
    skills.write_text("not a folder\n")
    r = run_cli("skills")
    assert r.returncode == 0 and "no skills found" in r.stdout
    assert f"left out:\n  {skills}: the home's skills folder is a file" in r.stdout, r.stdout
