"""The `qemu` provider's plumbing with a real QEMU: its options checked before any task, its command line
(-snapshot, the guest server's port forwarded on 127.0.0.1 only, KVM when /dev/kvm opens), a VM whose guest
server never answers ends as one line and leaves nothing behind, several at once on distinct ports, and a
Conway killed with kill -9 takes its VM along. (A VM that boots OSWorld's image needs the image: not here.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psutil
import pytest
from helpers.desktop_fixtures import need, require, wait_until
from helpers.task_desktop import REPO

from conway.config import TasksConfig
from conway.desktops import DesktopError, DesktopRequest, check_settings, open_desktop
from conway.desktops import qemu as qemu_module
from conway.desktops.qemu import FOLDER_PREFIX, kvm_problem, options, qemu_argv, sweep_orphans
from conway.errors import UserError


@pytest.fixture
def image(tmp_path) -> Path:
    need("qemu-img", "qemu-utils")
    need("qemu-system-x86_64", "qemu-system-x86")
    path = tmp_path / "empty.qcow2"  # a disk with nothing on it: the VM boots no guest server
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), "16M"], check=True, timeout=30)
    return path


def settings(image: Path, **more) -> TasksConfig:
    # qemu64: a model QEMU starts under either accelerator (a PVM host's KVM refuses `host`: conway.desktops.kvm)
    return TasksConfig(desktop="qemu", desktop_options={"image": str(image), "memory_mb": 256, "cpu": "qemu64",
                                                        "boot_timeout_s": 3, **more})


def qemu_pids(image: Path) -> list[int]:
    return [p.pid for p in psutil.process_iter(["name", "cmdline"])
            if p.info["name"] == "qemu-system-x86_64" and any(str(image) in a for a in p.info["cmdline"] or [])]


def test_the_options_are_checked_before_any_task_in_one_line(tmp_path) -> None:
    with pytest.raises(UserError, match="needs the VM image: tasks.desktop_options.image=PATH"):
        check_settings(TasksConfig(desktop="qemu"))
    with pytest.raises(UserError, match="is not a file"):
        check_settings(TasksConfig(desktop="qemu", desktop_options={"image": str(tmp_path / "nope.qcow2")}))
    (tmp_path / "x.qcow2").write_bytes(b"")
    with pytest.raises(UserError, match="memroy_mb is not a qemu option"):
        check_settings(TasksConfig(desktop="qemu", desktop_options={"image": str(tmp_path / "x.qcow2"),
                                                                    "memroy_mb": 1}))


def test_the_command_line_never_writes_the_image_and_listens_on_loopback_only(tmp_path) -> None:
    (tmp_path / "x.qcow2").write_bytes(b"")
    opts = options(TasksConfig(desktop="qemu", desktop_options={"image": str(tmp_path / "x.qcow2")}))
    argv = qemu_argv(opts, 40123, tmp_path, kvm=True)
    assert "-snapshot" in argv and argv[argv.index("-accel") + 1] == "kvm"
    assert "user,id=net0,hostfwd=tcp:127.0.0.1:40123-:5000" in argv
    assert qemu_argv(opts, 40123, tmp_path, kvm=False)[1:3] == ["-accel", "tcg"]
    (tmp_path / "a,b.qcow2").write_bytes(b"")  # a comma in the path is not a new QEMU option
    odd = options(TasksConfig(desktop="qemu", desktop_options={"image": str(tmp_path / "a,b.qcow2")}))
    assert f"file={tmp_path}/a,,b.qcow2,format=qcow2,if=virtio" in qemu_argv(odd, 1, tmp_path, kvm=False)


def test_a_vm_whose_guest_server_never_answers_is_one_line_and_leaves_nothing(image) -> None:
    desk = open_desktop(settings(image), DesktopRequest("t"))
    with pytest.raises(DesktopError) as caught:
        with desk:
            pass
    said = str(caught.value)
    assert "\n" not in said and "did not answer within 3 s" in said and "guest port 5000" in said
    assert desk.proc is not None and desk.proc.poll() is not None
    assert not desk.folder.exists() and qemu_pids(image) == []
    assert (desk.kvm_problem is None) == (kvm_problem() is None)


def test_several_at_once_get_distinct_ports_and_are_all_removed(image) -> None:
    desks = [open_desktop(settings(image), DesktopRequest(f"t{i}")) for i in range(3)]
    seen: list[int] = []

    def boot(desk) -> None:
        try:
            with desk:
                pass
        except DesktopError:
            seen.append(desk.port)

    threads = [threading.Thread(target=boot, args=(d,)) for d in desks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(set(seen)) == 3 and qemu_pids(image) == []
    assert not any(d.folder.exists() for d in desks)


def test_kill_9_of_conway_takes_its_vm_along(image) -> None:
    code = ("import sys; from conway.config import TasksConfig; from conway.desktops import open_desktop, DesktopRequest\n"
            f"s = TasksConfig(desktop='qemu', desktop_options={{'image': {str(image)!r}, 'memory_mb': 256, "
            "'cpu': 'qemu64', 'boot_timeout_s': 120})\n"
            "with open_desktop(s, DesktopRequest('t')): pass\n")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: qemu_pids(image), timeout=30, what="the VM to start")
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        wait_until(lambda: not qemu_pids(image), timeout=15, what="the VM to die with its parent")
        left = [f for f in Path(tempfile.gettempdir()).glob(FOLDER_PREFIX + "*")
                if (f / "owner").is_file() and (f / "owner").read_text() == str(parent.pid)]
        assert left and sweep_orphans() and not any(f.exists() for f in left)  # the next start removes its folder
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid in qemu_pids(image):
            os.kill(pid, signal.SIGKILL)


def test_tasks_doctor_says_what_the_machine_has_for_the_qemu_provider() -> None:
    done = subprocess.run([sys.executable, "-m", "conway.cli", "tasks", "doctor", "--json"], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    record = json.loads(done.stdout)["qemu"]
    assert record["kvm"] == (kvm_problem() is None) and record["memory_per_vm_mb"] == 4096
    assert record["vms_that_fit"] == record["memory_available_mb"] // 4096
    assert (record["qemu"] is not None) == (shutil.which("qemu-system-x86_64") is not None)
    text = subprocess.run([sys.executable, "-m", "conway.cli", "tasks", "doctor"], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=120).stdout
    assert "for tasks.desktop=qemu" in text and "KVM: " in text and "VM(s) of 4096 MB" in text


@pytest.fixture(scope="module")
def test_vm(tmp_path_factory) -> Path:
    """The small VM scripts/build/build_qemu_test_image.py builds from the installed Debian kernel and busybox."""
    need("qemu-system-x86_64", "qemu-system-x86")
    need("busybox", "busybox-static")
    require(bool(list(Path("/boot").glob("vmlinuz-*-cloud-amd64"))),
            "no Debian cloud kernel (apt-get install linux-image-cloud-amd64)")
    from scripts.build.build_qemu_test_image import build

    out = tmp_path_factory.mktemp("vm")
    build(out)
    return out


def vm_settings(vm: Path, **more) -> TasksConfig:
    # accel auto: KVM where conway.desktops.kvm finds it usable, TCG otherwise (with the reason in the facts)
    return TasksConfig(desktop="qemu", desktop_options={
        "image": str(vm / "disk.qcow2"), "kernel": str(vm / "vmlinuz"), "initrd": str(vm / "initrd.img"),
        "memory_mb": 256, "boot_timeout_s": 120, **more})


def test_a_vm_boots_runs_a_task_through_the_guest_protocol_and_is_gone(test_vm, tmp_path) -> None:
    task = {"id": "vm-task", "instruction": "Nothing to do: say you are done.",
            "config": [{"type": "execute", "parameters": {"command": "echo from-setup > /home/user/x.txt",
                                                          "shell": True}}],
            "related_apps": ["os"],
            "evaluator": {"func": "check_include_exclude",
                          "result": {"type": "vm_command_line", "command": "cat /home/user/x.txt", "shell": True},
                          "expected": {"type": "rule", "rules": {"include": ["from-setup"], "exclude": []}}}}
    suite, scripts = tmp_path / "suite", tmp_path / "scripts"
    suite.mkdir()
    scripts.mkdir()
    (suite / "vm-task.json").write_text(json.dumps(task))
    (scripts / "vm-task.yaml").write_text("- action:\n    type: finish\n    status: DONE\n")
    opts = vm_settings(test_vm).desktop_options
    out = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "home"), "tasks", "run",
                           str(suite), "tasks.desktop=qemu", "tasks.wait_after_setup_s=0",
                           "tasks.settle_before_eval_s=0", *[f"tasks.desktop_options.{k}={v}" for k, v in opts.items()],
                           "--mock-scripts", str(scripts), "--output", str(out)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert out.is_file(), done.stdout + done.stderr
    case = json.loads(out.read_text())["cases"][0]
    assert case["score"] == 1.0, done.stdout + done.stderr
    assert case["desktop"]["provider"] == "qemu" and case["desktop"]["qemu"]["boot_s"] > 0
    kvm = kvm_problem()
    assert ("QEMU KVM" if kvm is None else f"QEMU TCG (no KVM: {kvm})") in case["desktop"]["line"]
    assert qemu_pids(test_vm / "disk.qcow2") == []  # no VM left behind


def test_several_vms_at_once_each_on_its_own_port(test_vm) -> None:
    desks = [open_desktop(vm_settings(test_vm), DesktopRequest(f"t{i}")) for i in range(2)]
    answers: dict[int, str] = {}

    def use(i: int, desk) -> None:
        with desk:
            answers[desk.port] = desk.task_env().run(f"echo vm-{i}", shell=True).stdout

    threads = [threading.Thread(target=use, args=(i, d)) for i, d in enumerate(desks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert sorted(answers.values()) == ["vm-0", "vm-1"] and len(answers) == 2
    assert qemu_pids(test_vm / "disk.qcow2") == [] and not any(d.folder.exists() for d in desks)


def test_a_qemu_that_exits_under_kvm_is_started_again_under_tcg(test_vm, monkeypatch) -> None:
    # where KVM is usable the VM simply boots under it with the host's CPU; where it is not, KVM is tried anyway
    # (the detection's answer replaced: the point of the test) and QEMU exits at once, for real: no KVM module,
    # or on a PVM host the abort on MSR 0x10a that `-cpu host` meets
    # (there the fallback model is `max`, which exits as `host` does: the default, qemu64, would start under a PVM
    # host's KVM and hang, which is why such a host is never given KVM)
    usable = kvm_problem() is None
    if not usable:
        monkeypatch.setattr(qemu_module, "kvm_problem", lambda: None)
        monkeypatch.setattr(qemu_module, "FALLBACK_CPUS", ("max",))
    with open_desktop(vm_settings(test_vm, cpu="host", boot_timeout_s=180), DesktopRequest("kvm-fallback")) as desk:
        assert desk.task_env().run("echo up", shell=True).stdout.strip() == "up"
        line = desk.facts()["line"]
    if usable:
        assert "QEMU KVM" in line
    else:
        assert "QEMU TCG (no KVM: under KVM -cpu max: QEMU exited" in line
    assert qemu_pids(test_vm / "disk.qcow2") == []


def test_the_order_tried_kvm_with_the_host_cpu_then_a_fallback_model_then_tcg(tmp_path, monkeypatch) -> None:
    (tmp_path / "x.qcow2").write_bytes(b"")

    def plan(problem: str | None, **opts) -> list[tuple[bool, str]]:
        desk = open_desktop(TasksConfig(desktop="qemu", desktop_options={"image": str(tmp_path / "x.qcow2"),
                                                                         **opts}), DesktopRequest("t"))
        desk.kvm_problem = problem
        return desk._plan()

    assert plan(None) == [(True, "host"), (True, "qemu64"), (False, "host")]
    assert plan(None, accel="kvm") == [(True, "host"), (True, "qemu64")]  # never TCG when KVM is demanded
    assert plan(None, cpu="EPYC") == [(True, "EPYC"), (False, "EPYC")]  # a model named by the user is kept
    assert plan("no /dev/kvm") == [(False, "host")]
