"""MCP servers' tools as `mcp` actions: real stdio servers (the SDK's server API) and the real loop.

The fixture server (tests/fixtures/mcp_server.py) logs every call it receives,
so these tests can tell what was sent, and its append tool reads Conway's
journal while it runs, so intent-before-side-effect is observed from the
server's side.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml
from conftest import REPO, run_cli
from helpers.loop_harness import ChangingObserver, run_script

pytest.importorskip("mcp")

FIXTURE = str(REPO / "tests" / "fixtures" / "mcp_server.py")
START_S = 90  # a loaded 2-core machine takes seconds just to import the SDK in each server


def fx_server(home: Path, name: str = "fx", *extra: str, **cfg) -> dict:
    args = [FIXTURE, "--log", str(home / f"{name}-calls.log"), "--journal", str(home / "journal"), *extra]
    return {"name": name, "command": sys.executable, "args": args, "startup_timeout_s": START_S, **cfg}


def write_config(home: Path, servers: list[dict], **tools) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"tools": {"mcp_servers": servers, **tools}}), encoding="utf-8")


def calls(home: Path, name: str = "fx") -> list[str]:
    path = home / f"{name}-calls.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def mcp(tool: str, **arguments) -> dict:
    return {"action": {"type": "mcp", "server": "fx", "tool": tool, "arguments": arguments}}


def no_fixture_servers_left() -> bool:
    for p in psutil.process_iter(["cmdline"]):
        try:
            if FIXTURE in (p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.Error:
            continue
    return True


@pytest.mark.slow
def test_a_run_with_mcp_servers_follows_the_loop_rules(conway_home, tmp_path):
    out = tmp_path / "appended.txt"
    write_config(conway_home, [
        fx_server(conway_home, "fx", "--bad-schema"),
        fx_server(conway_home, "nostart", "--fail-start"),
        {"name": "missing", "command": str(tmp_path / "no-such-program")},
    ])
    append = mcp("append_line", path=str(out), text="hello")
    steps = [
        mcp("lookup", key="alpha"),                      # 1 read-only
        mcp("lookup", key=3),                            # 2 schema mismatch: refused before sending
        mcp("broken", k="x"),                            # 3 a tool whose schema is not JSON Schema
        {"action": {"type": "mcp", "server": "nostart", "tool": "lookup", "arguments": {}}},  # 4 server down
        append, append, append, append,                  # 5-8 side effects; the 4th is suppressed
        mcp("fail", reason="no"),                        # 9 isError → a tool error
        mcp("picture"),                                  # 10 image saved to the home
        mcp("big", n=20000),                             # 11 bounded, the cut announced
    ]
    # the screen changes on every step: MCP counters must survive it (GUI ones would reset)
    run = run_script(steps, overrides=[f"agent.max_steps={len(steps)}"], observer=ChangingObserver(set(range(1, 20))))

    found = {p["server"]: p for p in run.payloads("session") if p.get("event") == "tools" and p["tool"] == "mcp"}
    assert found["fx"]["ok"] and {t["name"] for t in found["fx"]["tools"]} >= {"lookup", "append_line", "broken"}
    assert any(t["name"] == "lookup" and t["read_only"] for t in found["fx"]["tools"])
    assert any("broken" in why and "not valid JSON Schema" in why for why in found["fx"]["left_out"])
    assert not found["nostart"]["ok"] and "before answering" in found["nostart"]["detail"]
    assert not found["missing"]["ok"] and "No such file" in found["missing"]["detail"]
    assert any("nostart not available" in line and "continues without it" in line for line in run.lines)

    by_step: dict[int, list[dict]] = {}
    for e in run.events:
        by_step.setdefault(e["step"], []).append(e)

    def kinds(step: int) -> list[str]:
        return [e["kind"] for e in by_step[step] if e["kind"] not in ("observation", "decision", "session")]

    assert kinds(1) == ["result"]  # read-only: no intent
    r1 = by_step[1][-1]["payload"]
    assert r1["ok"] and r1["output"] == "first letter" and r1["data"]["read_only"] is True

    for step, words in ((2, "do not match its schema"), (3, "not valid JSON Schema"), (4, "not available")):
        err = [e["payload"] for e in by_step[step] if e["kind"] == "error"][0]
        assert err["stage"] == "pre-dispatch" and words in err["error"]
    assert not any(c.startswith("lookup 3") for c in calls(conway_home))  # refused before sending

    for step in (5, 6, 7):
        assert kinds(step) == ["intent", "result"]
    assert kinds(8) == ["suppressed"]
    assert out.read_text() == "hello\nhello\nhello\n"
    appends = [c for c in calls(conway_home) if c.startswith("append_line")]
    # the server saw 1, 2, 3 intents in the journal while running calls 1, 2, 3: intent first, fsynced
    assert [c.split("intents_journaled=")[1] for c in appends] == ["1", "2", "3"]

    err9 = [e["payload"] for e in by_step[9] if e["kind"] == "error"][0]
    assert err9["ok"] is False and "refused: no" in err9["error"] and "stage" not in err9

    r10 = [e["payload"] for e in by_step[10] if e["kind"] == "result"][0]
    image = Path(r10["data"]["images"][0]["path"])
    assert image.is_file() and image.read_bytes().startswith(b"\x89PNG") and conway_home in image.parents
    assert str(image) in r10["output"] and "resource link: red.png" in r10["output"]
    assert "iVBOR" not in json.dumps(r10)  # image bytes are not in the journal

    r11 = [e["payload"] for e in by_step[11] if e["kind"] == "result"][0]
    assert r11["truncated"] and "chars cut: showing first" in r11["output"]
    assert r11["output"].startswith("line 00000") and r11["output"].rstrip().endswith("line 19999")
    assert len(r11["output"]) < 32768 + 200

    # results reach the export
    export = conway_home.parent / "traj.jsonl"
    assert run_cli("export", "--output", str(export)).returncode == 0
    records = [json.loads(line) for line in export.read_text().splitlines()]
    mcp_actions = [a for r in records for a in r["actions"] if (a.get("action") or {}).get("type") == "mcp"]
    assert any(a.get("output") == "first letter" for a in mcp_actions)
    assert no_fixture_servers_left()


@pytest.mark.slow
def test_the_prompt_lists_mcp_tools_bounded_with_the_cut_marked(conway_home):
    from conway.config import load_config
    from conway.loop.control import SimulatedClock
    from conway.observe.synthetic import SyntheticObserver
    from conway.policies.mock import MockPolicy
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home, resolve_home

    seen: list[str] = []

    class Recording(MockPolicy):  # the real mock, keeping each prompt it was shown
        def decide(self, context):
            seen.append(context.text())
            return super().decide(context)

    write_config(conway_home, [fx_server(conway_home)], mcp_listing_max_chars=600)
    home = resolve_home(None)
    init_home(home)
    cfg = load_config(home.config, ["agent.max_steps=1"])
    run_agent(home, cfg, RunRequest(single_session=False, policy=Recording(), observer=SyntheticObserver(),
                                    clock=SimulatedClock()), say=lambda _t: None)
    prompt = seen[0]
    assert "MCP tools (call with" in prompt and "fx/lookup (read-only)" in prompt
    assert '"required":["key"]' in prompt
    assert "MCP tool(s) left out to stay inside tools.mcp_listing_max_chars" in prompt
    assert "conway-home:" in prompt  # and the skill that `init` installed


@pytest.mark.slow
def test_a_call_past_its_timeout_is_uncertain_ends_the_run_and_is_never_retried(conway_home, tmp_path):
    out = tmp_path / "slow.txt"
    write_config(conway_home, [fx_server(conway_home, timeout_s=2)])
    slow = mcp("slow_append", path=str(out), text="late", seconds=60)
    run = run_script([slow, slow], overrides=["agent.max_steps=5"])
    assert run.outcome.reason == "uncertain side-effect failure"
    assert [k for k in run.kinds() if k in ("intent", "result", "error", "uncertain")] == ["intent", "uncertain"]
    unc = run.payloads("uncertain")[0]
    assert "timed out after 2 s" in unc["detail"] and "not retried" in unc["detail"]
    assert [c for c in calls(conway_home) if c.startswith("slow_append")] == ["slow_append late"]  # once
    assert not out.exists()
    # the server (still sleeping inside the call) was stopped with its process group at the end of the run
    assert no_fixture_servers_left()
    # a restart does not replay it either
    run2 = run_script([], overrides=["agent.max_steps=1"])
    assert not run2.payloads("uncertain")  # recorded once, in the first run
    assert [c for c in calls(conway_home) if c.startswith("slow_append")] == ["slow_append late"]


@pytest.mark.slow
def test_a_server_that_dies_mid_call_makes_the_call_uncertain(conway_home, tmp_path):
    marker = tmp_path / "crash.txt"
    write_config(conway_home, [fx_server(conway_home)])
    run = run_script([mcp("crash", path=str(marker))], overrides=["agent.max_steps=3"])
    assert run.outcome.reason == "uncertain side-effect failure"
    intent = run.payloads("intent")[0]
    assert intent["action"]["tool"] == "crash"
    unc = run.payloads("uncertain")[0]
    assert "lost its server mid-call" in unc["detail"]
    assert marker.read_text() == "half done\n"  # it did part of its work: exactly why it is not replayed


@pytest.mark.slow
def test_sigterm_stops_the_run_and_the_server_process_group(conway_home, tmp_path):
    pidfile = tmp_path / "server.pid"
    write_config(conway_home, [fx_server(conway_home, "fx", "--pidfile", str(pidfile))])
    assert run_cli("init").returncode == 0
    script = tmp_path / "waits.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"action": {"type": "wait", "seconds": 1}}], "repeat": True}))
    env = {**os.environ, "CONWAY_HOME": str(conway_home)}
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", "--mock-script", str(script)], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + START_S + 30
        while not pidfile.exists() or not (conway_home / "state.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "slow"
            time.sleep(0.2)
        server_pid = int(pidfile.read_text())
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "terminated (SIGTERM)" in out
    assert "MCP server fx: 8 tool(s)" in out
    assert not psutil.pid_exists(server_pid) or psutil.Process(server_pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.slow
def test_a_stop_during_a_long_call_abandons_it_as_uncertain(conway_home, tmp_path):
    """SIGTERM while a call runs: the run ends now, not after timeout_s; the call is uncertain, never replayed."""
    out = tmp_path / "slow.txt"
    write_config(conway_home, [fx_server(conway_home, timeout_s=600)])
    assert run_cli("init").returncode == 0
    script = tmp_path / "slow.yaml"
    script.write_text(yaml.safe_dump({"steps": [mcp("slow_append", path=str(out), text="late", seconds=600)]}))
    env = {**os.environ, "CONWAY_HOME": str(conway_home)}
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", "--mock-script", str(script)], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + START_S + 30
        while not any(c.startswith("slow_append") for c in calls(conway_home)):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "slow"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out_text, _ = proc.communicate(timeout=120)  # far below the call's 600 s timeout_s
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "terminated (SIGTERM)" in out_text, out_text
    events = [json.loads(line) for f in sorted((conway_home / "journal").glob("*.jsonl"))
              for line in f.read_text().splitlines() if line.strip()]
    unc = [e["payload"] for e in events if e["kind"] == "uncertain"]
    assert len(unc) == 1 and "abandoned" in unc[0]["detail"] and "stopped" in unc[0]["detail"], unc
    assert not out.exists() and no_fixture_servers_left()


@pytest.mark.slow
def test_streamable_http_server_with_headers_from_the_environment(conway_home, tmp_path):
    """Conway's own `mcp-serve --http` is the Streamable HTTP server here (a real one)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = tmp_path / "served-home"
    env = {**os.environ, "CONWAY_HOME": str(served), "FX_TOKEN": "not-a-real-token"}
    assert run_cli("init", env=env).returncode == 0
    server = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "mcp-serve", "--mock", "--http", str(port)],
                              cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port)
        from conway.actions import parse_action
        from conway.config import ToolsConfig
        from conway.tools.mcp import McpTool
        cfg = ToolsConfig.model_validate({"mcp_servers": [
            {"name": "conway", "url": f"http://127.0.0.1:{port}/mcp", "headers_env": {"X-Token": "FX_TOKEN"},
             "startup_timeout_s": START_S},
            {"name": "nokey", "url": f"http://127.0.0.1:{port}/mcp", "headers_env": {"X-Token": "UNSET_VAR_X"}}]})
        os.environ["FX_TOKEN"] = "not-a-real-token"
        tool = McpTool(cfg, tmp_path, conway_home)
        try:
            servers = {s["server"]: s for s in tool.servers()}
            assert servers["conway"]["ok"] and servers["conway"]["transport"] == "http"
            assert "environment variable UNSET_VAR_X (headers_env.X-Token) is not set" in servers["nokey"]["detail"]
            action = tool.check(parse_action({"type": "mcp", "server": "conway", "tool": "status", "arguments": {}}))
            assert action.side_effect is False  # annotated read-only by Conway's server
            result = tool.run(action)
            assert result.ok and str(served) in result.output
        finally:
            tool.close()
            os.environ.pop("FX_TOKEN", None)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_port(port: int, timeout: float = START_S) -> None:
    import socket
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


