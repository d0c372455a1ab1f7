"""`conway mcp-serve`: the SDK's client against the real server process (stdio and Streamable HTTP)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml
from conftest import REPO, run_cli

pytest.importorskip("mcp")

EXPECTED_TOOLS = {"status", "recent_events", "pause", "resume", "stop", "export", "vision_check", "preflight"}
READ_ONLY = {"status", "recent_events"}


def stdio_params(home: Path):
    from mcp import StdioServerParameters
    env = {"CONWAY_HOME": str(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return StdioServerParameters(command=sys.executable, args=["-m", "conway.cli.main", "mcp-serve", "--mock"],
                                 env=env, cwd=str(REPO))


async def with_client(target, body):
    from mcp import Client
    async with Client(target, cache=None) as client:
        return await body(client)


def call(target, body):
    return asyncio.run(asyncio.wait_for(with_client(target, body), 240))


def structured(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


def test_the_model_tools_refuse_without_a_model_like_the_commands(initialized_home, tmp_path):
    from mcp import StdioServerParameters
    env = {"CONWAY_HOME": str(initialized_home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "conway.cli.main", "mcp-serve"], env=env,
                                   cwd=str(REPO))

    async def body(client):
        return {name: await client.call_tool(name, {"output": str(tmp_path / f"{name}.json")})
                for name in ("preflight", "vision_check")}

    for name, result in call(params, body).items():
        assert result.is_error and "no model is configured" in result.content[0].text, name
        assert not (tmp_path / f"{name}.json").exists()


@pytest.mark.slow
def test_stdio_server_tools_annotations_and_answers(initialized_home, tmp_path):
    home = initialized_home
    assert run_cli("run", "--mock", "--max-steps", "3").returncode == 0
    inside_home = home / "scratch" / "out.jsonl"
    export_to = tmp_path / "traj.jsonl"

    async def body(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        out = {"tools": tools}
        out["status"] = structured(await client.call_tool("status", {}))
        out["events"] = structured(await client.call_tool("recent_events", {"limit": 5, "kinds": ["result"]}))
        out["bad_limit"] = await client.call_tool("recent_events", {"limit": 0})
        out["bad_kind"] = await client.call_tool("recent_events", {"kinds": ["nonsense"]})
        out["pause"] = await client.call_tool("pause", {})
        out["export"] = structured(await client.call_tool("export", {"output": str(export_to)}))
        out["export_again"] = await client.call_tool("export", {"output": str(export_to)})
        out["export_home"] = await client.call_tool("export", {"output": str(inside_home)})
        out["export_relative"] = await client.call_tool("export", {"output": "x.jsonl"})
        out["preflight"] = structured(await client.call_tool("preflight", {"output": str(tmp_path / "pf.json")}))
        out["preflight_stdout"] = await client.call_tool("preflight", {"output": "/dev/stdout"})
        out["vision"] = structured(await client.call_tool(
            "vision_check", {"output": str(tmp_path / "vc.json"), "samples": 2, "seed": 3}))
        return out

    out = call(stdio_params(home), body)
    tools = out["tools"]
    assert set(tools) == EXPECTED_TOOLS  # never the desktop, never the agent's tools
    for name, tool in tools.items():
        assert bool(tool.annotations and tool.annotations.read_only_hint) == (name in READ_ONLY), name
    assert out["status"]["home"] == str(home) and out["status"]["status"] == "stopped"
    events = out["events"]["events"]
    assert 1 <= len(events) <= 5 and all(e["kind"] == "result" for e in events)
    assert out["bad_limit"].is_error and "limit must be between 1 and" in out["bad_limit"].content[0].text
    assert out["bad_kind"].is_error and "unknown event kind" in out["bad_kind"].content[0].text
    assert out["pause"].is_error and "no Conway agent is running" in out["pause"].content[0].text
    assert out["export"]["written"] >= 1 and export_to.is_file()
    assert out["export_again"].is_error and "already exists" in out["export_again"].content[0].text
    assert out["export_home"].is_error and "inside the Conway home" in out["export_home"].content[0].text
    assert out["export_relative"].is_error and "absolute path" in out["export_relative"].content[0].text
    assert not inside_home.exists()
    assert out["preflight"]["report"] == str(tmp_path / "pf.json") and out["preflight"]["exit_code"] in (0, 2)
    assert json.loads((tmp_path / "pf.json").read_text())["kind"] == "preflight"
    assert out["preflight_stdout"].is_error and "not standard output" in out["preflight_stdout"].content[0].text
    vision = out["vision"]
    assert vision["report"] == str(tmp_path / "vc.json") and vision["summary"] is not None
    assert json.loads((tmp_path / "vc.json").read_text())["kind"] == "vision-check"


@pytest.mark.slow
def test_pause_resume_stop_reach_a_running_agent(initialized_home, tmp_path):
    home = initialized_home
    script = tmp_path / "waits.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"action": {"type": "wait", "seconds": 0.5}}], "repeat": True}))
    agent = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "run", "--mock-script", str(script), "--quiet"],
                             cwd=REPO, env={**os.environ, "CONWAY_HOME": str(home)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while run_cli("status", "--json").stdout.find('"status": "running"') < 0:
            assert agent.poll() is None and time.monotonic() < deadline
            time.sleep(0.3)

        async def body(client):
            got = {}
            got["pause"] = structured(await client.call_tool("pause", {}))["answer"]
            got["paused"] = structured(await client.call_tool("status", {}))["status"]
            got["resume"] = structured(await client.call_tool("resume", {}))["answer"]
            got["stop"] = structured(await client.call_tool("stop", {}))["answer"]
            return got

        got = call(stdio_params(home), body)
        assert "pause acknowledged" in got["pause"] and got["paused"] == "paused"
        assert "resume acknowledged" in got["resume"]
        assert "stop" in got["stop"]
        assert agent.wait(timeout=60) == 0
    finally:
        if agent.poll() is None:
            agent.kill()


@pytest.mark.slow
def test_http_serves_on_loopback_only(initialized_home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "mcp-serve", "--mock", "--http", str(port)],
                              cwd=REPO, env={**os.environ, "CONWAY_HOME": str(initialized_home)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None and time.monotonic() < deadline, "mcp-serve --http did not listen"
            time.sleep(0.2)
        listening = [c.laddr for c in psutil.Process(server.pid).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN]
        assert listening and all(addr.ip == "127.0.0.1" for addr in listening)

        async def body(client):
            names = {t.name for t in (await client.list_tools()).tools}
            return names, structured(await client.call_tool("status", {}))

        names, status = call(f"http://127.0.0.1:{port}/mcp", body)
        assert names == EXPECTED_TOOLS and status["home"] == str(initialized_home)
        # a second server on the same port: one clear line, exit 1
        r = run_cli("mcp-serve", "--mock", "--http", str(port))
        assert r.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in r.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_bad_port_is_one_clear_line(initialized_home):
    r = run_cli("mcp-serve", "--mock", "--http", "70000")
    assert r.returncode == 1 and "port between 1 and 65535" in r.stderr and "Traceback" not in r.stderr
