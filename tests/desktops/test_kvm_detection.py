"""Whether the qemu provider uses KVM: `/dev/kvm` must open AND the CPU must have hardware virtualisation; a PVM
host (kvm_pvm, no vmx/svm: this machine's kind) is said by name and gets TCG. The facts are read from folders
the test writes (the detection's inputs, not a fake of it), and from this machine. (A VM booting under what the
detection chose, and the fallback to TCG of a QEMU that exits under KVM: tests/desktops/test_qemu_provider.py.)"""

from __future__ import annotations

import os
from pathlib import Path

from conway.desktops.kvm import KvmHost, kvm_problem


def host(tmp_path: Path, flags: str, modules: tuple[str, ...], device: bool = True) -> KvmHost:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "cpuinfo").write_text(f"processor\t: 0\nflags\t\t: fpu {flags} sse2\n\nprocessor\t: 1\n")
    for m in modules:
        (tmp_path / "module" / m).mkdir(parents=True)
    dev = tmp_path / "kvm"
    if device:
        dev.write_bytes(b"")  # opens for reading and writing, as a usable /dev/kvm does
    return KvmHost(device=str(dev), cpuinfo=str(tmp_path / "cpuinfo"), modules=str(tmp_path / "module"))


def test_hardware_virtualisation_and_an_open_device_is_kvm(tmp_path) -> None:
    assert kvm_problem(host(tmp_path / "a", "vmx", ("kvm", "kvm_intel"))) is None
    assert kvm_problem(host(tmp_path / "b", "svm", ("kvm",))) is None  # the flag alone (no /sys/module to read)
    assert kvm_problem(host(tmp_path / "c", "", ("kvm", "kvm_amd"))) is None


def test_a_pvm_host_is_named_and_not_used(tmp_path) -> None:
    said = kvm_problem(host(tmp_path, "hypervisor", ("kvm", "kvm_pvm")))
    assert said is not None and "PVM" in said and "kvm_pvm" in said and "MSR 0x10a" in said and "\n" not in said


def test_no_device_or_no_hardware_is_said(tmp_path) -> None:
    said = kvm_problem(host(tmp_path / "a", "vmx", ("kvm_intel",), device=False))
    assert said is not None and said.startswith(str(tmp_path / "a" / "kvm")) and "No such file" in said
    said = kvm_problem(host(tmp_path / "b", "hypervisor", ("kvm",)))
    assert said is not None and "no hardware virtualisation" in said


def test_this_machines_answer_follows_its_facts() -> None:
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    said = kvm_problem()
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        assert said is not None and said.startswith("/dev/kvm")
    elif flags & {"vmx", "svm"}:
        assert said is None
    elif Path("/sys/module/kvm_pvm").is_dir():
        assert said is not None and "PVM" in said
