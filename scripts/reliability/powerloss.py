"""A power loss that zeroes a block in the middle of a journal file, then a new `conway run` on the same home.

Out-of-order writeback before a power loss, a bad block or an editor can leave a run of NUL bytes inside a
journal file with data after it. Each trial runs the real `conway run --mock-script` (appends, reads), then
zeroes one block inside the data of a closed journal file (at a random, block-aligned offset), then runs
again. Checked per trial:

    every spared line kept      the file starts with its bytes as the block left them: nothing cut or written over
    every spared line read      each line the block did not touch is an event the journal's reader returns
    the new run appended        the next run's events follow the old data (exit 0)
    status reports the span     `conway status` says "FILE: skipped N unreadable bytes at offset O"
    export reports the span     `conway export` says so too, and exits 0

Before issue 32 the readers stopped at the block and the next run wrote over everything after it.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .common import Check, ProofResult, Violations, child_env, conway_argv

BLOCK = 4096
STEPS_PER_RUN = 12
RUN_TIMEOUT_S = 120.0
CHECKS = ("every spared line kept", "every spared line read", "the new run appended", "status reports the span",
          "export reports the span")


def _script(run: int) -> str:
    steps = [{"action": {"type": "append_file", "path": "effects.log", "text": f"R{run}S{i} " + "x" * 200 + "\n"}}
             if i % 2 == 0 else {"action": {"type": "read_file", "path": "effects.log"}}
             for i in range(STEPS_PER_RUN)]
    return "".join(json.dumps(s) + "\n" for s in steps)


def _conway(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(conway_argv("--home", str(home), *args), env=child_env(), capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, cwd=home.parent)


def _run(home: Path, run: int) -> subprocess.CompletedProcess:
    script = home.parent / f"run-{run:03d}.jsonl"
    script.write_text(_script(run), encoding="utf-8")
    return _conway(home, "run", "--quiet", "--mock-script", str(script), "--max-steps", str(STEPS_PER_RUN))


def _zero_a_block(path: Path, rng: random.Random) -> tuple[int, int]:
    """Zero one block inside the file's data (never its first or last): (offset, length)."""
    size = path.stat().st_size
    block = BLOCK if size >= 3 * BLOCK else 512
    offset = rng.randrange(1, size // block - 1) * block
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(bytes(block))
    return offset, block


def _trial(home: Path, run: int, rng: random.Random, v: Violations) -> None:
    from conway.session.app import status_report
    from conway.store.home import Home
    from conway.store.journal import journal_files, read_journal

    path = journal_files(home / "journal")[-1]
    before = path.read_bytes()
    offset, length = _zero_a_block(path, rng)
    hurt = path.read_bytes()
    spared = [json.loads(line) for line in before.splitlines(keepends=True)  # whole lines the block missed
              if line in hurt and line.startswith(b"{") and line.endswith(b"}\n") and b"\0" not in line]
    span = f"{path.name}: skipped {length} unreadable bytes at offset {offset}"
    where = f"trial {run} ({span})"
    done = _run(home, run)
    after = path.read_bytes()
    if not after.startswith(hurt):
        v.add("every spared line kept", f"{where}: the file no longer starts with its old data "
              f"({len(after)} bytes now, {len(hurt)} before the run)")
    events = read_journal(home / "journal").events
    missing = [e for e in spared if e not in events]
    if missing:
        v.add("every spared line read", f"{where}: {len(missing)} of {len(spared)} spared events not read, "
              f"e.g. step {missing[0].get('step')} {missing[0].get('kind')}")
    if done.returncode != 0 or len(after) <= len(hurt):
        v.add("the new run appended", f"{where}: rc {done.returncode}, {len(after)} bytes after, {len(hurt)} "
              f"before; {done.stderr.strip()[-300:]}")
    if span not in status_report(Home(home)).get("journal_unreadable", []):
        v.add("status reports the span", f"{where}: status does not say it")
    out = home.parent / f"export-{run:03d}.jsonl"
    exported = _conway(home, "export", "--output", str(out))
    if exported.returncode != 0 or span not in exported.stdout:
        v.add("export reports the span", f"{where}: rc {exported.returncode}; {exported.stdout.strip()[-300:]}")


def prove(trials: int = 10, seed: int = 0, say=print) -> ProofResult:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="conway-powerloss-"))
    home = work / "home"
    rng = random.Random(seed)
    v = Violations()
    try:
        init = _conway(home, "init")
        if init.returncode != 0:
            raise RuntimeError(f"conway init failed: {init.stderr.strip()[-300:]}")
        first = _run(home, 0)
        if first.returncode != 0:
            raise RuntimeError(f"the first run failed: {first.stderr.strip()[-300:]}")
        for run in range(1, trials + 1):
            _trial(home, run, rng, v)
            if run % 5 == 0:
                say(f"  powerloss: {run}/{trials} trials")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    checks = [Check("trials", trials, f"{trials}", True)] + [v.zero_check(name) for name in CHECKS]
    return ProofResult("powerloss", {"trials": trials, "seed": seed}, {"trials": trials, "block_bytes": BLOCK},
                       checks, time.monotonic() - started)
