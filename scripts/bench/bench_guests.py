"""A suite of OSWorld-format tasks spread over 1, 2 and 4 guests already running, as ratios to 1 guest.

    .venv/bin/python -m scripts.bench.bench_guests --tasks 8 --guest-s 2

The guests are the qemu provider's small test VMs (scripts/build/build_qemu_test_image.py: a Debian kernel and
a shell guest server of Conway's own writing; TCG unless --kvm), started once before the runs and given to
`conway tasks run --desktop-url A,B,… --workers N` as guests the user already runs (AWS, a Docker host): each
task leases one (conway/desktops/lease.py). Each task's setup holds its guest `--guest-s` seconds (a `sleep`
step: what an application's start costs on a real VM), then writes a file its checker reads back through the
guest; the scripted policy finishes at once, so the figures are the runner's and the guests', not a model's.
Every task must score 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _suite(folder: Path, n: int, guest_s: float) -> tuple[Path, Path]:
    suite, scripts = folder / "suite", folder / "scripts"
    suite.mkdir()
    scripts.mkdir()
    for i in range(n):
        tid = f"g{i:02d}"
        task = {"id": tid, "instruction": "Nothing to do: say you are done.",
                "config": [{"type": "sleep", "parameters": {"seconds": guest_s}},
                           {"type": "execute", "parameters": {"command": f"echo {tid} > /home/user/{tid}.txt",
                                                              "shell": True}}],
                "related_apps": ["os"],
                "evaluator": {"func": "check_include_exclude",
                              "result": {"type": "vm_command_line", "command": f"cat /home/user/{tid}.txt",
                                         "shell": True},
                              "expected": {"type": "rule", "rules": {"include": [tid], "exclude": []}}}}
        (suite / f"{tid}.json").write_text(json.dumps(task))
        (scripts / f"{tid}.yaml").write_text("- action:\n    type: finish\n    status: DONE\n")
    return suite, scripts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--guest-s", type=float, default=2.0)
    ap.add_argument("--guests", default="1,2,4")
    ap.add_argument("--kvm", action="store_true", help="KVM instead of TCG for the VMs")
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.guests.split(",")]
    from conway.config import TasksConfig
    from conway.desktops import DesktopRequest, open_desktop
    from scripts.build.build_qemu_test_image import build

    with tempfile.TemporaryDirectory(prefix="conway-bench-guests-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        vm = work / "vm"
        build(vm)
        settings = TasksConfig(desktop="qemu", desktop_options={
            "image": str(vm / "disk.qcow2"), "kernel": str(vm / "vmlinuz"), "initrd": str(vm / "initrd.img"),
            "memory_mb": 256, "accel": "kvm" if args.kvm else "tcg", "boot_timeout_s": 300})
        started = time.monotonic()
        guests = [stack.enter_context(open_desktop(settings, DesktopRequest(f"guest-{i}"))) for i in range(max(counts))]
        print(f"{len(guests)} guest VM(s) ready in {time.monotonic() - started:.1f} s")
        suite, scripts = _suite(work, args.tasks, args.guest_s)
        rows = []
        for n in counts:
            out = work / f"report-{n}.json"
            urls = ",".join(g.client.url for g in guests[:n])
            t0 = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(work / f"home-{n}"), "tasks",
                                   "run", str(suite), "tasks.wait_after_setup_s=0", "tasks.settle_before_eval_s=0",
                                   "--desktop-url", urls, "--mock-scripts", str(scripts), "--workers", str(n),
                                   "--quiet", "--output", str(out)], cwd=REPO,
                                  env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
            wall = time.monotonic() - t0
            cases = json.loads(out.read_text())["cases"] if out.is_file() else []
            scores = [c.get("score") for c in cases]
            if scores != [1.0] * args.tasks:
                raise SystemExit(f"{n} guest(s): not every task scored 1: {scores} {done.stderr[-300:]}")
            rows.append((n, wall))
        base = rows[0][1]
        print("| guests (= workers) | wall s | tasks/min | × 1 guest |")
        print("| --- | --- | --- | --- |")
        for n, wall in rows:
            print(f"| {n} | {wall:.1f} | {args.tasks / wall * 60:.1f} | {base / wall:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
