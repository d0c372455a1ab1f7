"""What one qemu desktop costs a task: boot to ready (the guest server answers /screenshot), then one command
through the guest protocol, then stop and removal, under KVM where `conway.desktops.kvm` finds it usable and
under TCG, on the small test VM (scripts/build/build_qemu_test_image.py).

    .venv/bin/python -m scripts.bench.bench_qemu_boot --runs 3

Prints one JSON line per accelerator: the median boot-to-ready and per-task overhead (open to closed) in
seconds, and KVM's ratio to TCG where KVM ran; where KVM is not usable the line says why instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def one(vm: Path, accel: str) -> tuple[float, float, str]:
    from conway.config import TasksConfig
    from conway.desktops import DesktopRequest, open_desktop

    settings = TasksConfig(desktop="qemu", desktop_options={
        "image": str(vm / "disk.qcow2"), "kernel": str(vm / "vmlinuz"), "initrd": str(vm / "initrd.img"),
        "memory_mb": 256, "boot_timeout_s": 300, "accel": accel})
    started = time.monotonic()
    with open_desktop(settings, DesktopRequest("bench")) as desk:
        assert desk.task_env().run("echo up", shell=True).stdout.strip() == "up"
        boot, line = float(desk.boot_s), desk.facts()["line"]
    return boot, round(time.monotonic() - started, 2), line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from conway.desktops.kvm import kvm_problem
    from scripts.build.build_qemu_test_image import build

    with tempfile.TemporaryDirectory() as tmp:
        vm = Path(tmp)
        build(vm)
        figures = {}
        why = kvm_problem()
        for accel in ("kvm", "tcg"):
            if accel == "kvm" and why is not None:
                print(json.dumps({"accel": "kvm", "usable": False, "why": why}))
                continue
            runs = [one(vm, accel) for _ in range(args.runs)]
            figures[accel] = {"boot_s": statistics.median(r[0] for r in runs),
                              "per_task_s": statistics.median(r[1] for r in runs)}
            print(json.dumps({"accel": accel, "runs": args.runs, **figures[accel], "line": runs[-1][2]}))
        if "kvm" in figures:
            print(json.dumps({"kvm_over_tcg_boot": round(figures["kvm"]["boot_s"] / figures["tcg"]["boot_s"], 3),
                              "kvm_over_tcg_per_task": round(figures["kvm"]["per_task_s"]
                                                             / figures["tcg"]["per_task_s"], 3)}))


if __name__ == "__main__":
    main()
