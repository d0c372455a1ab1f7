"""The README stays true: its two commands work, CI runs its test command, every command is listed."""

from __future__ import annotations

import re
import shlex

from conftest import REPO, run_cli

from conway.cli.main import build_parser


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def block_after(marker: str) -> str:
    m = re.search(rf"<!-- {marker} -->\s*```bash\n(.*?)```", readme(), re.S)
    assert m, f"README lacks the {marker} block"
    return m.group(1).strip()


def test_ci_runs_exactly_the_readme_test_command():
    command = block_after("testcommand")
    ci = (REPO / ".ci" / "run").read_text()
    assert command in ci


def test_the_quickstart_command_runs_the_agent_offline(conway_home):
    """Run the README's first command as a newcomer would (the pip install is CI's own first step)."""
    steps = [shlex.split(part) for part in block_after("quickstart").split("&&")]
    conway_steps = [s for s in steps if s[0].endswith("conway")]
    assert [s[1] for s in conway_steps] == ["init", "run"]
    for step in conway_steps:
        r = run_cli(*step[1:])
        assert r.returncode == 0, r.stderr
    assert "stopped after 5 step(s)" in r.stdout
    assert "model reports DONE" in r.stdout
    assert (conway_home / "scratch" / "notes.md").exists()


def test_every_command_is_in_the_readme_table():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    text = readme()
    missing = [name for name in sub.choices if f"conway {name}" not in text and f"`{name}`" not in text]
    assert not missing, f"README's command table lacks: {missing}"


# --- every reference in the docs is true ----------------------------------------------------------------------
# README.md, docs/*.md and the folder guides are read as a newcomer reads them: links are followed, commands and paths looked up.
# HTML comments are left out, so a placeholder such as `<!-- TODO(lead): ... -->` is never checked.

PATH_ROOTS = ("conway", "scripts", "tests", "configs", "docs", "training", "evals", "datasets")
PATH = re.compile(rf"(?<![\w$./~-])((?:{'|'.join(PATH_ROOTS)})/[\w./{{}},*-]*)")
MODULE = re.compile(r"python3?\s+-m\s+((?:scripts|training|conway)(?:\.\w+)+)")
BASH_SCRIPT = re.compile(r"\bbash\s+(scripts/\S+)")
SUBCOMMAND = re.compile(r"(?:^|(?<=[\s;&|(/]))conway((?:\s+--home\s+\S+)?)\s+([a-z][a-z-]*)\b")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


FOLDER_GUIDES = ("training/README.md", "evals/README.md", "evals/grounding/README.md", "datasets/README.md")


def doc_files() -> list:
    """README.md, docs/*.md and the folder guides the docs link to."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *(REPO / p for p in FOLDER_GUIDES)]


def _text(path) -> str:
    """The page without its HTML comments (line numbers kept)."""
    return re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), path.read_text(encoding="utf-8"), flags=re.S)


def _where(path, text: str, pos: int) -> str:
    return f"{path.relative_to(REPO)}:{text.count(chr(10), 0, pos) + 1}"


def _fenced(text: str):
    """(position, body) of every fenced code block."""
    for m in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
        yield m.start(1), m.group(1)


def _spans(text: str):
    """(position, body) of every inline code span outside fenced blocks."""
    blanked = re.sub(r"^```[^\n]*\n.*?^```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S | re.M)
    for m in re.finditer(r"(`+)(.+?)\1", blanked, re.S):
        yield m.start(2), m.group(2)


def _code(text: str):
    yield from _fenced(text)
    yield from _spans(text)


def slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    body = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", body, re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def _expand(path: str) -> list[str]:
    """`conway/tools/{gui,files}.py` → both names."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [x for alt in m.group(1).split(",") for x in _expand(path[:m.start()] + alt + path[m.end():])]


def _exists(rel: str) -> bool:
    rel = rel.rstrip(".,;:")
    if any(c in rel for c in "*?["):
        return any(REPO.glob(rel))
    return (REPO / rel).exists()


