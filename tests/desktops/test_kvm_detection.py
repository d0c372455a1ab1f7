"""Whether the qemu provider uses KVM: `/dev/kvm` must open AND the CPU must have hardware virtualisation; a PVM
host (kvm_pvm, no vmx/svm: this machine's kind) is said by name and gets TCG. The facts are read from folders
the test writes (the detection's inputs, not a fake of it), and from this machine for the real agreement: the
small VM boots under what the detection chose, and a QEMU that exits while booting under KVM is started once
more under TCG with the reason kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.desktop_fixtures import need, require

from conway.desktops import DesktopRequest, open_desktop
from conway.desktops import qemu as qemu_module
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


@pytest.fixture(scope="module")
def small_vm(tmp_path_factory) -> Path:
    need("qemu-system-x86_64", "qemu-system-x86")
    need("busybox", "busybox-static")
    require(bool(list(Path("/boot").glob("vmlinuz-*-cloud-amd64"))),
            "no Debian cloud kernel (apt-get install linux-image-cloud-amd64)")
    from scripts.build.build_qemu_test_image import build

    out = tmp_path_factory.mktemp("vm")
    build(out)
    return out


def settings(vm: Path, **more):
    from conway.config import TasksConfig

    return TasksConfig(desktop="qemu", desktop_options={
        "image": str(vm / "disk.qcow2"), "kernel": str(vm / "vmlinuz"), "initrd": str(vm / "initrd.img"),
        "memory_mb": 256, "boot_timeout_s": 180, **more})


def test_a_qemu_that_exits_under_kvm_is_started_again_under_tcg(small_vm, monkeypatch) -> None:
    # where KVM is usable the VM simply boots under it with the host's CPU; where it is not, KVM is tried anyway
    # (the detection's answer replaced: the point of the test) and QEMU exits at once, for real: no KVM module,
    # or on a PVM host the abort on MSR 0x10a that `-cpu host` meets
    usable = kvm_problem() is None
    if not usable:
        monkeypatch.setattr(qemu_module, "kvm_problem", lambda: None)
    with open_desktop(settings(small_vm, cpu="host"), DesktopRequest("kvm-fallback")) as desk:
        assert desk.task_env().run("echo up", shell=True).stdout.strip() == "up"
        line = desk.facts()["line"]
    if usable:
        assert "QEMU KVM" in line
    else:
        assert "QEMU TCG (no KVM: under KVM QEMU exited" in line
