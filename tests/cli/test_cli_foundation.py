"""The `conway` command as a user meets it: real processes, real files, clear errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from conway.store.journal import read_journal
from conway.store.state import read_json


def wait_for(predicate, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def spawn(*args: str, home: Path) -> subprocess.Popen:
    env = {**os.environ, "CONWAY_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "conway.cli.main", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def state_of(home: Path) -> dict:
    try:
        return read_json(home / "state.json")
    except (FileNotFoundError, ValueError):
        return {}


def write_script(path: Path, steps: list[dict]) -> Path:
    import yaml
    path.write_text(yaml.safe_dump(steps))
    return path


# --- init and config ---------------------------------------------------------


def test_init_writes_starters_and_never_overwrites(conway_home):
    r = run_cli("init")
    assert r.returncode == 0, r.stderr
    assert "goals:" in r.stdout and str(conway_home / "goals.md") in r.stdout
    for name in ("journal", "screenshots", "scratch"):
        assert (conway_home / name).is_dir()
    (conway_home / "constitution.md").write_text("MINE")
    r = run_cli("init")
    assert "kept existing constitution.md" in r.stdout
    assert (conway_home / "constitution.md").read_text() == "MINE"


def test_home_flag_goes_before_the_subcommand(tmp_path):
    r = run_cli("--home", str(tmp_path / "elsewhere"), "init")
    assert r.returncode == 0 and (tmp_path / "elsewhere" / "goals.md").exists()


@pytest.mark.parametrize("args,needle", [
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["run", "--frob"], "unrecognized arguments: --frob"),
    (["run", "--max-steps", "zero"], "invalid int value"),
    (["run", "--max-steps", "0", "--mock"], "--max-steps must be positive"),
])
def test_unknown_commands_and_options_exit_1_without_traceback(initialized_home, args, needle):
    r = run_cli(*args)
    assert r.returncode == 1
    assert needle in r.stderr and "Traceback" not in r.stderr


def test_home_that_is_a_file_or_unwritable(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    r = run_cli("--home", str(f), "init")
    assert r.returncode == 1 and "is a file" in r.stderr
    r = run_cli("--home", "/sys/conway-home", "init")
    assert r.returncode == 1 and "not writable" in r.stderr and "Traceback" not in r.stderr


def test_invalid_config_values_name_the_key_and_allowed_values(initialized_home):
    r = run_cli("config", "--check", "policy.kind=gpt9")
    assert r.returncode == 1 and "policy.kind" in r.stderr and "'mock'" in r.stderr
    (initialized_home / "config.yaml").write_text("agent:\n  max_stepz: 3\n")
    r = run_cli("config", "--check")
    assert r.returncode == 1 and "agent.max_stepz: unknown key" in r.stderr
    (initialized_home / "config.yaml").write_text("agent: [1, 2\n")
    r = run_cli("config", "--check")
    assert r.returncode == 1 and "not valid YAML" in r.stderr


def test_a_preset_an_override_and_the_home_policy_say_what_is_wrong_in_one_line(initialized_home):
    from conway.config import presets

    # an unknown preset listed none; a YAML error did not name its override; a preset's name as the home's
    # `policy:` gave pydantic's raw message
    r = run_cli("config", "--check", "policy=opencua-8b")
    (line,) = r.stderr.splitlines()
    assert r.returncode == 1 and line.startswith("conway: error: override policy=opencua-8b: no policy preset")
    assert "opencua-7b" in line and all(name in line for name in presets("policy"))
    r = run_cli("config", "--check", "agent.max_steps=3", "tools.enabled=[shell,")
    (line,) = r.stderr.splitlines()
    assert r.returncode == 1 and "override tools.enabled=[shell,: its value is not valid YAML" in line
    (initialized_home / "config.yaml").write_text("policy: opencua-7b\n")
    r = run_cli("config", "--check")
    (line,) = r.stderr.splitlines()
    assert r.returncode == 1 and "`policy:` holds the policy's settings" in line
    assert "a preset is chosen on the command line: policy=opencua-7b" in line


def test_an_override_a_flag_also_sets_is_refused_not_silently_outvoted(initialized_home):
    r = run_cli("run", "--mock", "--max-steps", "1", "agent.max_steps=abc")
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert "--max-steps 1" in r.stderr and "agent.max_steps=abc" in r.stderr
    assert not list((initialized_home / "journal").glob("*.jsonl"))  # refused before any run
    r = run_cli("run", "--mock", "--max-steps", "1", "agent.max_steps=1")  # the same value says one thing
    assert r.returncode == 0, r.stderr


def test_config_layers_home_file_then_command_line(initialized_home):
    (initialized_home / "config.yaml").write_text("agent:\n  repetition_limit: 5\n  max_steps: 9\n")
    r = run_cli("config", "--check", "agent.max_steps=4")
    assert r.returncode == 0, r.stderr
    assert "repetition_limit: 5" in r.stdout and "max_steps: 4" in r.stdout
    assert r.stdout.startswith("# configuration valid")
    r = run_cli("config", "--check", "policy=opencua-7b")
    assert "kind: opencua" in r.stdout and "convention: absolute" in r.stdout


@pytest.mark.parametrize("yaml_text,key", [
    ("policy:\n  api_key: sk-abcdefghijklmnopqrstuv\n", "policy.api_key"),
    ("policy:\n  endpoint: http://x\n  headers:\n    Authorization: Bearer abcdefghijkl\n", "policy.headers.Authorization"),
    ("hf_token: hf_abcdefghijklmnopqrstuvwxyz\n", "hf_token"),
    ("notes: sk-abcdefghijklmnopqrstuv\n", "notes"),
])
def test_secrets_in_the_home_config_are_refused_naming_the_key(initialized_home, yaml_text, key):
    (initialized_home / "config.yaml").write_text(yaml_text)
    r = run_cli("config", "--check")
    assert r.returncode == 1 and key in r.stderr and "environment" in r.stderr


def test_max_tokens_and_api_key_env_are_not_mistaken_for_secrets(initialized_home):
    (initialized_home / "config.yaml").write_text("policy:\n  max_tokens: 64\n  api_key_env: MY_KEY\n")
    r = run_cli("config", "--check")
    assert r.returncode == 0, r.stderr


def test_every_shipped_config_composes_and_validates():
    from conway.config import configs_dir, load_config
    from conway.policies.families import POLICY_KINDS
    for preset in sorted((configs_dir() / "policy").glob("*.yaml")):
        cfg = load_config(None, [f"policy={preset.stem}"])
        assert cfg.policy.kind in POLICY_KINDS


# --- runs --------------------------------------------------------------------


def test_malformed_mock_script_is_a_clear_error(initialized_home, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- action: {type: wait}\n  jump: high\n")
    r = run_cli("run", "--mock-script", str(bad), "--max-steps", "1")
    assert r.returncode == 1 and "malformed at steps.0.jump" in r.stderr
    bad.write_text("{{{{")
    r = run_cli("run", "--mock-script", str(bad), "--max-steps", "1")
    assert r.returncode == 1 and "does not parse" in r.stderr
    r = run_cli("run", "--mock-script", str(tmp_path / "nope.yaml"), "--max-steps", "1")
    assert r.returncode == 1 and "does not exist" in r.stderr


def test_run_requires_init(conway_home):
    r = run_cli("run", "--mock", "--max-steps", "1")
    assert r.returncode == 1 and "conway init" in r.stderr


def test_control_commands_with_no_running_agent_say_so(initialized_home):
    for cmd in ("pause", "resume", "stop"):
        r = run_cli(cmd)
        assert r.returncode == 1 and "no Conway agent is running" in r.stderr


def test_export_refuses_existing_target_and_empty_home(initialized_home, tmp_path):
    out = tmp_path / "t.jsonl"
    r = run_cli("export", "--output", str(out))
    assert r.returncode == 1 and "nothing to export" in r.stderr
    out.write_text("keep me")
    r = run_cli("export", "--output", str(out))
    assert r.returncode == 1 and "already exists" in r.stderr and out.read_text() == "keep me"


@pytest.mark.slow
def test_second_run_on_a_locked_home_is_refused_with_the_holder_pid(initialized_home, tmp_path):
    script = write_script(tmp_path / "idle.yaml", [{"action": {"type": "wait", "seconds": 60}}])
    first = spawn("run", "--mock-script", str(script), home=initialized_home)
    try:
        wait_for(lambda: state_of(initialized_home).get("status") == "running", what="first run")
        started = time.monotonic()
        r = run_cli("run", "--mock", "--max-steps", "1")
        assert time.monotonic() - started < 30  # refused at once, not queued
        assert r.returncode == 1
        assert f"pid {first.pid}" in r.stderr and "another Conway agent is running" in r.stderr
    finally:
        first.terminate()
        first.wait(30)


@pytest.mark.slow
def test_pause_resume_stop_from_another_process(initialized_home, tmp_path):
    script = write_script(tmp_path / "idle.yaml", [{"action": {"type": "wait", "seconds": 1}}])
    agent = spawn("run", "--mock-script", str(script), home=initialized_home)
    try:
        wait_for(lambda: state_of(initialized_home).get("status") == "running", what="agent start")
        r = run_cli("pause")
        assert r.returncode == 0 and "pause acknowledged" in r.stdout, r.stdout + r.stderr
        status = json.loads(run_cli("status", "--json").stdout)
        assert status["status"] == "paused" and status["pid_alive"] is True and status["pid"] == agent.pid
        r = run_cli("resume")
        assert "resume acknowledged" in r.stdout
        r = run_cli("stop")
        assert "stop acknowledged" in r.stdout
        assert agent.wait(30) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
    st = state_of(initialized_home)
    assert st["status"] == "stopped" and st["stop_reason"] == "stop requested"
    kinds = [e["payload"].get("request") for e in read_journal(initialized_home / "journal").events
             if e["kind"] == "control"]
    assert kinds == ["pause", "resume", "stop"]
    r = run_cli("status")
    assert "not running" in r.stdout and "stopped" in r.stdout


@pytest.mark.slow
def test_sigterm_stops_cooperatively_with_a_final_state_write(initialized_home, tmp_path):
    script = write_script(tmp_path / "idle.yaml", [{"action": {"type": "wait", "seconds": 30}}])
    agent = spawn("run", "--mock-script", str(script), home=initialized_home)
    wait_for(lambda: state_of(initialized_home).get("status") == "running", what="agent start")
    wait_for(lambda: any(e["kind"] == "result" for e in read_journal(initialized_home / "journal").events),
             what="first wait")
    agent.send_signal(signal.SIGTERM)
    assert agent.wait(30) == 0
    st = state_of(initialized_home)
    assert st["status"] == "stopped" and "SIGTERM" in st["stop_reason"]


@pytest.mark.slow
def test_crash_mid_dispatch_is_recorded_uncertain_and_never_replayed(initialized_home, tmp_path):
    """SIGKILL while a side effect runs; the restart records `uncertain` and does not repeat it."""
    counter = tmp_path / "ran.txt"
    steps = [{"action": {"type": "shell", "command": f"echo ran >> {counter}; sleep 60"}}]
    script = write_script(tmp_path / "block.yaml", steps)
    agent = spawn("run", "--mock-script", str(script), home=initialized_home)
    wait_for(lambda: counter.exists(), what="the side effect to start")
    os.kill(agent.pid, signal.SIGKILL)
    agent.wait(30)
    st = state_of(initialized_home)
    assert st["pending"]["action"]["type"] == "shell"  # the intent outlived the crash
    os.system(f"pkill -f 'echo ran >> {counter}' >/dev/null 2>&1")

    # restart with a script that does nothing risky
    calm = write_script(tmp_path / "calm.yaml", [{"action": {"type": "wait", "seconds": 0.1}}])
    r = run_cli("run", "--mock-script", str(calm), "--max-steps", "1")
    assert r.returncode == 0, r.stderr
    events = read_journal(initialized_home / "journal").events
    uncertain = [e for e in events if e["kind"] == "uncertain"]
    assert len(uncertain) == 1 and uncertain[0]["payload"]["action"]["type"] == "shell"
    assert counter.read_text() == "ran\n"  # not replayed
    for name in ("state.json", "state.previous.json"):
        read_json(initialized_home / name)  # both parse
    assert state_of(initialized_home)["pending"] is None
    # a third run does not record it again
    run_cli("run", "--mock-script", str(calm), "--max-steps", "1")
    assert sum(e["kind"] == "uncertain" for e in read_journal(initialized_home / "journal").events) == 1


@pytest.mark.slow
def test_status_shows_a_pending_intent_and_last_events(initialized_home, tmp_path):
    steps = [{"action": {"type": "shell", "command": "sleep 60"}}]
    agent = spawn("run", "--mock-script", str(write_script(tmp_path / "s.yaml", steps)), home=initialized_home)
    try:
        wait_for(lambda: (state_of(initialized_home).get("pending") or {}).get("summary"), what="pending intent")
        r = run_cli("status")
        assert "pending:  shell(command='sleep 60')" in r.stdout
        assert "intent" in r.stdout and "(alive)" in r.stdout
    finally:
        agent.kill()
        agent.wait(30)


def test_a_stop_during_start_up_reaches_the_run_holding_the_lock_not_the_previous_session(initialized_home):
    """Item 25.12: state.json still names the last session (stopped) while the new run starts up."""
    from conway.session.app import send_control
    from conway.store.home import resolve_home
    from conway.store.state import InstanceLock, StateStore, read_control

    home = resolve_home(None)
    StateStore(home.state, home.state_previous).save({"session": "s-previous", "status": "stopped"})
    lock = InstanceLock(home.lock)
    lock.acquire("s-starting")  # the new run: lock taken, its loop not begun
    try:
        said = send_control(home, "stop", wait_s=0.3)
    finally:
        lock.release()
    assert "s-previous" not in said and said.startswith("stop requested for session s-starting")
    assert read_control(home.control, "s-starting") == "stop"


@pytest.mark.parametrize("argv, help_of", [(["run", "--mock", "--bogus"], "conway run"),
                                           (["tasks", "list", "x", "--bogus"], "conway tasks list"),
                                           (["status", "extra"], "conway status")])
def test_an_unknown_word_points_to_its_command_s_help(argv, help_of, capsys):
    from conway.cli.main import main
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 1
    assert f"unrecognized arguments: {argv[-1]}" in err and f"(see `{help_of} --help`)" in err, err
    assert err.startswith(f"usage: {help_of} ")


def test_invalid_yaml_is_one_line_with_where(initialized_home, tmp_path, capsys):
    from conway.cli.main import main
    from conway.evals.grounding.suite import load_suite
    from conway.store.home import resolve_home
    (initialized_home / "config.yaml").write_text("agent: [unclosed\n  x: 1\n")
    assert main(["run", "--mock"]) == 1
    err = capsys.readouterr().err
    assert err == (f"conway: error: {initialized_home / 'config.yaml'} is not valid YAML: while parsing a flow "
                   "sequence: expected ',' or ']', but got ':' (line 2, column 4)\n")
    from conway.errors import UserError
    from conway.evals.candidates import _read_home_config
    suite = tmp_path / "suite.yaml"
    suite.write_text("format: [\n")
    for read in (lambda: _read_home_config(resolve_home(None)), lambda: load_suite(str(suite))):
        with pytest.raises(UserError) as exc:
            read()
        assert "not valid YAML" in str(exc.value) and "\n" not in str(exc.value) and "(line " in str(exc.value)


@pytest.mark.parametrize("command", [["tasks", "run", "evals/osworld_local", "--output", "r.json"],
                                     ["rollouts", "evals/osworld_local", "--output", "r", "--samples", "1"],
                                     ["run", "--max-steps", "1"]])
def test_overrides_after_the_options_are_taken_by_every_command(command):
    # `tasks run` and `rollouts` said "unrecognized arguments" where `conway run` took them
    from conway.cli.main import build_parser, main
    from conway.cli.tasks import split_overrides

    argv = [*command, "agent.max_seconds=5", "--quiet", "policy=mock"]
    args = build_parser().parse_args(argv)
    if hasattr(args, "suite"):
        split_overrides(args)
        assert args.suite == ["evals/osworld_local"]
    assert args.overrides == ["agent.max_seconds=5", "policy=mock"] and args.quiet
    with pytest.raises(SystemExit) as exit_:  # an option the command does not take is still refused
        main([*command, "--quiet", "--frob"])
    assert exit_.value.code == 1


def test_the_wording_a_new_user_met(capsys):
    from conway.cli.main import main

    with pytest.raises(SystemExit):  # rerun asks no model: no exit 3 "the model never produced a valid decision"
        main(["rerun", "--help"])
    assert "valid decision" not in capsys.readouterr().out
    with pytest.raises(SystemExit):  # OSWorld's VM is 1920x1080; 1280x800 is what tasks run uses
        main(["rollouts", "--help"])
    flat = " ".join(capsys.readouterr().out.split())
    assert "OSWorld's 1280x800" not in flat and "OSWorld's VM is 1920x1080" in flat
    r = run_cli("--home", "/proc/conway-nohome", "init")  # it said "(/proc: No such file or directory)"
    (line,) = r.stderr.splitlines()
    assert r.returncode == 1 and "No such file or directory" not in line
    assert line == ("conway: error: Conway home /proc/conway-nohome is not writable: /proc takes no new files (a "
                    "virtual file system); pass --home DIR or set CONWAY_HOME")