# --- configuration: every bad input is one clear line, exit 1 -------------------------------

@pytest.mark.parametrize("server, words", [
    ({"name": "Bad Name", "command": "x"}, "mcp_servers.0.name"),
    ({"name": "a"}, "needs exactly one of command (stdio) or url (HTTP)"),
    ({"name": "a", "command": "x", "url": "http://h/mcp"}, "needs exactly one of command"),
    ({"name": "a", "url": "file:///etc/passwd"}, "mcp_servers.0.url"),
    ({"name": "a", "command": "x", "headers_env": {"A": "B"}}, "headers_env is for HTTP servers"),
    ({"name": "a", "url": "http://h/mcp", "args": ["x"]}, "are for stdio servers"),
    ({"name": "a", "command": "x", "inherit_env": ["1BAD"]}, "not an environment variable name"),
    ({"name": "a", "command": "x", "timeout_s": 0}, "mcp_servers.0.timeout_s"),
    ({"name": "a", "command": "x", "colour": "red"}, "mcp_servers.0.colour: unknown key"),
])
def test_bad_mcp_server_configuration_is_refused(conway_home, server, words):
    write_config(conway_home, [server])
    r = run_cli("config", "--check")
    assert r.returncode == 1 and words in r.stderr and "Traceback" not in r.stderr


