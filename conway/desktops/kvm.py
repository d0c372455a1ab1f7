"""Whether QEMU can use KVM on this machine, and if not, exactly why (said by `conway tasks doctor` and in the qemu
desktop's environment line).

`/dev/kvm` opening is not enough. A host may offer KVM through PVM (the `kvm_pvm` module: a software-only KVM for
machines that are themselves VMs without nested VT-x/AMD-V); it runs only guest kernels built for PVM. A stock
kernel, Debian's or OSWorld's Ubuntu's, hangs right after the boot loader hands over, and `-cpu host`/`-cpu max`
make QEMU abort (KVM refuses MSR 0x10a, IA32_ARCH_CAPABILITIES). KVM is used only where the CPU shows hardware
virtualisation (vmx or svm in /proc/cpuinfo, or the kvm_intel/kvm_amd module loaded) and `/dev/kvm` opens.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HARDWARE_FLAGS = ("vmx", "svm")
HARDWARE_MODULES = ("kvm_intel", "kvm_amd")


@dataclass(frozen=True)
class KvmHost:
    """Where the facts are read (a test points them at a folder of its own)."""

    device: str = "/dev/kvm"
    cpuinfo: str = "/proc/cpuinfo"
    modules: str = "/sys/module"


def cpu_flags(cpuinfo: str) -> set[str]:
    """The first CPU's flags (empty when the file cannot be read)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    return set(value.split())
    except OSError:
        pass
    return set()


def kvm_problem(host: KvmHost = KvmHost()) -> str | None:
    """Why QEMU cannot run a stock guest kernel under KVM here (one line), or None when it can."""
    try:
        fd = os.open(host.device, os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        return f"{host.device}: {exc.strerror or exc}"
    os.close(fd)
    loaded = {m for m in (*HARDWARE_MODULES, "kvm_pvm") if (Path(host.modules) / m).is_dir()}
    hardware = bool(cpu_flags(host.cpuinfo) & set(HARDWARE_FLAGS)) or bool(loaded & set(HARDWARE_MODULES))
    if hardware:
        return None
    if "kvm_pvm" in loaded:
        return (f"{host.device} is PVM's (kvm_pvm; the CPU shows no vmx/svm): it runs only guest kernels built for "
                "PVM, a stock kernel hangs at boot and -cpu host aborts (MSR 0x10a refused)")
    return (f"{host.device} opens but the CPU shows no hardware virtualisation (no vmx/svm in {host.cpuinfo}, "
            "no kvm_intel/kvm_amd module)")
