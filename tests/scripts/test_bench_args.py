"""The benchmarks of issue 26 refuse bad arguments in one line, and the cheap ones run at a tiny size.

Figures are the benchmarks' business (docs/measurements.md); these tests only check that the commands
work and say what they measured, never how fast.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def bench(module: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"scripts.bench.{module}", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("module,args,needle", [
    ("bench_loop", ["--sync", "fsync,nosuch"], "--sync takes fdatasync, fsync, fallocate"),
    ("bench_loop", ["--cycles", "1", "--blocks", "2"], "--cycles must be at least --blocks"),
    ("bench_loop", ["--observe", "screen", "--sync", "fsync"], "--sync compares journals with the synthetic"),
    ("bench_journal_sync", ["--appends", "0"], "--appends must be 1.."),
    ("bench_model", ["--runs", "fastest"], "--runs takes stable-first, no cache"),
    ("bench_model", ["--window", "99"], "--window must be 256..16384"),
])
def test_a_bad_argument_is_one_line(module, args, needle):
    done = bench(module, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr


def test_every_sync_method_is_measured_side_by_side(tmp_path):
    done = bench("bench_journal_sync", "--appends", "5")
    assert done.returncode == 0, done.stderr
    for method in ("fsync", "fdatasync", "O_DSYNC", "fallocate + fdatasync", "zero-filled + fdatasync",
                   "zero-filled + O_DSYNC", "no sync"):
        assert f"\n{method} " in done.stdout, done.stdout


def test_the_loop_bench_compares_the_journal_variants_in_one_run():
    done = bench("bench_loop", "--cycles", "6", "--blocks", "2", "--frames", "2", "--sync", "all")
    assert done.returncode == 0, done.stderr
    for name in ("fdatasync", "fsync", "fallocate", "keep_size"):
        assert f"intent sync: {name}," in done.stdout, done.stdout
    assert "median sync call outside the tool: fdatasync" in done.stdout or "not measured" in done.stdout


@pytest.mark.desktop
def test_the_loop_bench_can_observe_a_real_screen_through_a_real_runs_observer():
    done = bench("bench_loop", "--cycles", "6", "--blocks", "2", "--frames", "2", "--observe", "screen")
    from helpers.desktop_fixtures import require

    require(not (done.returncode == 1 and "needs the reference's screen" in done.stderr), done.stderr.strip())
    assert done.returncode == 0, done.stderr
    assert "the loop observing the screen" in done.stdout and "observe (screen: capture" in done.stdout
    assert "the loop's screen observer alone, between the runs: median" in done.stdout
