"""A command of the command line's own (`status`, `stop` …) starts without loading the eval suites or the tools:
they are what made `conway stop` slower once suites brought their own commands (docs/measurements.md)."""

from __future__ import annotations

import subprocess
import sys

from conway.cli.main import build_parser

PROBE = """
import sys
from conway.cli.main import main
code = main(["--home", sys.argv[1], "status"])
tools = {"conway.tools." + t for t in ("gui", "files", "shell", "browser", "mcp", "skills")}
heavy = sorted(m for m in sys.modules if m == "conway.evals.suites" or m in tools)
print(code, heavy)
"""


def test_status_loads_neither_suites_nor_tools(tmp_path) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "home")], capture_output=True, text=True,
                         timeout=120)
    code, heavy = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert heavy == "[]", heavy
    assert code == "1"  # no home yet: status says so and fails, as before


def test_the_short_parser_parses_and_helps_as_the_whole_one(capsys) -> None:
    argv = ["--home", "/tmp/x", "status", "--json"]
    assert vars(build_parser("status").parse_args(argv)) == vars(build_parser().parse_args(argv))
    helps = []
    for parser in (build_parser("stop"), build_parser()):
        try:
            parser.parse_args(["stop", "--help"])
        except SystemExit:
            helps.append(capsys.readouterr().out)
    assert helps[0] == helps[1] and "usage: conway stop" in helps[0]
