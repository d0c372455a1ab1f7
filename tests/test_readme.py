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
