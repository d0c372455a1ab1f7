"""conway sweep: a grid of vision-check cells, one report each and a table; resumable; bad sweep files.

Answers come from the FAKE vision fixture server (tests/fixtures/vision_fixture_server.py), in "centre"
mode (every click on the target) or "outside" (every click misses), switched per cell by the endpoint.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import psutil
import pytest
import yaml
from fixtures.vision_fixture_server import VisionFixtureServer

from conway.cli.main import main
from conway.evals.report_render import render_report


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CONWAY_HOME", str(tmp_path / "home"))


def _sweep(tmp_path: Path, good: str, bad: str, seeds=(0, 1)) -> Path:
    f = tmp_path / "sweep.yaml"
    f.write_text(yaml.safe_dump({
        "command": "vision-check",
        "args": ["--samples", "6", "--size", "640x400"], "overrides": ["policy.structured_output=none"],
        "grid": {"endpoint": [good, bad], "policy": ["generic"], "seed": list(seeds)}}))
    return f


def test_a_sweep_runs_every_cell_and_compares_them(tmp_path, capsys):
    with VisionFixtureServer(mode="centre") as good, VisionFixtureServer(mode="outside") as bad:
        code = main(["sweep", str(_sweep(tmp_path, good.base_url, bad.base_url)), "--output", str(tmp_path / "out"),
                     "--workers", "2"])
    assert code == 0
    table = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert table["kind"] == "sweep" and table["summary"]["cells"] == 4 and table["summary"]["finished"] == 4
    rates = {tuple(sorted(c["settings"].items())): c["rate"] for c in table["cases"]}
    assert sorted(rates.values()) == [0.0, 0.0, 1.0, 1.0]
    best = next(c for c in table["cases"] if c["cell"] == table["summary"]["best"])
    assert best["rate"] == 1.0
    assert len(table["summary"]["clearly_below_best"]) == 2  # 0/6 vs 6/6: the intervals do not overlap
    for c in table["cases"]:
        cell = json.loads((tmp_path / "out" / c["report"]).read_text())
        assert cell["kind"] == "vision-check" and cell["pool"]["workers"] == 2
        assert cell["seed"] == int(c["settings"]["seed"])
    out = capsys.readouterr().out
    assert " best\n" in out + "\n" and " below best" in out
    assert " below best" in render_report(tmp_path / "out" / "sweep.json")


def test_the_table_names_every_cell_whole_and_ranks_apart_from_the_status():
    # it cut names at 48 characters and said "fail (best)"
    from conway.evals.sweep_table import table_lines

    long = "endpoint=http://127.0.0.1:8080/v1,policy=opencua-7b,seed=12,policy.history_images=5"
    rows = [{"cell": long, "rate": 0.6, "ci95": [0.3, 0.85], "cases": 10, "status": "fail"},
            {"cell": long.replace("seed=12", "seed=13"), "rate": 0.0, "ci95": [0.0, 0.3], "cases": 10,
             "status": "fail", "below_best": True}]
    head, best, below = table_lines(rows, {"best": long})
    assert head.split() == ["cell", "rate", "95%", "CI", "n", "report", "rank"]
    assert best.startswith(long + " ") and best.split()[-2:] == ["fail", "best"] and "(best)" not in best
    assert below.split()[-3:] == ["fail", "below", "best"]


def test_the_table_records_the_whole_sweep_s_duration(tmp_path):
    with VisionFixtureServer(mode="centre", delay_s=0.1) as good, VisionFixtureServer(mode="outside") as bad:
        started = time.monotonic()
        code = main(["sweep", str(_sweep(tmp_path, good.base_url, bad.base_url, seeds=(0,))), "--output",
                     str(tmp_path / "out")])
        took = time.monotonic() - started
    assert code == 0
    table = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert took * 0.9 <= table["duration_s"] <= took + 1, (table["duration_s"], took)  # not the table's writing


def test_running_a_sweep_again_keeps_finished_cells_and_resumes_the_cut_one(tmp_path):
    with VisionFixtureServer(mode="centre", delay_s=0.2) as good, VisionFixtureServer(mode="outside") as bad:
        good_url = good.base_url
        f = _sweep(tmp_path, good_url, bad.base_url, seeds=(0,))

        def interrupt(count: int) -> None:  # Ctrl+C as a terminal sends it: to the running cell too
            if count == 3:
                for child in psutil.Process().children():  # the cell's conway only (the session's X server
                    if "conway.cli" in " ".join(child.cmdline()):  # is a child of this process too)
                        os.kill(child.pid, signal.SIGINT)

        good.on_request = interrupt
        code = main(["sweep", str(f), "--output", str(tmp_path / "out")])
        assert code == 130
        first = json.loads((tmp_path / "out" / "sweep.json").read_text())
        assert first["status"] == "partial" and "run the same sweep again" in first["summary"]["interrupted"]
        good.on_request = None
        asked = good.request_count
        code = main(["sweep", str(f), "--output", str(tmp_path / "out")])
        resumed_requests = good.request_count - asked
    assert code == 0
    table = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert table["summary"]["finished"] == 2
    assert (tmp_path / "out" / "sweep.1.json").exists()  # the first table is kept
    assert resumed_requests < 6  # the cut cell's finished cases were not asked again
    good_cell = next(c for c in table["cases"] if c["settings"]["endpoint"] == good_url)
    assert good_cell["rate"] == 1.0 and good_cell["cases"] == 6


@pytest.mark.parametrize("content, message", [
    ("command: start\ngrid: {seed: [1]}", "command must be one of"),
    ("command: vision-check\ngrid: {}", "grid must map"),
    ("command: vision-check\ngrid: {seed: []}", "grid.seed must be a non-empty list"),
    ("command: vision-check\nargs: [--output, x]\ngrid: {seed: [1]}", "may not set --output"),
    ("command: vision-check\ngrid: {seed: [1]}\nextra: 1", "unknown key(s) extra"),
    ("command: [unclosed", "not valid YAML"),
    ("command: vision-check\noverrides: [--x]\ngrid: {seed: [1]}", "overrides must be a list of key=value"),
])
def test_bad_sweep_files_are_one_line(tmp_path, capsys, content, message):
    f = tmp_path / "bad.yaml"
    f.write_text(content)
    assert main(["sweep", str(f), "--output", str(tmp_path / "out")]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    ("command: tasks run\nargs: [--cache, x]\ngrid: {policy: [mock]}", "begin with the suite"),
    ("command: tasks run\nargs: [suite]\ngrid: {seed: [1, 2]}", "tasks run has no --seed"),
    ("command: tasks run\nargs: [suite]\ngrid: {--workers: [1, 2]}", "the sweep sets --workers"),
    ("command: tasks run\nargs: [suite]\ngrid: {--mock-scripts: [/a/very/long/folder/name/that/is/the/same/x"
     "/scripts, /b/very/long/folder/name/that/is/the/same/x/scripts]}", "share the report name"),
])
def test_bad_tasks_run_sweeps_are_one_line(tmp_path, capsys, content, message):
    f = tmp_path / "bad.yaml"
    f.write_text(content)
    assert main(["sweep", str(f), "--output", str(tmp_path / "out")]) == 1
    assert message in capsys.readouterr().err


def test_a_missing_sweep_file_or_a_folder_is_one_line(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "none.yaml"), "--output", str(tmp_path / "out")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path), "--output", str(tmp_path / "out")]) == 1
    assert "is a folder" in capsys.readouterr().err


def test_the_example_sweep_file_is_valid():
    from conway.evals.sweep import cells, load_sweep
    sweep = load_sweep(str(Path(__file__).resolve().parents[2] / "evals" / "sweeps" / "example.yaml"))
    assert len(cells(sweep["grid"])) == 6


def test_the_tasks_example_sweep_file_is_valid():
    from conway.evals.sweep import cell_argv, cells, load_sweep
    sweep = load_sweep(str(Path(__file__).resolve().parents[2] / "evals" / "sweeps" / "tasks-mock.yaml"))
    first = cells(sweep["grid"])[0]
    argv = cell_argv(sweep, first, Path("out.json"), [])
    assert argv[:3] == ["tasks", "run", "evals/osworld_local"]
    assert argv[argv.index("--mock-scripts") + 1] == "evals/osworld_local/mock/pass"


def test_a_tasks_run_sweep_varies_the_task_timeout_as_the_command_s_flag(tmp_path):
    from conway.cli.main import build_parser
    from conway.cli.tasks import split_overrides
    from conway.evals.sweep import cell_argv, cells, load_sweep
    f = tmp_path / "timeouts.yaml"
    f.write_text(yaml.safe_dump({"command": "tasks run", "args": ["suite", "--max-seconds", "60"],
                                 "overrides": ["policy=mock"], "grid": {"--task-timeout-s": [30, 90]}}))
    sweep = load_sweep(str(f))
    parsed = []
    for cell in cells(sweep["grid"]):
        args = build_parser().parse_args(cell_argv(sweep, cell, tmp_path / "out.json", []))
        split_overrides(args)
        parsed.append((args.task_timeout_s, args.max_seconds, args.suite, args.overrides))
    assert parsed == [(30.0, 60.0, ["suite"], ["policy=mock"]), (90.0, 60.0, ["suite"], ["policy=mock"])]


def test_a_sweep_started_beside_a_folder_named_conway_runs_its_cells(tmp_path, monkeypatch):
    """Started from a clone's parent (which holds a `conway` folder), every cell imports the conway that runs
    the sweep, never the working directory's (it failed "cannot import name '__version__'", all cells missing)."""
    (tmp_path / "conway").mkdir()  # the clone itself, or any folder of that name
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "one.yaml"
    with VisionFixtureServer(mode="centre") as good:
        f.write_text(yaml.safe_dump({"command": "vision-check", "args": ["--samples", "2", "--size", "320x200"],
                                     "overrides": ["policy.structured_output=none"],
                                     "grid": {"endpoint": [good.base_url], "seed": [0]}}))
        code = main(["sweep", str(f), "--output", str(tmp_path / "out")])
    table = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert [c["status"] for c in table["cases"]] == ["pass"]
    assert code == 0 and table["status"] == "done"


def test_bad_pool_flags_are_refused_before_any_cell(tmp_path, capsys):
    """`--workers 0`: one line and exit 1 up front, not once per cell with the sweep "done" and exit 0."""
    f = _sweep(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1")
    assert main(["sweep", str(f), "--output", str(tmp_path / "out"), "--workers", "0"]) == 1
    assert "--workers must be at least 1 (got 0)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_sweep_with_a_missing_cell_is_neither_done_nor_exit_0(tmp_path):
    """A cell that wrote no report (it failed before measuring) makes the sweep incomplete, exit 1."""
    from conway.evals.sweep import run_sweep

    f = _sweep(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1", seeds=(0,))
    lines: list[str] = []
    code = run_sweep(str(f), str(tmp_path / "out"), pool_args=[], argv=None, run=lambda argv: 1, say=lines.append)
    table = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert code == 1 and table["status"] == "incomplete" and table["exit_code"] == 1
    assert [c["status"] for c in table["cases"]] == ["missing", "missing"]
    assert "2 of 2 cell(s) wrote no report" in table["summary"]["missing"]
    assert any(line.startswith("sweep incomplete: ") for line in lines)
