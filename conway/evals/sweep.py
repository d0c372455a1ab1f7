"""`conway sweep`: one eval command over a grid (models × presets × seeds …), one report per cell, one table.

A sweep file (YAML):

    command: vision-check            # or grounding-check, or tasks run (its args begin with the suite)
    args: [--samples, "32", --size, 1280x800]
    overrides: [policy.structured_output=none]   # config overrides every cell gets (optional)
    grid:
      endpoint: [http://127.0.0.1:8080/v1, http://127.0.0.1:8081/v1]
      policy: [generic, uitars-1.5-7b]     # presets (configs/policy/<name>.yaml)
      seed: [0, 1, 2]
      policy.max_tokens: [256, 1024]       # any other key: a config override
      --max-steps: [10, 20]                # a key that starts with --: that flag of the command

Every combination is a cell; each cell runs the command as its own command
line would (`conway vision-check … --endpoint A policy=generic --seed 0
--output DIR/<cell>.json`), with the sweep's pool flags. The sweep report
(`DIR/sweep.json`, kind `sweep`) has one row per cell: its rate with the 95%
Wilson interval, and whether that interval lies wholly below the best cell's
(a difference the cases show, not noise). Run the same sweep into the same
folder again and finished cells are kept, a cell Ctrl+C cut short is resumed
(`--resume` on its partial report), so a long sweep can be stopped at any time.

A `tasks run` cell's rate is the success rate over its scored tasks (the
tasks report's `success`; errors and not-runnable tasks stay out of it).
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import yaml

from conway.errors import ExitCode, UserError
from conway.evals.kinds import SweepMetric
from conway.evals.report import Report, load_report
from conway.evals.suites import having
from conway.evals.sweep_table import table_lines

FLAGS = {"endpoint": "--endpoint", "model": "--model", "seed": "--seed"}
"""Grid keys that are command-line flags; `policy` is a preset; a key starting with -- is that flag; any other
key is a config override."""


def metrics() -> dict[str, SweepMetric]:
    """Commands a sweep runs → where their rate is in their report's summary (each suite kind's `sweep`)."""
    return {k.sweep.command: k.sweep for k in having("sweep") if k.sweep is not None}


OWN_FLAGS = ("--output", "--resume", "--workers", "--ray", "--pool-endpoint", "--quiet", "--desktops-per-node")
"""Flags the sweep sets itself: not allowed in `args` or as grid keys."""


def load_sweep(path: str) -> dict[str, Any]:
    """The sweep file, checked: a known command, `args` a list of strings, a grid of non-empty lists."""
    p = Path(path).expanduser()
    data = _read_mapping(p)
    overrides = data.get("overrides") or []
    if not isinstance(overrides, list) or not all(isinstance(o, str) and "=" in o and not o.startswith("-")
                                                  for o in overrides):
        raise UserError(f"sweep file {p}: overrides must be a list of key=value config overrides")
    if data.get("command") not in metrics():
        raise UserError(f"sweep file {p}: command must be one of {', '.join(metrics())} (got {data.get('command')!r})")
    metric = metrics()[data["command"]]
    args = _checked_args(p, data, metric)
    grid = _checked_grid(p, data, metric)
    out = {"command": data["command"], "args": args, "overrides": overrides,
           "grid": {str(k): [str(v) for v in vs] for k, vs in grid.items()}}
    names = [cell_name(c) for c in cells(out["grid"])]
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise UserError(f"sweep file {p}: two cells would share the report name {twice}; make the grid's values "
                        "differ in their last 48 letters")
    return out


def _read_mapping(p: Path) -> dict[str, Any]:
    """The sweep file's YAML mapping, with no key but command, args, overrides and grid."""
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"sweep file {p} does not exist") from None
    except IsADirectoryError:
        raise UserError(f"sweep file {p} is a folder; give the YAML file") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(f"sweep file {p} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UserError(f"sweep file {p}: expected a mapping with command, args and grid")
    unknown = set(data) - {"command", "args", "overrides", "grid"}
    if unknown:
        raise UserError(f"sweep file {p}: unknown key(s) {', '.join(sorted(unknown))} (command, args, overrides, "
                        "grid)")
    return data


def _checked_args(p: Path, data: dict[str, Any], metric: SweepMetric) -> list[str]:
    """`args` as command-line words: none the sweep sets itself, led by the suite when the command takes one."""
    args = data.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        raise UserError(f"sweep file {p}: args must be a list of command-line words")
    args = [str(a) for a in args]
    if own := [a for a in args if a.split("=", 1)[0] in OWN_FLAGS]:
        raise UserError(f"sweep file {p}: args may not set {', '.join(own)} (the sweep sets it for each cell)")
    if metric.suite_first and (not args or args[0].startswith("-")):
        raise UserError(f"sweep file {p}: the args of {data['command']} begin with the suite ({metric.suite_first})")
    return args


def _checked_grid(p: Path, data: dict[str, Any], metric: SweepMetric) -> dict[Any, list[Any]]:
    """`grid`: each key one the command takes and the sweep does not set, each value a non-empty list of words."""
    grid = data.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise UserError(f"sweep file {p}: grid must map each varied setting to a list of values")
    for key, values in grid.items():
        if str(key) in metric.not_taken:
            raise UserError(f"sweep file {p}: grid.{key}: {data['command']} has no --{key}")
        if str(key) in OWN_FLAGS:
            raise UserError(f"sweep file {p}: grid.{key}: the sweep sets {key} for each cell")
        if not isinstance(values, list) or not values:
            raise UserError(f"sweep file {p}: grid.{key} must be a non-empty list")
        if any(isinstance(v, (dict, list)) or v is None for v in values):
            raise UserError(f"sweep file {p}: grid.{key} values must be plain words or numbers")
    return grid


def cells(grid: dict[str, list[str]]) -> list[dict[str, str]]:
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def cell_name(cell: dict[str, str]) -> str:
    """A file name that says the cell: `policy-generic_seed-0`."""
    def word(v: str) -> str:  # a long value keeps its end: a path's or URL's last part says the most
        return re.sub(r"[^A-Za-z0-9.]+", "-", v).strip("-")[-48:].strip("-") or "x"
    return "_".join(f"{word(k)}-{word(v)}" for k, v in cell.items())


def cell_argv(sweep: dict[str, Any], cell: dict[str, str], output: Path, pool_args: list[str]) -> list[str]:
    flags = ["--output", str(output), "--quiet", *pool_args]
    overrides = list(sweep["overrides"])
    for key, value in cell.items():
        if key in FLAGS:
            flags += [FLAGS[key], value]
        elif key.startswith("--"):
            flags += [key, value]
        elif key == "policy":
            overrides.insert(0, f"policy={value}")  # a preset first, so other overrides refine it
        else:
            overrides.append(f"{key}={value}")
    args = sweep["args"]
    if metrics()[sweep["command"]].suite_first:  # its overrides follow the suite words (a positional list)
        lead = next((i for i, a in enumerate(args) if a.startswith("-")), len(args))
        return [*sweep["command"].split(), *args[:lead], *overrides, *args[lead:], *flags]
    return [sweep["command"], *args, *flags, *overrides]  # after every flag: the command's trailing words


def _row(sweep: dict[str, Any], cell: dict[str, str], path: Path, out_dir: Path) -> dict[str, Any]:
    metric = metrics()[sweep["command"]]
    row: dict[str, Any] = {"cell": cell_name(cell), "settings": cell, "report": str(path.relative_to(out_dir))}
    try:
        data, _ = load_report(path)
    except UserError as exc:
        return {**row, "status": "missing", "error": str(exc)}
    rate, ci95, successes, n = (_dig(data.get("summary") or {}, key)
                                for key in (metric.rate, metric.ci95, metric.successes, metric.cases))
    return {**row, "status": data.get("status"), "exit_code": data.get("exit_code"), "model_id": data.get("model_id"),
            "rate": rate, "ci95": ci95, "successes": successes, "cases": n, **best_of_n_rates(data)}


def best_of_n_rates(data: dict[str, Any]) -> dict[str, Any]:
    """pass@1, pass@k and best-of-N of a cell whose report has them (a rollout set's, a judge's), for the table."""
    overall = ((data.get("rollouts") or {}).get("figures") or {}).get("overall") or data.get("summary") or {}
    return {key: overall[key]["rate"] for key in ("pass1", "passk", "best_of_n")
            if isinstance(overall.get(key), dict) and overall[key].get("n")}


def _dig(summary: dict[str, Any], dotted: str) -> Any:
    value: Any = summary
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def compare(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The best cell by rate, and which cells' intervals lie wholly below its interval."""
    scored = [r for r in rows if isinstance(r.get("rate"), (int, float)) and r.get("ci95")]
    if not scored:
        return {"best": None}
    best = max(scored, key=lambda r: (r["rate"], r["ci95"][0]))
    for r in scored:
        r["below_best"] = r is not best and r["ci95"][1] < best["ci95"][0]
        r["best"] = r is best
    return {"best": best["cell"], "best_rate": best["rate"], "best_ci95": best["ci95"],
            "clearly_below_best": [r["cell"] for r in scored if r["below_best"]]}


def run_sweep(sweep_file: str, out_dir: str, *, pool_args: list[str], argv: list[str] | None,
              run: Callable[[list[str]], int], say: Callable[[str], None] = print) -> int:
    """Every cell (finished ones kept, a partial one resumed), then `DIR/sweep.json` (a new file each time:
    the previous table is kept as sweep.N.json). Returns the exit code: 130 when a cell was interrupted."""
    started = time.time()  # the table's duration is the whole sweep's, not the writing of the table
    sweep = load_sweep(sweep_file)
    out = Path(out_dir).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise UserError(f"--output {out} is a file; a sweep writes a folder of reports")
    out.mkdir(parents=True, exist_ok=True)
    grid_cells = cells(sweep["grid"])
    rows: list[dict[str, Any]] = []
    interrupted = None
    for i, cell in enumerate(grid_cells, 1):
        path = out / f"{cell_name(cell)}.json"
        extra: list[str] = []
        if path.exists():
            status = (_row(sweep, cell, path, out)).get("status")
            if status != "partial":
                say(f"[{i}/{len(grid_cells)}] {cell_name(cell)}: kept ({status})")
                rows.append(_row(sweep, cell, path, out))
                continue
            kept = _aside(path)
            extra = ["--resume", str(kept)]
        say(f"[{i}/{len(grid_cells)}] {cell_name(cell)}" + (" (resumed)" if extra else ""))
        code = run(cell_argv(sweep, cell, path, pool_args + extra))
        rows.append(_row(sweep, cell, path, out))
        if code == ExitCode.INTERRUPTED:
            interrupted = cell_name(cell)
            break
    summary = {"cells": len(grid_cells), "finished": sum(1 for r in rows if r.get("status") not in ("partial", "missing")),
               **compare(rows)}
    status, code = _verdict(rows, summary, interrupted)
    table = _new_table(out)
    report = Report("sweep", table, argv=argv, config=None, parameters={"sweep_file": str(sweep_file), **sweep},
                    started=started)
    for index, r in enumerate(rows):
        report.add_case({"index": index, "instruction": r["cell"], **r})
    report.finish(status=status, exit_code=code, summary=summary)
    for line in table_lines(rows, summary):
        say(line)
    if summary.get("missing"):
        say(f"sweep incomplete: {summary['missing']}")
    say(f"sweep report: {table}")
    return code


def _verdict(rows: list[dict[str, Any]], summary: dict[str, Any], interrupted: str | None) -> tuple[str, ExitCode]:
    """(status, exit code): partial (130) when a cell was interrupted; incomplete (1) when a cell wrote no report
    (it failed before measuring anything: its error is in its row), never "done" and 0 then; else done (0)."""
    if interrupted:
        summary["interrupted"] = f"stopped in {interrupted}: run the same sweep again to go on"
        return "partial", ExitCode.INTERRUPTED
    missing = [r["cell"] for r in rows if r.get("status") == "missing"]
    if missing:
        summary["missing"] = (f"{len(missing)} of {len(rows)} cell(s) wrote no report ({', '.join(missing[:3])}"
                              + (" …" if len(missing) > 3 else "") + "): see each cell's error; run the same sweep "
                              "again to retry them")
        return "incomplete", ExitCode.SETUP_ERROR
    return "done", ExitCode.PASSED


def _new_table(out: Path) -> Path:
    """`DIR/sweep.json`, the previous one kept as sweep.N.json."""
    table = out / "sweep.json"
    if table.exists():
        n = 1
        while (out / f"sweep.{n}.json").exists():
            n += 1
        table.rename(out / f"sweep.{n}.json")
    return table


def cell_command(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) of one cell's process: the conway that runs the sweep, never one in the working
    directory (`python -m` puts it first on the path, and a clone's parent folder holds a `conway` folder):
    `-P` leaves the working directory off the path, PYTHONPATH leads with this conway's folder."""
    import conway

    root = str(Path(conway.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    return [sys.executable, "-P", "-m", "conway.cli", *argv], env


def run_cell_process(argv: list[str]) -> int:
    """One cell as its own `conway` process (a cell's crash or loaded model ends with it); its exit code.

    Ctrl+C reaches the cell itself (same process group), which writes its partial report and exits 130;
    meanwhile this process ignores it, and forwards a SIGTERM."""
    command, env = cell_command(argv)
    child = subprocess.Popen(command, env=env)
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


def _aside(path: Path) -> Path:
    n = 1
    while (kept := path.with_name(f"{path.stem}.partial-{n}.json")).exists():
        n += 1
    path.rename(kept)
    return kept