def test_duplicate_server_names_and_secrets_in_files_are_refused(conway_home):
    write_config(conway_home, [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}])
    r = run_cli("config", "--check")
    assert r.returncode == 1 and "duplicate MCP server name(s): a" in r.stderr
    write_config(conway_home, [{"name": "a", "url": "http://h/mcp", "headers_env": {"Authorization": "Bearer abcdefghijk"}}])
    r = run_cli("config", "--check")
    assert r.returncode == 1 and "looks like it holds a secret" in r.stderr and "headers_env.Authorization" in r.stderr
    write_config(conway_home, [{"name": "a", "command": "x", "env": {"API_KEY": "sk-abcdefghijklmnopqrstu"}}])
    assert run_cli("config", "--check").returncode == 1
    # naming the variables is fine
    write_config(conway_home, [{"name": "a", "url": "http://h/mcp", "headers_env": {"Authorization": "MY_TOKEN"}}])
    r = run_cli("config", "--check")
    assert r.returncode == 0, r.stderr


def test_the_json_grammar_accepts_free_mcp_arguments():
    from conway.policies.grammar import action_json_grammar
    g = action_json_grammar(["mcp", "wait"], convention="absolute", sent_size=(100, 100), captured_size=(100, 100))
    assert "act-mcp ::=" in g and "json-object ::=" in g and "json-value ::=" in g
    llama = pytest.importorskip("llama_cpp")
    assert llama.LlamaGrammar.from_string(g, verbose=False) is not None