def test_every_relative_link_resolves():
    broken = []
    for page in doc_files():
        text = _text(page)
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            where = _where(page, text, m.start())
            if not dest.exists():
                broken.append(f"{where}: link to {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where}: link to {target}: {dest.relative_to(REPO)} has no heading #{anchor}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_conway_command_in_the_docs_exists():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    broken = []
    for page in doc_files():
        text = _text(page)
        for pos, body in _code(text):
            for m in SUBCOMMAND.finditer(body):
                if m.group(2) not in sub.choices:
                    broken.append(f"{_where(page, text, pos + m.start())}: `conway {m.group(2)}` is not a subcommand")
    assert not broken, "unknown commands:\n" + "\n".join(broken)


def test_every_script_and_module_named_in_the_docs_exists():
    broken = []
    for page in doc_files():
        text = _text(page)
        for pos, body in _code(text):
            for m in MODULE.finditer(body):
                rel = m.group(1).replace(".", "/")
                if not ((REPO / f"{rel}.py").is_file() or (REPO / rel / "__init__.py").is_file()):
                    broken.append(f"{_where(page, text, pos + m.start())}: python -m {m.group(1)}: no {rel}.py")
            for m in BASH_SCRIPT.finditer(body):
                if not (REPO / m.group(1)).is_file():
                    broken.append(f"{_where(page, text, pos + m.start())}: bash {m.group(1)}: no such file")
    assert not broken, "missing scripts:\n" + "\n".join(broken)


def test_every_repository_path_in_backticks_exists():
    broken = []
    for page in doc_files():
        text = _text(page)
        for pos, body in _spans(text):
            for m in PATH.finditer(body):
                for rel in _expand(m.group(1)):
                    if not _exists(rel):
                        broken.append(f"{_where(page, text, pos + m.start())}: `{rel}` does not exist")
    assert not broken, "missing paths:\n" + "\n".join(broken)


def test_code_cites_sections_that_exist():
    """Code cites docs pages and their sections (`docs/architecture.md#the-cycle`); each must exist."""
    cite = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+))?")
    stale = re.compile(r"DESIGN(?:\.md)? \N{SECTION SIGN}")  # the founding design is not in the repository
    broken = []
    for pkg in ("conway", "training", "scripts", "tests"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for m in cite.finditer(text):
                page = REPO / "docs" / m.group(1)
                if not page.is_file() or (m.group(2) and m.group(2) not in anchors(page)):
                    broken.append(f"{_where(path, text, m.start())}: cites {m.group(0)}, which does not exist")
            for m in stale.finditer(text):
                broken.append(f"{_where(path, text, m.start())}: cites {m.group(0)}: cite docs/architecture.md#…")
    assert not broken, "broken citations:\n" + "\n".join(broken)


def test_the_no_model_refusal_quoted_in_the_readme_is_the_one_printed():
    """Word for word, but for the family list, which the README elides (`…`) so that a new family does not touch
    it; the refusal itself names every registered family."""
    from conway.args.resolve import NO_MODEL
    from conway.policies.families import FAMILIES, one_of
    families = one_of(FAMILIES)
    assert f"(policy.kind {families})" in NO_MODEL
    assert f"conway: error: {NO_MODEL.replace(families, '…')}" in readme()


def test_the_readme_preset_table_says_what_models_conformance_says():
    """One source: each row's "deviations at the defaults" is `models --conformance`'s list at the preset's
    defaults (`deviation_lines`), "none" when it is empty, else the family's `known_differences` word for word."""
    from conway.config import load_config
    from conway.policies.deviations import deviation_lines
    from conway.policies.families import FAMILIES

    section = readme().split("## Presets send what their authors' agents send", 1)[1]
    table = section[section.index("\n|"):].split("\n\n", 1)[0]  # the first table of the section
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 12, "the README's preset table was not found"
    wrong = []
    for row in rows:
        for preset in re.findall(r"`([\w.-]+)`", row[0]):
            config = load_config(None, [f"policy={preset}"])
            family = FAMILIES[config.policy.kind]
            lines = deviation_lines(config)
            said = ("not measured (Conway's own request)" if not (family.conversation.official or family.reference)
                    else "none" if not lines else "; ".join(family.known_differences))
            assert lines == [f"known: {k}" for k in family.known_differences]  # at the defaults: only the known ones
            if row[-1] != said:
                wrong.append(f"{preset}: README says {row[-1]!r}, models --conformance {said!r}")
    assert not wrong, "\n".join(wrong)


def test_the_window_refusal_quoted_in_running_models_is_the_one_printed():
    """The quote may elide (`…`) a stretch; every piece around the elisions is printed, in that order."""
    from conway.config import load_config
    from conway.policies.conformance import window_refusal

    doc = (REPO / "docs" / "running-models.md").read_text(encoding="utf-8")
    quote = " ".join(re.search(r"`(the uitars window needs [^`]*)`", doc).group(1).split())
    printed = window_refusal(load_config(None, ["policy=uitars-1.5-7b"]), 8192, "llama-server /props (per-slot n_ctx)")
    at = 0
    for piece in quote.split("…"):
        found = printed.find(piece, at)
        assert found >= 0, f"running-models.md quotes {piece!r}, the line printed is {printed!r}"
        at = found + len(piece)
