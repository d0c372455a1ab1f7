"""The sandbox holds against what a sandboxed command tries, as root (where CI runs) and as a normal user.

Each attempt (scripts/reliability/sandbox_proof.py) runs a shell command in a sandbox built as Conway builds it
and is judged on the host. Before the user namespace and the capability drop, a root-started sandbox escaped
through remount, mknod+mount, open_by_handle_at (write beside the binds, read the hidden home) and keyctl;
signal and loopback held already (pid and network namespaces) and are kept here so they keep holding.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.desktop_fixtures import need
from helpers.sandbox_fixtures import DESKTOP_TOOLS
from helpers.task_desktop import need_desktop

from conway.actions import ReadFile
from conway.sandbox import seccomp
from conway.tools.files import FileTools
from scripts.reliability.sandbox_proof import ATTEMPTS, NOBODY, TRIES, as_nobody, sandbox

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("attempt", ATTEMPTS)
def test_an_escape_from_conway_runs_sandbox_fails(bwrap_ok, attempt: str) -> None:
    with sandbox("workdir") as box:
        escaped, said = TRIES[attempt](box)
    assert not escaped, f"{attempt} escaped the sandbox as uid {os.geteuid()}: {said}"


@pytest.mark.parametrize("attempt", ATTEMPTS)
def test_an_escape_from_a_task_desktop_fails(bwrap_ok, attempt: str) -> None:
    for tool, apt in DESKTOP_TOOLS:
        need(tool, apt)
    with sandbox("desktop") as box:
        escaped, said = TRIES[attempt](box)
    assert not escaped, f"{attempt} escaped the task desktop's sandbox as uid {os.geteuid()}: {said}"


def _can_switch_to_nobody() -> str | None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to run as nobody"
    probe = subprocess.run([*NOBODY, sys.executable, "-c", "import conway.sandbox.environment"], cwd=REPO,
                           capture_output=True, text=True, timeout=60)
    return None if probe.returncode == 0 else f"nobody cannot import this checkout: {probe.stderr[-300:]}"


def test_every_escape_fails_as_a_normal_user_too(bwrap_ok) -> None:
    why = _can_switch_to_nobody()
    if why:
        pytest.skip(why)
    rows = as_nobody(list(ATTEMPTS), ["workdir"])
    assert [r.attempt for r in rows] == list(ATTEMPTS) and {r.user for r in rows} == {"uid 65534"}
    assert [r for r in rows if r.escaped] == []


def test_the_quick_proof_prints_its_table_and_finds_no_escape(bwrap_ok, tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, "-m", "scripts.reliability.sandbox_proof", "--quick", "--json", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attempt" in done.stdout and "verdict" in done.stdout and "0 escaped" in done.stdout
    rows = json.loads(out.read_text())["rows"]
    users = {"root", "uid 65534"} if os.geteuid() == 0 and not _can_switch_to_nobody() else {f"uid {os.geteuid()}"}
    assert {r["user"] for r in rows} == users and len(rows) == len(ATTEMPTS) * len(users)
    assert all(r["verdict"] == "held" for r in rows)


def test_a_command_holds_no_capability_and_gains_none(bwrap_ok) -> None:
    with sandbox("workdir") as box:
        prep = box.environment.prepare("grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status",
                                       cwd=box.inside, env=dict(os.environ))
        status = subprocess.run(prep.argv, env=prep.env, cwd=prep.cwd, capture_output=True, text=True, timeout=30)
    fields = dict(line.split(":\t") for line in status.stdout.splitlines())
    assert fields["CapEff"] == fields["CapPrm"] == fields["CapBnd"] == "0000000000000000", status.stdout
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] in ("0", "2"), status.stdout


def test_the_seccomp_program_is_whole_instructions_for_the_machines_it_knows() -> None:
    for machine in ("x86_64", "aarch64"):
        prog = seccomp.program(machine)
        assert prog is not None and len(prog) % 8 == 0 and len(prog) // 8 < 255  # jumps are one byte
    assert seccomp.program("mips") is None


def test_a_tasks_shell_step_cannot_remount_the_system_through_conway_tasks_run(tmp_path: Path) -> None:
    """The issue's own reproduction: a scripted (model-chosen) shell step in `conway tasks run --mock-scripts`."""
    need_desktop()
    suite, scripts = tmp_path / "suite", tmp_path / "mock"
    (suite / "examples" / "os").mkdir(parents=True)
    scripts.mkdir()
    shutil.copy(REPO / "evals" / "osworld_local" / "examples" / "os" / "make-folders.json", suite / "examples" / "os")
    (suite / "test_all.json").write_text('{"os": ["make-folders"]}')
    marker = Path(f"/usr/.conway-escape-{tmp_path.name}")
    step = f"mount -o remount,rw /usr && touch {marker}; echo tried-remount"
    (scripts / "make-folders.yaml").write_text(
        json.dumps([{"action": {"type": "shell", "command": step}},
                    {"action": {"type": "finish", "status": "DONE", "message": "done"}}]))
    try:
        done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "home"), "tasks", "run",
                               str(suite), "--mock-scripts", str(scripts), "--output", str(tmp_path / "out.json")],
                              cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                              timeout=300)
        escaped = marker.exists()
    finally:
        marker.unlink(missing_ok=True)
    journals = list((tmp_path / "out.tasks").rglob("journal/*.jsonl"))
    assert journals and any("tried-remount" in j.read_text() for j in journals), done.stdout + done.stderr
    assert not escaped, f"the task's shell step wrote {marker} on the host"


def test_the_files_tool_in_a_sandbox_reads_no_file_only_root_may_read(bwrap_ok) -> None:
    """The files tool runs in Conway's process (root's, in CI): it must refuse what the sandbox hides from
    its commands, such as /etc/shadow, rather than read it with root's capabilities."""
    secret = "/etc/shadow" if os.path.isfile("/etc/shadow") else None
    if secret is None:
        pytest.skip("no /etc/shadow here")
    with sandbox("workdir") as box:
        result = FileTools(Path(box.inside), environment=box.environment).run(ReadFile(path=secret))
    assert not result.ok and ("hides it" in result.error or "permission denied" in result.error), result


def test_the_viewer_attempt_reaches_the_server_it_asks(bwrap_ok) -> None:
    """`viewer-token` holds only because the server refuses, never because the box could not reach it: the box
    shares the host's network (as `tasks run --network`) and gets the viewer's 403 page back."""
    with sandbox("workdir") as box:
        escaped, said = TRIES["viewer-token"](box)
    assert not escaped and "live 403" in said and "This viewer needs its token" in said, said