@pytest.mark.slow
def test_doctor_and_preflight_report_mcp_servers(conway_home, tmp_path):
    write_config(conway_home, [fx_server(conway_home, "fx", "--bad-schema"), fx_server(conway_home, "down", "--fail-start")])
    assert run_cli("init").returncode == 0
    r = run_cli("doctor")
    assert r.returncode == 0, r.stderr
    assert "MCP servers (tools.mcp_servers; started and stopped again):" in r.stdout
    assert "lookup" in r.stdout and "read-only" in r.stdout and "append_line" in r.stdout and "side effect" in r.stdout
    assert "unusable: its input schema is not valid JSON Schema" in r.stdout
    assert "fixture: refusing to start" in r.stdout  # the failing server's last stderr line
    report = tmp_path / "pf.json"
    run_cli("preflight", "--mock", "--output", str(report))
    checks = {c["check"]: c for c in json.loads(report.read_text())["cases"]}
    assert checks["mcp: fx"]["status"] == "warn" and "broken" in checks["mcp: fx"]["detail"]
    assert checks["mcp: down"]["status"] == "warn" and "not available" in checks["mcp: down"]["detail"]
    assert no_fixture_servers_left()


def test_a_server_that_never_answers_is_reported_and_stopped(tmp_path):
    from conway.config import ToolsConfig
    from conway.tools.mcp import McpTool
    cfg = ToolsConfig.model_validate({"mcp_servers": [
        {"name": "mute", "command": "sleep", "args": ["120"], "startup_timeout_s": 1.5}]})
    started = time.monotonic()
    tool = McpTool(cfg, tmp_path, tmp_path / "home")
    try:
        assert time.monotonic() - started < 30
        ok, detail = tool.availability()
        assert not ok and "mute: did not answer within 1.5 s (startup_timeout_s)" in detail
        sleepers = [p for p in psutil.Process().children() if p.name() == "sleep"]
    finally:
        tool.close()
    time.sleep(0.5)
    assert all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in sleepers)


