"""Faults no budget used to end, provoked against real `conway` processes on one home.

    python -m scripts.reliability.prove_reliability faults --stops 20

- **stop during start-up**: `conway stop` sent at a random instant (0–1.5 s) after a `conway run` is
  launched (resent while no run holds the lock yet). The stop must reach the run that holds the lock:
  the session and pid it names are the run's own, and the run ends `stop requested` within 20 s.
- **a FIFO where a file is expected**: `state.json` replaced by a FIFO (`status` and `run` must finish),
  and a FIFO in `scratch/` that the model asks to read and edit (refused: "not a regular file").
- **a trickling and an endless model answer**: a server that sends its body a byte at a time, or never
  ends it; `policy.request_timeout_s` (2 s) must bound the whole answer: the first `timeout` error is
  journaled within the limit plus 10 s of start-up.
- **an oversized MCP result**: a real stdio MCP server (tests/fixtures/mcp_server.py) whose tool appends
  a line and answers with 50 MB; the run must record a certain, cut result (no `uncertain`), do the
  effect once, go on to its next step and end by itself.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from scripts.reliability.common import Check, ProofResult, Violations, child_env, conway_argv

REPO = Path(__file__).resolve().parents[2]
MCP_FIXTURE = REPO / "tests" / "fixtures" / "mcp_server.py"
BIG_LINES = 4_200_000
"""Lines of the oversized answer: 12 bytes each, past 50 MB."""
LIMIT_S = 60.0
"""Any command here that takes longer is hung (they take a few seconds)."""
REQUEST_TIMEOUT_S = 2.0
NAMED = re.compile(r"session (\S+) \(pid (\d+)\)")


def _conway(home: Path, *args: str, timeout: float = LIMIT_S) -> subprocess.CompletedProcess | None:
    """A `conway` command on `home`; None when it did not finish within `timeout` (killed)."""
    try:
        return subprocess.run(conway_argv("--home", str(home), *args), env=child_env(), capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


def _events(home: Path) -> list[dict[str, Any]]:
    out = []
    from conway.store.journal import journal_data

    for path in sorted((home / "journal").glob("*.jsonl")):
        for line in journal_data(path).decode("utf-8", errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def stops_in_start_up(home: Path, stops: int, rng: random.Random, bad: Violations) -> None:
    for n in range(stops):
        delay = rng.uniform(0.0, 1.5)
        agent = subprocess.Popen(conway_argv("--home", str(home), "run", "--mock", "--quiet", "--max-seconds", "120"),
                                 env=child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        where = f"stop {n + 1}, sent {delay:.2f} s after launch"
        try:
            time.sleep(delay)
            said, deadline = "", time.monotonic() + LIMIT_S
            while time.monotonic() < deadline and agent.poll() is None:
                done = _conway(home, "stop")
                said = (done.stdout + done.stderr) if done else ""
                if done and done.returncode == 0:
                    break
                time.sleep(0.2)  # no run holds the lock yet: send it again
            try:
                agent.wait(timeout=20)
            except subprocess.TimeoutExpired:
                bad.add("start-up stop", f"{where}: the run kept going 20 s after `conway stop` said {said!r}")
                continue
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
        state = json.loads((home / "state.json").read_text(encoding="utf-8"))
        named = NAMED.search(said)
        if named is None or named.group(1) != state.get("session") or int(named.group(2)) != agent.pid:
            bad.add("start-up stop", f"{where}: `conway stop` said {said.strip()!r}; the run was session "
                                     f"{state.get('session')} (pid {agent.pid})")
        elif state.get("stop_reason") != "stop requested":
            bad.add("start-up stop", f"{where}: the run ended {state.get('stop_reason')!r}, not by the stop")


def fifos(home: Path, bad: Violations) -> None:
    state = home / "state.json"
    state.unlink(missing_ok=True)
    os.mkfifo(state)
    try:
        for args in (("status",), ("run", "--mock", "--max-steps", "1", "--quiet")):
            if _conway(home, *args) is None:
                bad.add("fifo", f"`conway {' '.join(args)}` with state.json a FIFO did not finish in {LIMIT_S:g} s")
    finally:
        _release(state)
        if state.exists() and not state.is_file():
            state.unlink()
    pipe = home / "scratch" / "pipe"
    pipe.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(pipe)
    script = home.parent / "fifo-script.json"
    script.write_text(json.dumps([{"action": {"type": "read_file", "path": "pipe"}},
                                  {"action": {"type": "replace_text", "path": "pipe", "old": "a", "new": "b"}}]))
    try:
        done = _conway(home, "run", "--mock-script", str(script), "--max-steps", "2", "--quiet")
    finally:
        _release(pipe)
        pipe.unlink(missing_ok=True)
    if done is None:
        bad.add("fifo", f"read_file/replace_text on a FIFO in scratch/ did not end in {LIMIT_S:g} s")
        return
    refused = [e for e in _events(home) if e.get("kind") == "error"
               and "not a regular file" in json.dumps(e.get("payload"))]
    if len(refused) < 2:
        bad.add("fifo", f"read_file/replace_text on a FIFO were not refused as 'not a regular file' ({done.stderr!r})")


def _release(fifo: Path) -> None:
    """Let a reader stuck in open() on `fifo` go, so no process is left behind."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def _slow_server(endless: bool) -> ThreadingHTTPServer:
    body = json.dumps({"id": "x", "object": "chat.completion", "model": "slow", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x" * 400}}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            data = json.dumps({"object": "list", "data": [{"id": "slow", "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if not endless:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for i in range(10**9 if endless else len(body)):
                    self.wfile.write(b" " if endless else body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def slow_answers(root: Path, bad: Violations) -> dict[str, float | None]:
    took: dict[str, float | None] = {}
    for endless in (False, True):
        what = "endless" if endless else "trickling"
        home = root / f"slow-{what}"
        _conway(home, "init")
        server = _slow_server(endless)
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/v1"
            done = _conway(home, "run", "--endpoint", url, "--quiet", "--max-seconds", "8", "policy=generic",
                           "policy.structured_output=none", f"policy.request_timeout_s={REQUEST_TIMEOUT_S:g}",
                           "observe.source=synthetic", "tools.enabled=[files]")
        finally:
            server.shutdown()
        events = _events(home)
        start = next((e["t"] for e in events if e.get("kind") == "session"), None)
        first = next((e["t"] for e in events if e.get("kind") == "error"
                      and (e.get("payload") or {}).get("cause") == "timeout"), None)
        took[what] = round(first - start, 2) if start is not None and first is not None else None
        if done is None:
            bad.add("slow answer", f"a {what} answer: `conway run --max-seconds 8` did not end in {LIMIT_S:g} s")
        elif took[what] is None or took[what] > REQUEST_TIMEOUT_S + 10:
            bad.add("slow answer", f"a {what} answer: the first timeout came {took[what]} s after the session "
                                   f"began (request_timeout_s {REQUEST_TIMEOUT_S:g})")
    return took


def oversized_mcp_result(root: Path, bad: Violations) -> int | None:
    """One run whose MCP tool answers past 50 MB; returns the answer's size as the result recorded it."""
    import sys

    import yaml

    home = root / "mcp-big"
    _conway(home, "init")
    server = {"name": "fx", "command": sys.executable, "args": [str(MCP_FIXTURE)], "startup_timeout_s": 30,
              "timeout_s": 120}
    (home / "config.yaml").write_text(yaml.safe_dump({"tools": {"mcp_servers": [server]}}), encoding="utf-8")
    effect = root / "mcp-big-effect.txt"
    call = {"type": "mcp", "server": "fx", "tool": "append_big", "arguments": {"path": str(effect), "n": BIG_LINES}}
    script = root / "mcp-big.jsonl"
    script.write_text(json.dumps({"action": call}) + "\n" + json.dumps(
        {"action": {"type": "list_dir", "path": "."}}) + "\n", encoding="utf-8")
    done = _conway(home, "run", "--quiet", "--mock-script", str(script), "--max-steps", "2", timeout=240)
    events = _events(home)
    results = [e.get("payload") or {} for e in events if e.get("kind") == "result"]
    if done is None:
        bad.add("mcp result", "a run whose MCP tool answers 50 MB did not end in 240 s")
    elif done.returncode != 0:
        bad.add("mcp result", f"the run exited {done.returncode}: {done.stderr.strip()[-300:]}")
    if any(e.get("kind") == "uncertain" for e in events):
        bad.add("mcp result", "the oversized answer was recorded uncertain (its effect had happened)")
    if not effect.exists() or effect.read_text() != "appended\n":
        bad.add("mcp result", "the tool's effect did not happen exactly once")
    first = results[0] if results else {}
    if not (first.get("ok") and first.get("truncated")) or len(results) < 2:
        bad.add("mcp result", f"expected a cut, successful result and the next step's; got {len(results)} "
                              f"result(s), the first {str(first)[:200]}")
    size = (first.get("data") or {}).get("answer_bytes")
    return size if isinstance(size, int) else None


def prove(stops: int, seed: int, say: Callable[[str], None]) -> ProofResult:
    started = time.monotonic()
    bad = Violations()
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="conway-faults-") as tmp:
        root = Path(tmp)
        home = root / "home"
        if _conway(home, "init") is None:
            raise RuntimeError("`conway init` did not finish")
        say(f"  {stops} stops at random instants of start-up")
        stops_in_start_up(home, stops, rng, bad)
        say("  FIFOs where files are expected")
        fifos(home, bad)
        say("  a trickling and an endless model answer")
        took = slow_answers(root, bad)
        say("  an MCP tool answering 50 MB")
        answer_bytes = oversized_mcp_result(root, bad)
    checks: list[Check] = [
        bad.zero_check("start-up stop", "stop during start-up reaches the run holding the lock"),
        bad.zero_check("fifo", "a FIFO where a file is expected hangs nothing"),
        bad.zero_check("slow answer", "request_timeout_s bounds a trickling or endless answer"),
        bad.zero_check("mcp result", "an oversized MCP answer is a certain, cut result and the run goes on"),
    ]
    return ProofResult(proof="faults", params={"stops": stops, "seed": seed},
                       figures={"stops": stops, "first_timeout_s": took, "mcp_answer_bytes": answer_bytes}, checks=checks,
                       seconds=time.monotonic() - started)
