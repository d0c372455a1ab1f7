"""A broken home, a full disk, a closed pipe, a read-only home, no model: one clear line, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli

from conway.store.journal import read_journal
from conway.store.state import read_json


def assert_one_line_error(r, *needles: str) -> None:
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("conway: error: "), r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# --- the home's own files and folders are the wrong kind --------------------------------


def _folder(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def _file(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.write_text("not a folder")


@pytest.mark.parametrize("name,make,needle", [
    ("state.json", _folder, "state.json is a folder"),
    ("goals.md", _folder, "goals.md is a folder"),
    ("journal", _file, "journal is a file"),
    ("scratch", _file, "scratch is a file"),
    ("screenshots", _file, "screenshots is a file"),
])
def test_a_home_entry_of_the_wrong_kind_is_one_line(initialized_home, name, make, needle):
    make(initialized_home / name)
    r = run_cli("run", "--mock", "--max-steps", "1")
    assert_one_line_error(r, needle, "move the")
    assert (initialized_home / name).exists()  # nothing of the user's was touched


def test_tools_workdir_naming_a_file_is_one_line(initialized_home, tmp_path):
    f = tmp_path / "afile"
    f.write_text("keep me")
    r = run_cli("run", "--mock", "--max-steps", "1", f"tools.workdir={f}")
    assert_one_line_error(r, "tools.workdir", "is a file")
    assert f.read_text() == "keep me"


def test_goals_replaced_by_a_folder_while_running_is_shown_not_fatal(initialized_home, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump([{"action": {"type": "shell", "command": "rm ../goals.md; mkdir ../goals.md"}},
                                      {"action": {"type": "wait", "seconds": 0.1}}]))
    r = run_cli("run", "--mock-script", str(script), "--max-steps", "2")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "max-steps" in read_json(initialized_home / "state.json")["stop_reason"]


@pytest.mark.parametrize("name", ["goals.md", "constitution.md"])
@pytest.mark.parametrize("start", [False, True])
def test_a_binary_goals_or_constitution_is_refused_in_one_line(initialized_home, name, start):
    binary = Path(sys.executable).resolve().read_bytes()[:17_000]  # a real executable: ELF (or Mach-O) bytes
    (initialized_home / name).write_bytes(binary)
    args = ("start", "--task", "look around") if start else ("run",)
    r = run_cli(*args, "--mock", "--max-steps", "1")
    assert_one_line_error(r, name, "is not text", "save it as UTF-8 text")
    assert not list((initialized_home / "journal").glob("*.jsonl"))  # nothing was sent to a model
    assert (initialized_home / name).read_bytes() == binary


def test_goals_replaced_by_a_binary_while_running_is_left_out_of_the_prompt(initialized_home, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump([{"action": {"type": "shell", "command": f"cp {sys.executable} ../goals.md"}},
                                      {"action": {"type": "wait", "seconds": 0.1}}]))
    r = run_cli("run", "--mock-script", str(script), "--max-steps", "2")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    goals = [e["payload"] for e in read_journal(initialized_home / "journal").events
             if e["kind"] == "session" and e["payload"].get("event") == "goals"]
    assert goals[-1]["text"].startswith("(goals.md is not text") and goals[-1]["text"].endswith("left out)")
    assert max(len(line) for line in next((initialized_home / "journal").glob("*.jsonl")).read_text().splitlines()) \
        < 20_000


def test_status_of_a_home_that_does_not_exist_says_so(tmp_path):
    missing = tmp_path / "no-such-home"
    for args in (("--home", str(missing), "status"), ("--home", str(missing), "status", "--json")):
        assert_one_line_error(run_cli(*args), f"Conway home {missing} does not exist", "init")
    assert not missing.exists()


def test_status_reports_the_garbage_journal_lines_export_reports(initialized_home, tmp_path):
    # export said "skipped 3 unreadable journal lines"; status said nothing of them
    assert run_cli("run", "--mock", "--max-steps", "2").returncode == 0
    journal = sorted((initialized_home / "journal").glob("*.jsonl"))[-1]
    with journal.open("a") as f:
        f.write('garbage one\n{"not": json\nthird bad\n')
    r = run_cli("export", "--output", str(tmp_path / "t.jsonl"))
    said = next(line for line in r.stdout.splitlines() + r.stderr.splitlines() if "unreadable journal" in line)
    status = run_cli("status")
    assert status.returncode == 0 and said in status.stdout, status.stdout
    assert said.startswith("skipped 3 unreadable journal line(s): ")
    assert len(json.loads(run_cli("status", "--json").stdout)["journal_skipped"]) == 3


def test_config_yaml_that_is_a_folder_is_one_line(initialized_home):
    _folder(initialized_home / "config.yaml")
    assert_one_line_error(run_cli("config", "--check"), "config.yaml")


# --- a closed pipe ----------------------------------------------------------------------


def test_status_into_a_closed_pipe_is_quiet(initialized_home):
    run_cli("run", "--mock", "--max-steps", "2")
    env = {**os.environ, "CONWAY_HOME": str(initialized_home)}
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "status"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before a byte is written (`conway status | head -0`)
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err and err == ""
    shell = subprocess.run("set -o pipefail; python -m conway.cli.main status | head -1", shell=True, cwd=REPO,
                           env={**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"},
                           capture_output=True, text=True, executable="/bin/bash", timeout=60)
    assert shell.stdout.startswith("home:") and shell.stderr == "", shell.stderr


def test_run_into_a_closed_pipe_keeps_running(initialized_home):
    env = {**os.environ, "CONWAY_HOME": str(initialized_home)}
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", "--mock", "--max-steps", "5"], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 0 and err == "", err
    state = read_json(initialized_home / "state.json")
    assert state["status"] == "stopped" and state["step"] == 5


# --- a full disk (a real one: a small tmpfs) ----------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                                          capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_stops_the_run_cleanly_with_its_reason(small_disk, tmp_path):
    home = small_disk / "home"
    env = {"CONWAY_HOME": str(home)}
    assert run_cli("init", env=env).returncode == 0
    assert run_cli("run", "--mock", "--max-steps", "2", env=env).returncode == 0  # fine while there is room
    free = shutil.disk_usage(small_disk).free
    (small_disk / "filler").write_bytes(b"\0" * max(0, free - 48 * 1024))  # leave room for a few cycles only
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"action": {"type": "list_dir", "path": "."}}], "repeat": True}))
    r = run_cli("run", "--mock-script", str(script), "agent.max_steps=100000", "observe.keep_screenshots=100000",
                env=env, timeout=300)
    assert_one_line_error(r, "disk full", "No space left on device", "journal:")
    state = read_json(home / "state.json")  # parses: never torn, never missing
    assert state["status"] == "stopped" and state["stop_reason"].startswith("disk full")
    journal = read_journal(home / "journal")
    assert journal.skipped == []  # no torn line
    assert sum(1 for e in journal.events if e["kind"] == "session" and e["payload"]["event"] == "end") >= 2
    status = run_cli("status", env=env)
    assert status.returncode == 0 and "stopped (disk full" in status.stdout, status.stdout + status.stderr


# --- a read-only home ------------------------------------------------------------------------


@pytest.fixture
def read_only_home(initialized_home, tmp_path):
    assert run_cli("run", "--mock", "--max-steps", "4").returncode == 0
    assert run_cli("preflight", "--mock", "--output", str(tmp_path / "pf.json")).returncode == 0
    view = tmp_path / "ro-home"
    view.mkdir()
    if os.geteuid() == 0:  # permission bits do not stop root: a read-only bind mount does
        ok = subprocess.run(["mount", "--bind", str(initialized_home), str(view)], capture_output=True).returncode == 0
        ok = ok and subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], capture_output=True).returncode == 0
        if not ok:
            subprocess.run(["umount", "-l", str(view)], capture_output=True)
            pytest.skip("cannot make a read-only bind mount here")
        try:
            yield view
        finally:
            subprocess.run(["umount", "-l", str(view)], capture_output=True)
    else:
        view.rmdir()
        modes = {p: p.stat().st_mode for p in [initialized_home, *initialized_home.rglob("*")] if p.is_dir()}
        for p in modes:
            p.chmod(0o555)
        try:
            yield initialized_home
        finally:
            for p, mode in modes.items():
                p.chmod(mode)


def test_read_only_commands_work_on_a_read_only_home(read_only_home, tmp_path):
    env = {"CONWAY_HOME": str(read_only_home)}
    with pytest.raises(OSError):  # it really is read-only
        (read_only_home / "probe-write").write_text("x")
    r = run_cli("status", env=env)
    assert r.returncode == 0 and "stopped" in r.stdout and "Traceback" not in r.stderr, r.stderr
    r = run_cli("status", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["step"] == 4, r.stderr
    r = run_cli("config", "--check", env=env)
    assert r.returncode == 0 and r.stdout.startswith("# configuration valid"), r.stderr
    out = tmp_path / "traj.jsonl"
    r = run_cli("export", "--output", str(out), env=env)
    assert r.returncode == 0 and out.read_text().count("\n") == 4, r.stderr
    r = run_cli("report", str(tmp_path / "pf.json"), env=env)
    assert r.returncode == 0 and "preflight report" in r.stdout, r.stderr
    site = tmp_path / "site"  # it refused the read-only home although it only reads it
    r = run_cli("view", "--output", str(site), env=env)
    assert r.returncode == 0 and (site / "index.html").is_file(), r.stderr
    # a command that must write still says so, in one line
    assert_one_line_error(run_cli("run", "--mock", "--max-steps", "1", env=env), "not writable")
    assert_one_line_error(run_cli("view", env=env), "not writable")  # its default site goes into the home


# --- no model configured -----------------------------------------------------------------------


@pytest.mark.parametrize("args", [["run"], ["run", "--observe"], ["probe"], ["start", "--task", "x"]])
def test_a_fresh_home_without_a_model_says_how_to_configure_one(initialized_home, args):
    r = run_cli(*args, "--max-steps", "1") if args[0] != "probe" else run_cli(*args)
    assert_one_line_error(r, "no model is configured", "policy.model_path=", "policy.mmproj_path=", "--endpoint",
                          "--mock runs the offline demo")
    assert not (initialized_home / "state.json").exists()  # nothing ran


@pytest.mark.parametrize("args", [["preflight"], ["vision-check", "--samples", "1"],
                                  ["grounding-check", "--samples", "1"], ["acceptance-check"]])
def test_every_command_that_evaluates_a_model_refuses_without_one(initialized_home, tmp_path, args):
    out = tmp_path / "report.json"
    r = run_cli(*args, "--output", str(out))
    assert_one_line_error(r, "no model is configured", "--mock runs the offline demo")
    assert not out.exists()


def test_the_mock_runs_when_chosen_on_the_command_line_or_in_config_yaml(initialized_home):
    assert run_cli("run", "--mock", "--max-steps", "1").returncode == 0
    assert run_cli("run", "policy=mock", "--max-steps", "1").returncode == 0
    (initialized_home / "config.yaml").write_text("policy:\n  kind: mock\n")
    r = run_cli("run", "--max-steps", "1")
    assert r.returncode == 0, r.stderr


def test_a_fifo_for_state_json_blocks_neither_status_nor_run(initialized_home):
    """Item 25.13: open() on a FIFO blocked `status` and `run` (holding the lock, deaf to SIGTERM)."""
    state = initialized_home / "state.json"
    state.unlink(missing_ok=True)
    os.mkfifo(state)
    try:
        status = run_cli("status", env={"CONWAY_HOME": str(initialized_home)}, timeout=60)
        run = run_cli("run", "--mock", "--max-steps", "1", "--quiet", env={"CONWAY_HOME": str(initialized_home)},
                      timeout=60)
    finally:
        try:
            os.close(os.open(state, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr


def test_a_fifo_for_memory_md_ends_the_run_in_one_line_instead_of_hanging(initialized_home):
    """Item 25.13: appending a step to memory.md opened the FIFO for writing, which blocks for good."""
    memory = initialized_home / "memory.md"
    memory.unlink(missing_ok=True)
    os.mkfifo(memory)
    try:
        run = run_cli("run", "--mock", "--max-steps", "2", "--quiet", env={"CONWAY_HOME": str(initialized_home)},
                      timeout=60)
    finally:
        try:
            os.close(os.open(memory, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "not a regular file" in run.stderr, run.stderr