def test_mcp_and_skill_actions_with_nothing_configured_are_refused_before_any_intent(conway_home):
    from conway.store.home import init_home, resolve_home
    init_home(resolve_home(None))
    (conway_home / "skills" / "conway-home" / "SKILL.md").unlink()  # the folder stays: init leaves it alone
    run = run_script([mcp("lookup", key="a"), {"action": {"type": "read_skill", "name": "x"}}],
                     overrides=["agent.max_steps=2"])
    errors = run.payloads("error")
    assert "intent" not in run.kinds() and [e["stage"] for e in errors] == ["pre-dispatch", "pre-dispatch"]
    assert "no MCP server is configured" in errors[0]["error"] and "no Agent Skills" in errors[1]["error"]


@pytest.mark.slow
def test_sigterm_while_mcp_servers_start_takes_them_down_with_conway(initialized_home, tmp_path):
    """Item 25.33: a server still starting was left running after Conway had gone."""
    conway_home = initialized_home
    import signal
    import subprocess
    import time
    pidfile = tmp_path / "server.pid"
    hanging = {"name": "hangs", "command": "sh", "args": ["-c", f"echo $$ > {pidfile}; exec sleep 600"],
               "startup_timeout_s": START_S}  # never answers `initialize`: start-up waits for it
    write_config(conway_home, [hanging])
    agent = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", "--mock", "--max-steps", "1"],
                             cwd=REPO, env={**os.environ, "CONWAY_HOME": str(conway_home)}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        server = int(pidfile.read_text())
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=30)
    finally:
        if agent.poll() is None:
            agent.kill()
    _, err = agent.communicate()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if psutil.Process(server).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    else:
        os.kill(server, signal.SIGKILL)
        pytest.fail(f"the starting MCP server (pid {server}) outlived Conway")
    assert "Traceback" not in err, err


def test_a_server_flooding_stdout_with_garbage_logs_into_its_own_file_not_the_terminal(conway_home, tmp_path):
    """The SDK logs a traceback for every line that is not JSON-RPC: those go to mcp/<name>.log, even with
    --quiet nothing reaches Conway's terminal."""
    noisy = tmp_path / "noisy.py"
    noisy.write_text("import sys, time\nfor i in range(3000):\n    print(f'not json {i}', flush=True)\n"
                     "time.sleep(60)\n")
    assert run_cli("init").returncode == 0
    write_config(conway_home, [{"name": "noisy", "command": sys.executable, "args": [str(noisy)],
                                "startup_timeout_s": 8}])
    r = run_cli("run", "--mock", "--max-steps", "1", "--quiet", timeout=180)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr + r.stdout and "Failed to parse JSONRPC" not in r.stderr
    assert len(r.stderr.splitlines()) < 5, r.stderr[-2000:]
    log = (conway_home / "mcp" / "noisy.log").read_text()
    assert "Failed to parse JSONRPC message from server" in log and len(log) < 1_100_000


def test_a_50_mb_answer_is_a_certain_cut_result(conway_home, tmp_path):
    """A tool with a side effect answers 50 MB: read as its head and size, recorded as a result (not uncertain),
    and the run goes on."""
    out = tmp_path / "appended.txt"
    write_config(conway_home, [fx_server(conway_home, timeout_s=120)])
    steps = [mcp("append_big", path=str(out), n=4_200_000), mcp("lookup", key="alpha")]
    run = run_script(steps, overrides=["agent.max_steps=2"])
    kinds = [e["kind"] for e in run.events]
    assert "uncertain" not in kinds and out.read_text() == "appended\n"
    (first, *_) = [e["payload"] for e in run.events if e["kind"] == "result"]
    assert first["ok"] and first["truncated"] and first["output"].startswith("line 0000000\nline 0000001\n")
    assert first["data"]["answer_bytes"] > 50_000_000 and "Conway reads at most" in first["output"]
    assert len(first["output"]) < 40_000
    assert sum(1 for e in run.events if e["kind"] == "result") == 2  # the run went on
