"""The `qemu` provider: OSWorld's VM image on this machine, one disposable VM per task, then the `osworld` provider.

    conway tasks run SUITE tasks.desktop=qemu tasks.desktop_options.image=~/osworld/Ubuntu.qcow2 --output r.json

Each task starts `qemu-system-x86_64` on the image the user names (OSWorld's Ubuntu image, downloaded as
OSWorld's instructions say; nothing is downloaded here) with `-snapshot`, so the image is never written: the
VM's writes go to a temporary file QEMU itself deletes. KVM is used where it can boot a stock kernel
(`conway.desktops.kvm`: /dev/kvm opens and the CPU has VT-x/AMD-V); else TCG, said with the reason in the
desktop's facts, and slow. A QEMU that exits while booting under KVM with `-cpu host` (a nested KVM refusing
one of its MSRs) is started again under KVM with QEMU's default model (`FALLBACK_CPUS`), then (accel=auto)
under TCG, each reason kept in the facts. The guest server's port (5000) is forwarded to a free port on
127.0.0.1 only; the desktop is ready when the guest server answers /screenshot, and from then on it is the
`osworld` provider at that address. At the end QEMU is stopped and its folder (its serial log) removed; QEMU
is also started with the parent-death signal, so a Conway killed with `kill -9` takes its VMs along. Several at
once (a worker pool) each get their own port and VM.

Options (`tasks.desktop_options.*`): image (required), format (qcow2), memory_mb (4096), cpus (2), guest_port
(5000), boot_timeout_s (600), accel (auto: KVM when usable, else TCG; kvm; tcg), kernel/initrd/append (a direct
kernel boot, for the small test VM that scripts/build/build_qemu_test_image.py builds), cpu (host: the host's
CPU under KVM; under TCG QEMU's default model unless another is named).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conway.desktops.base import DesktopError, DesktopRequest, Provider
from conway.desktops.guest_client import GuestClient, GuestError
from conway.desktops.kvm import kvm_problem
from conway.desktops.osworld import GuestDesktop, _runnable

if TYPE_CHECKING:  # pragma: no cover
    from conway.config import TasksConfig

QEMU = "qemu-system-x86_64"
DEFAULTS: dict[str, Any] = {"format": "qcow2", "memory_mb": 4096, "cpus": 2, "guest_port": 5000,
                            "boot_timeout_s": 600.0, "cpu": "host", "accel": "auto"}
FALLBACK_CPUS: tuple[str, ...] = ("qemu64",)
"""Under KVM, the CPU models tried when `host` makes QEMU exit while booting (a nested KVM refusing one of the
host model's MSRs): QEMU's default, which KVM runs wherever it runs at all."""
READY_POLL_S = 1.0
STOP_WAIT_S = 5.0


def free_port() -> int:
    """A port on 127.0.0.1 that is free now (QEMU binds it a moment later; a lost race fails its start, said)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def options(settings: "TasksConfig") -> dict[str, Any]:
    """The provider's options with their defaults; DesktopError (one line) for a missing image or a bad value."""
    given = dict(settings.desktop_options)
    unknown = sorted(set(given) - set(DEFAULTS) - {"image", "kernel", "initrd", "append"})
    if unknown:
        raise DesktopError(f"tasks.desktop_options: {', '.join(unknown)} is not a qemu option "
                           f"(image, {', '.join(DEFAULTS)})")
    out = {**DEFAULTS, **given}
    image = out.get("image")
    if not isinstance(image, str) or not image:
        raise DesktopError("tasks.desktop=qemu needs the VM image: tasks.desktop_options.image=PATH "
                           "(OSWorld's Ubuntu qcow2, downloaded as OSWorld's instructions say)")
    path = Path(image).expanduser()
    if not path.is_file():
        raise DesktopError(f"the VM image {path} is not a file")
    out["image"] = str(path.resolve())
    for key in ("kernel", "initrd"):  # a direct kernel boot (the test VM); OSWorld's image boots from its disk
        if key in out:
            if not isinstance(out[key], str) or not Path(out[key]).expanduser().is_file():
                raise DesktopError(f"tasks.desktop_options.{key} is not a file: {out[key]!r}")
            out[key] = str(Path(out[key]).expanduser().resolve())
    if ("initrd" in out or "append" in out) and "kernel" not in out:
        raise DesktopError("tasks.desktop_options.initrd and append go with kernel")
    for key, low in (("memory_mb", 256), ("cpus", 1), ("guest_port", 1), ("boot_timeout_s", 1)):
        value = out[key]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < low:
            raise DesktopError(f"tasks.desktop_options.{key} must be a number of at least {low} (got {value!r})")
    if not isinstance(out["cpu"], str) or not out["cpu"].replace("-", "").replace(",", "").replace("_", "").isalnum():
        raise DesktopError(f"tasks.desktop_options.cpu must be a QEMU CPU model name (got {out['cpu']!r})")
    if out["accel"] not in ("auto", "kvm", "tcg"):
        raise DesktopError(f"tasks.desktop_options.accel must be auto, kvm or tcg (got {out['accel']!r})")
    if out["format"] not in ("qcow2", "raw"):
        raise DesktopError(f"tasks.desktop_options.format must be qcow2 or raw (got {out['format']!r})")
    return out


def qemu_argv(opts: dict[str, Any], port: int, folder: Path, kvm: bool) -> list[str]:
    """QEMU's command line: the image read-only behind -snapshot, user networking with only the guest server's
    port forwarded to 127.0.0.1:`port`, no display, the serial console into the folder's log."""
    accel = ["-accel", "kvm"] if kvm else ["-accel", "tcg"]
    if kvm or opts["cpu"] != "host":  # `host` is KVM's alone; under TCG QEMU's default model stands in
        accel += ["-cpu", str(opts["cpu"])]
    return [QEMU, *accel, "-m", str(int(opts["memory_mb"])), "-smp", str(int(opts["cpus"])), "-snapshot",
            "-drive", f"file={_qemu_value(opts['image'])},format={opts['format']},if=virtio",
            "-netdev", f"user,id=net0,hostfwd=tcp:127.0.0.1:{port}-:{int(opts['guest_port'])}",
            "-device", "virtio-net-pci,netdev=net0", "-display", "none", "-monitor", "none",
            "-serial", f"file:{_qemu_value(str(folder / 'serial.log'))}", "-name", f"conway-{folder.name}", *_direct_boot(opts)]


def _qemu_value(text: str) -> str:
    """A value inside one of QEMU's comma-separated options: a comma in it is written twice."""
    return text.replace(",", ",,")


def _direct_boot(opts: dict[str, Any]) -> list[str]:
    if "kernel" not in opts:
        return []
    out = ["-kernel", opts["kernel"], "-no-reboot"]
    if "initrd" in opts:
        out += ["-initrd", opts["initrd"]]
    return out + ["-append", str(opts.get("append", "console=ttyS0 panic=-1"))]


FOLDER_PREFIX = "conway-qemu-"


def sweep_orphans(parent: Path | None = None) -> list[Path]:
    """Remove the folders of VMs whose Conway died without cleaning up (kill -9: the VM died with it, by its
    parent-death signal, but its folder stayed); a folder is an orphan when the process its `owner` names is gone."""
    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(FOLDER_PREFIX + "*"):
        try:
            owner = int((folder / "owner").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if owner != os.getpid() and not _alive(owner):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """PR_SET_PDEATHSIG: the VM is killed when Conway's process ends, even by kill -9."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


class QemuDesktop(GuestDesktop):
    """A fresh VM of the image for one task; then the `osworld` desktop at its forwarded port."""

    provider = "qemu"

    def __init__(self, opts: dict[str, Any], request: DesktopRequest):
        self.opts = opts
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.folder: Path | None = None
        self.kvm_problem: str | None = None
        self.cpu: str | None = None
        self.cpu_note: str | None = None
        """Under KVM with a fallback CPU model: which one, and why `host` was not kept."""
        self.boot_s: float | None = None
        super().__init__("http://127.0.0.1:1", request)  # the real address is known once the VM is started

    def __enter__(self) -> "QemuDesktop":
        try:
            self._boot()
            super().__enter__()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self._stop()

    def _boot(self) -> None:
        if shutil.which(QEMU) is None:
            raise DesktopError(f"{QEMU} is not installed (Debian: apt-get install qemu-system-x86)")
        self.kvm_problem = kvm_problem() if self.opts["accel"] != "tcg" else "tasks.desktop_options.accel=tcg"
        if self.opts["accel"] == "kvm" and self.kvm_problem:
            raise DesktopError(f"tasks.desktop_options.accel=kvm, but KVM is not usable: {self.kvm_problem}")
        sweep_orphans()
        self.folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
        (self.folder / "owner").write_text(str(os.getpid()), encoding="utf-8")
        started = time.monotonic()
        deadline = started + float(self.opts["boot_timeout_s"])
        plan = self._plan()
        kvm, cpu = plan.pop(0)
        self._start_vm(kvm, cpu)
        while True:
            if self.proc.poll() is not None:  # type: ignore[union-attr]
                said = f"QEMU exited ({self.proc.returncode}) before the guest server answered: {self._said()}"  # type: ignore[union-attr]
                if not plan:
                    raise DesktopError(said)
                failed = f"-cpu {cpu}: {said}"
                kvm, cpu = plan.pop(0)
                if kvm:  # the next CPU model under KVM
                    self.cpu_note = f"cpu {cpu}; {failed}"
                else:  # accel=auto: the same VM once more under TCG
                    self.kvm_problem, self.cpu_note = f"under KVM {failed}", None
                self._start_vm(kvm, cpu)
                continue
            try:  # OSWorld's providers wait for /screenshot too; one try at a time, no retries of its own
                if self.client.request("GET", "/screenshot", timeout=5, cap=64 << 20).status == 200:
                    break
            except GuestError:
                pass
            if time.monotonic() > deadline:
                raise DesktopError(f"the VM's guest server did not answer within {self.opts['boot_timeout_s']:g} s "
                                   f"(127.0.0.1:{self.port} → guest port {self.opts['guest_port']})")
            time.sleep(READY_POLL_S)
        self.boot_s = round(time.monotonic() - started, 1)

    def _plan(self) -> list[tuple[bool, str]]:
        """(under KVM, CPU model) in the order tried, each when the one before made QEMU exit while booting: KVM
        with the CPU asked for, then (for `host`) the fallback models, then (accel=auto) TCG."""
        cpu = str(self.opts["cpu"])
        if self.kvm_problem is not None:
            return [(False, cpu)]
        plan = [(True, cpu), *((True, c) for c in FALLBACK_CPUS if cpu == "host" and c != cpu)]
        return plan + ([(False, cpu)] if self.opts["accel"] == "auto" else [])

    def _start_vm(self, kvm: bool, cpu: str) -> None:
        """QEMU on a free port, under KVM or TCG with the CPU model `cpu`; its client at that port."""
        self.port, self.cpu = free_port(), cpu
        argv = qemu_argv({**self.opts, "cpu": cpu}, self.port, self.folder, kvm)  # type: ignore[arg-type]
        with open(self.folder / "qemu.log", "wb") as log:  # type: ignore[operator]
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        self.client.close()
        self.client = GuestClient(f"http://127.0.0.1:{self.port}")

    def _said(self) -> str:
        try:
            lines = (self.folder / "qemu.log").read_text(errors="replace").strip().splitlines()  # type: ignore[operator]
        except OSError:
            lines = []
        return " ".join((lines or ["no message"])[-1].split())[:200]

    def _stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.folder is not None and not self.request.keep:
            shutil.rmtree(self.folder, ignore_errors=True)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def lost(self) -> str | None:
        if self.proc is not None and self.proc.poll() is not None:
            return f"the task's VM (QEMU) exited ({self.proc.returncode})"
        return None

    def facts(self) -> dict[str, Any]:
        out = super().facts()
        kvm = ("KVM" + (f" ({self.cpu_note})" if self.cpu_note else "") if self.kvm_problem is None
               else f"TCG (no KVM: {self.kvm_problem})")
        out.update(provider="qemu", qemu={"image": Path(self.opts["image"]).name, "kvm": self.kvm_problem is None, "cpu": self.cpu,
                                          "boot_s": self.boot_s, "memory_mb": self.opts["memory_mb"]})
        out["line"] = f"{out['line']}; QEMU {kvm}, image {Path(self.opts['image']).name}, booted in {self.boot_s} s"
        return out


def machine_record(memory_mb: int = int(DEFAULTS["memory_mb"])) -> dict[str, Any]:
    """What this machine has for the qemu provider (`conway tasks doctor`): QEMU and its version, KVM, and how
    many VMs of `memory_mb` its memory holds now."""
    import psutil

    exe = shutil.which(QEMU)
    version = None
    if exe:
        try:
            first = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout
            version = (first.strip().splitlines() or [""])[0].removeprefix("QEMU emulator version ").strip() or None
        except (OSError, subprocess.TimeoutExpired):
            version = None
    available = psutil.virtual_memory().available // (1 << 20)
    return {"qemu": exe, "version": version, "kvm": kvm_problem() is None, "kvm_problem": kvm_problem(),
            "memory_available_mb": int(available), "memory_per_vm_mb": memory_mb,
            "vms_that_fit": int(available // memory_mb)}


def render_machine(record: dict[str, Any]) -> list[str]:
    qemu = (f"{record['qemu']} ({record['version'] or 'version unknown'})" if record["qemu"]
            else "NOT INSTALLED (apt-get install qemu-system-x86)")
    kvm = "usable" if record["kvm"] else f"not usable ({record['kvm_problem']}): VMs run under TCG, slowly"
    return ["", "for tasks.desktop=qemu (OSWorld's VM image here):", f"  QEMU: {qemu}", f"  KVM: {kvm}",
            f"  memory: {record['memory_available_mb']} MB available now: {record['vms_that_fit']} VM(s) of "
            f"{record['memory_per_vm_mb']} MB (tasks.desktop_options.memory_mb)"]


def _check(settings: "TasksConfig") -> str | None:
    try:
        options(settings)
    except DesktopError as exc:
        return str(exc)
    return None if shutil.which(QEMU) else f"{QEMU} is not installed (Debian: apt-get install qemu-system-x86)"


def _make(settings: "TasksConfig", request: DesktopRequest) -> QemuDesktop:
    return QemuDesktop(options(settings), request)


PROVIDER = Provider("qemu", _make, _runnable,
                    "OSWorld's VM image under QEMU here (KVM when usable), one -snapshot VM per task", _check)
