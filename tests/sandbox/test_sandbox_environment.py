"""The environment seam with real bubblewrap: what a sandboxed command and the files tool can and cannot reach."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import psutil
import pytest
from helpers.stopping import stopped_after

from conway.actions import AppendFile, ListDir, ReadFile, Shell
from conway.config import ToolsConfig
from conway.sandbox.environment import BWRAP, BubblewrapEnvironment, LocalEnvironment, SandboxError
from conway.tools.files import FileTools
from conway.tools.registry import build_toolbox

REAL_HOME = Path(os.path.expanduser("~")).resolve()


def _sh(env: BubblewrapEnvironment, command: str, cwd: str) -> tuple[int, str]:
    import subprocess
    prep = env.prepare(command, cwd=cwd, env={"PATH": "/usr/bin:/bin"})
    done = subprocess.run(prep.argv, cwd=prep.cwd, env=prep.env, capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout + done.stderr


def test_a_missing_bwrap_is_one_clear_line(tmp_path: Path) -> None:
    env = BubblewrapEnvironment.for_workdir(tmp_path, bwrap=str(tmp_path / "no-bwrap"))
    ok, why = env.availability()
    assert not ok and why == f"bubblewrap is not installed ({tmp_path / 'no-bwrap'} is missing; " \
                              "Debian: apt-get install bubblewrap)"
    with pytest.raises(SandboxError, match="^bubblewrap is not installed"):
        env.require()


def test_refused_namespaces_are_one_clear_line(tmp_path: Path) -> None:
    # A fake bwrap, named as such: it answers as bubblewrap does where user namespaces are switched off,
    # which this machine (root, namespaces allowed) cannot be made to do for real.
    fake = tmp_path / "fake-bwrap-refusing-namespaces"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
                    "does not allow non-privileged user namespaces.' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    ok, why = BubblewrapEnvironment.for_workdir(tmp_path, bwrap=str(fake)).availability()
    assert not ok and why.startswith("bubblewrap cannot create its namespaces here (user namespaces refused?): "
                                     "bwrap: No permissions to creating new namespace")
    assert "\n" not in why


def test_the_real_home_is_hidden_and_the_system_read_only(bwrap_ok: None, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert any(REAL_HOME.iterdir())  # something to hide
    env = BubblewrapEnvironment.for_workdir(work)
    try:
        code, out = _sh(env, f"ls -A {REAL_HOME}; echo home:; ls -A /home; echo tmp:; ls -A /tmp; echo $HOME; "
                             "echo x > here.txt; touch /usr/conway-probe || echo usr-ro; "
                             "echo t > /tmp/t && echo tmp-rw", cwd=str(work))
    finally:
        env.close()
    lines = out.splitlines()
    assert code == 0, out
    assert lines[0] == "home:" and lines[1] == "tmp:"  # the real home lists nothing, nor does /home
    assert lines[2] == tmp_path.parts[2]  # /tmp shows only the way down to the workdir
    assert str(work.resolve()) in lines and "usr-ro" in lines and "tmp-rw" in lines
    assert (work / "here.txt").read_text() == "x\n"
    assert not Path("/usr/conway-probe").exists()


def test_the_network_is_off_unless_allowed(bwrap_ok: None, tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    probe = f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo reached || echo unreachable"
    try:
        for network, expected in ((False, "unreachable"), (True, "reached")):
            env = BubblewrapEnvironment.for_workdir(tmp_path, network=network)
            try:
                assert _sh(env, probe, cwd=str(tmp_path))[1].split() == [expected]
            finally:
                env.close()
    finally:
        server.close()


def test_the_files_tool_sees_only_what_the_sandbox_shows(bwrap_ok: None, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("mine\n")
    secret = REAL_HOME / ".conway-sandbox-test-secret"
    (work / "out").symlink_to(secret)  # points into the real home: hidden inside
    (work / "up").symlink_to("../" * 12 + str(REAL_HOME).lstrip("/"))  # relative, climbing to the real home
    env = BubblewrapEnvironment.for_workdir(work)
    tool = FileTools(work, environment=env)
    try:
        assert tool.run(ReadFile(path="notes.txt")).output == "mine\n"
        assert tool.run(AppendFile(path="notes.txt", text="more\n")).ok
        assert (work / "notes.txt").read_text() == "mine\nmore\n"
        for path in (str(REAL_HOME), "~/" + "../" * 12 + "root", "out", "up/anything", "/proc/self/environ"):
            r = tool.run(ReadFile(path=path))
            assert not r.ok and "outside what this sandbox shows" in r.error, (path, r.error)
        assert not tool.run(ListDir(path="/home")).ok
        assert tool.run(ReadFile(path="/etc/hostname")).ok  # the system is shown read-only …
        r = tool.run(AppendFile(path="/etc/hostname", text="x"))
        assert not r.ok and r.error == "/etc/hostname is read-only in this sandbox (file unchanged)"
    finally:
        env.close()
    assert not secret.exists()
    local = FileTools(work, environment=LocalEnvironment())  # … and local is today's behaviour
    assert local.run(ReadFile(path=str(work / "notes.txt"))).ok


def test_the_sandboxed_shell_hides_the_home_and_stops_within_a_second(bwrap_ok: None, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    box = build_toolbox(ToolsConfig(environment="sandbox", enabled=["shell", "files"]), work, gui=False)
    try:
        ok, how = box.report["shell"]
        assert ok and "bubblewrap sandbox (no network" in how
        r = box.run(Shell(command=f"ls -A {REAL_HOME} | wc -l; test -e {REAL_HOME}/.pyenv || echo hidden"))
        assert r.ok and r.output.split()[:2] == ["0", "hidden"], r.output
        pidfile = work / "pid"
        r, elapsed = stopped_after(0.3, "stop requested",
                                   lambda: box.run(Shell(command=f"sleep 62.41 & echo $! > {pidfile}; wait")))
        assert not r.ok and r.data["stopped"] is True and elapsed < 1.3, (elapsed, r.output)
        assert not any(p.info["cmdline"] == ["sleep", "62.41"] for p in psutil.process_iter(["cmdline"]))
    finally:
        box.close()


def test_sandbox_settings_are_validated_and_reach_the_tools(bwrap_ok: None, tmp_path: Path) -> None:
    from pydantic import ValidationError
    assert ToolsConfig().environment == "local" and ToolsConfig().sandbox_network is False
    with pytest.raises(ValidationError):
        ToolsConfig(environment="docker")
    local = build_toolbox(ToolsConfig(enabled=["shell"]), tmp_path, gui=False)
    shared = build_toolbox(ToolsConfig(environment="sandbox", sandbox_network=True, enabled=["shell", "files"]),
                           tmp_path, gui=False)
    try:
        assert "bubblewrap" not in local.report["shell"][1]
        assert "bubblewrap sandbox (network shared" in shared.report["shell"][1]
        assert "bubblewrap sandbox (network shared" in shared.report["files"][1]
    finally:
        local.close()
        shared.close()


def test_bwrap_path_is_debians() -> None:
    assert BWRAP == "/usr/bin/bwrap"


def test_conway_run_with_the_sandbox_through_the_real_loop(bwrap_ok: None, conway_home: Path, tmp_path: Path) -> None:
    from conftest import run_cli
    script = tmp_path / "script.yaml"
    script.write_text(f'- action: {{type: shell, command: "ls -A {REAL_HOME} | wc -l; echo marker > made.txt"}}\n'
                      f'- action: {{type: read_file, path: "{REAL_HOME}/.bashrc"}}\n'
                      "- action: {type: finish, status: DONE, message: done}\n")
    assert run_cli("init").returncode == 0
    r = run_cli("run", "--mock-script", str(script), "--max-steps", "3", "tools.environment=sandbox")
    assert r.returncode == 0, r.stderr
    assert f"step 1: shell(command='ls -A {REAL_HOME} | wc -l; echo marker > made.txt') → ok" in r.stdout
    assert (f"step 2: read_file(path='{REAL_HOME}/.bashrc') → failed: {REAL_HOME}/.bashrc is outside what this "
            "sandbox shows (nothing read or written)") in r.stdout
    assert (conway_home / "scratch" / "made.txt").read_text() == "marker\n"
    journal = "".join(p.read_text() for p in (conway_home / "journal").glob("*.jsonl"))
    assert '"output":"0\\n[exit code 0]"' in journal  # the real home listed nothing inside


def test_a_workdir_named_through_a_link_is_shown_at_that_name(bwrap_ok: None, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    box = build_toolbox(ToolsConfig(environment="sandbox", enabled=["shell", "files"]), tmp_path / "link", gui=False)
    try:
        r = box.run(Shell(command="pwd; echo hi > f.txt"))
        assert r.ok and r.output.splitlines()[0] == str(tmp_path / "link"), r.output
        assert box.run(ReadFile(path="f.txt")).output == "hi\n"
    finally:
        box.close()
    assert (real / "f.txt").read_text() == "hi\n"


def test_paths_resolve_through_the_view_links_included(tmp_path: Path) -> None:
    from conway.sandbox.paths import Bind, resolve
    from conway.tasks.env import PathEscape
    home = tmp_path / "home"
    (home / "docs").mkdir(parents=True)
    (home / "docs" / "a.txt").write_text("a")
    (home / "abs").symlink_to("/home/user/docs")  # absolute, as seen inside: stays in the home
    (home / "loop1").symlink_to("loop2")
    (home / "loop2").symlink_to("loop1")
    binds = [Bind("/home/user", home, True), Bind("/etc", Path("/etc"))]
    seen = resolve(binds, "abs/a.txt", cwd="/home/user", home="/home/user")
    assert (seen.inside, seen.host, seen.writable) == ("/home/user/docs/a.txt", home / "docs" / "a.txt", True)
    assert resolve(binds, "/etc/hostname", cwd="/", home="/home/user").writable is False
    assert resolve(binds, "~", cwd="/", home="/home/user").host == home
    with pytest.raises(PathEscape, match="too many levels of symbolic links"):
        resolve(binds, "~/loop1", cwd="/", home="/home/user")
    with pytest.raises(PathEscape, match=r"^~/\.\./other \(that is /home/other\) is outside what this sandbox shows$"):
        resolve(binds, "~/../other", cwd="/", home="/home/user")
    with pytest.raises(PathEscape, match="not a usable path"):
        resolve(binds, "a\0b", cwd="/home/user", home="/home/user")
