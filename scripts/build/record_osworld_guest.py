"""Record OSWorld's unmodified guest server answering Conway's `osworld` provider, for the replay test.

    python -m scripts.build.record_osworld_guest --osworld ~/src/OSWorld --python PY [--pythonpath DIR] \\
        --out tests/data/osworld_guest

Run where a copy of OSWorld's repository is at hand (its `desktop_env/server/main.py` is run as it is, by
Flask's own runner, `python -m flask --app main run`: the file is not changed, nor copied into Conway). `PY`
must import what the server imports (flask, pyautogui, python-xlib, lxml, requests, Pillow, pyatspi: on Debian
`apt-get install python3-pyatspi scrot`, Flask with pip) and be on the guest's PATH as `python`, as on OSWorld's
VM; scrot stands in for the VM's gnome-screenshot under pyautogui.

For each task of `SUITE` (default: the two below, written here) and each of its scripts (pass, fail), the
builder starts a private Xvfb and the server on it with a home of its own, puts a recording proxy of Conway's
writing between Conway and the server, runs `conway tasks run --desktop-url PROXY` with the scripted policy,
and writes every request and answer (bodies base64) with the run's score into `OUT/<task>-<script>.json`,
naming the server's commit. Nothing the server answers is trusted by the builder: it only stores it.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from scripts.build.guest_http import LoopbackServer

REPO = Path(__file__).resolve().parents[2]
SERVER = Path("desktop_env") / "server"

TASKS: dict[str, dict[str, Any]] = {
    "guest-terminal-writes": {
        "id": "guest-terminal-writes",
        "instruction": "A terminal is open. Write the word guest-ok into the file done.txt in the home folder.",
        "config": [{"type": "launch", "parameters": {"command": ["lxterminal"]}},
                   {"type": "sleep", "parameters": {"seconds": 3}},
                   {"type": "activate_window", "parameters": {"window_name": "lxterminal", "by_class": True}}],
        "related_apps": ["os"],
        "evaluator": {"func": "check_include_exclude",
                      "result": {"type": "vm_command_line", "command": "cat ~/done.txt", "shell": True},
                      "expected": {"type": "rule", "rules": {"include": ["guest-ok"], "exclude": ["No such file"]}}},
    },
    "guest-file-uploaded": {
        "id": "guest-file-uploaded",
        "instruction": "Nothing to change: the notes file is already in place. Say you are done.",
        "config": [{"type": "execute", "parameters": {"command": "mkdir -p ~/Documents", "shell": True}},
                   {"type": "download", "parameters": {"files": [
                       {"url": "https://example.org/conway/notes.txt", "path": "~/Documents/notes.txt"}]}}],
        "related_apps": ["os"],
        "evaluator": {"func": "check_include_exclude",
                      "result": {"type": "vm_command_line", "command": "cat ~/Documents/notes.txt", "shell": True},
                      "expected": {"type": "rule", "rules": {"include": ["uploaded by setup"], "exclude": []}}},
    },
}
SCRIPTS = {
    "guest-terminal-writes": {
        "pass": "- action:\n    type: type\n    text: \"echo guest-ok > ~/done.txt\\n\"\n"
                "- action:\n    type: finish\n    status: DONE\n",
        "fail": "- action:\n    type: finish\n    status: DONE\n"},
    "guest-file-uploaded": {"pass": "- action:\n    type: finish\n    status: DONE\n"},
}
CACHED = {("guest-file-uploaded", "https://example.org/conway/notes.txt", "~/Documents/notes.txt"):
          "the notes, uploaded by setup\n"}


class Recorder:
    """A proxy of Conway's writing: forwards each request to the server and keeps both sides."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.exchanges: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._forward)
        self.url = self._server.url

    def _forward(self, method: str, path: str, given: Any, body: bytes) -> tuple[int, str, bytes]:
        headers = {k: v for k, v in given.items() if k.lower() == "content-type"}
        req = urllib.request.Request(self.upstream + path, data=body if method == "POST" else None,
                                     headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=1900) as r:
                status, rtype, out = r.status, r.headers.get("Content-Type", ""), r.read()
        except urllib.error.HTTPError as e:
            status, rtype, out = e.code, e.headers.get("Content-Type", ""), e.read()
        with self._lock:
            self.exchanges.append({
                "method": method, "path": path, "request_type": headers.get("Content-Type", ""),
                "request": base64.b64encode(body).decode(), "status": status, "response_type": rtype,
                "response": base64.b64encode(out).decode()})
        return status, rtype, out

    def close(self) -> None:
        self._server.close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/screenshot", timeout=5) as r:
                if r.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"the guest server did not answer /screenshot within {seconds:g} s")


def record_one(args: argparse.Namespace, task_id: str, script: str, work: Path) -> dict[str, Any]:
    from conway.machine.xvfb import start_xvfb
    from conway.tasks.cache import download_path

    home, bin_dir, cache = work / "guest-home", work / "guest-bin", work / "cache"
    for d in (home, bin_dir, cache):
        d.mkdir(parents=True)
    (home / ".Xauthority").touch()
    launcher = bin_dir / "python"  # OSWorld's VM runs actions with `python` (a script: a venv's link would
    launcher.write_text(f'#!/bin/sh\nexec "{args.python}" "$@"\n')  # lose its site-packages)
    launcher.chmod(0o755)
    for (tid, url, dest), text in CACHED.items():
        if tid == task_id:
            path = download_path(cache, tid, url, dest)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    x = start_xvfb(1280, 800)
    port = free_port()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home), "DISPLAY": x.display, "XDG_SESSION_TYPE": "x11",
           "XAUTHORITY": str(home / ".Xauthority"), "LANG": "C.UTF-8",
           "PYTHONPATH": os.pathsep.join([str(Path(args.osworld) / SERVER), *args.pythonpath])}
    server = subprocess.Popen([args.python, "-m", "flask", "--app", "main", "run", "--host", "127.0.0.1",
                               "--port", str(port)], cwd=home, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    recorder = None
    try:
        wait_for(f"http://127.0.0.1:{port}", 30)
        recorder = Recorder(f"http://127.0.0.1:{port}")
        suite, scripts = work / "suite", work / "scripts"
        suite.mkdir()
        scripts.mkdir()
        (suite / f"{task_id}.json").write_text(json.dumps(TASKS[task_id]))
        (scripts / f"{task_id}.yaml").write_text(SCRIPTS[task_id][script])
        out = work / "report.json"
        done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(work / "conway-home"), "tasks",
                               "run", str(suite), "tasks.wait_after_setup_s=2", "tasks.settle_before_eval_s=1",
                               "--desktop-url", recorder.url, "--mock-scripts", str(scripts), "--cache", str(cache),
                               "--output", str(out)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              capture_output=True, text=True, timeout=600)
        if not out.is_file():
            raise SystemExit(f"tasks run wrote no report: {done.stderr.strip()[-400:]}")
        case = json.loads(out.read_text())["cases"][0]
        return {"schema": "conway-osworld-guest-recording/1", "task": TASKS[task_id], "script": script,
                "mock_script": SCRIPTS[task_id][script], "cached": [{"url": u, "path": d, "text": t}
                                                                    for (tid, u, d), t in CACHED.items()
                                                                    if tid == task_id],
                "server": {"repository": args.repository, "commit": args.commit, "file": str(SERVER / "main.py"),
                           "runner": "python -m flask --app main run (the file unmodified)"},
                "score": case.get("score"), "outcome": case.get("outcome"),
                "exchanges": recorder.exchanges}
    finally:
        if recorder is not None:
            recorder.close()
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        subprocess.run(["pkill", "-KILL", "-s", str(server.pid)], capture_output=True)  # what it launched (its session)
        x.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--osworld", required=True, help="a checkout of OSWorld's repository (its guest server is run)")
    ap.add_argument("--python", required=True, help="an interpreter with the server's imports")
    ap.add_argument("--pythonpath", action="append", default=[], help="more folders for the server's imports")
    ap.add_argument("--out", default=str(REPO / "tests" / "data" / "osworld_guest"))
    ap.add_argument("--repository", default="ljxpython/OSWorldUse")
    args = ap.parse_args(argv)
    if not (Path(args.osworld) / SERVER / "main.py").is_file():
        raise SystemExit(f"{args.osworld} has no {SERVER / 'main.py'}")
    args.commit = subprocess.run(["git", "-C", args.osworld, "rev-parse", "HEAD"], capture_output=True,
                                 text=True).stdout.strip() or None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for task_id, scripts in SCRIPTS.items():
        for script in scripts:
            work = Path(tempfile.mkdtemp(prefix="conway-record-"))
            try:
                rec = record_one(args, task_id, script, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            (out / f"{task_id}-{script}.json").write_text(json.dumps(rec, indent=1) + "\n")
            print(f"{task_id} ({script}): score {rec['score']}, {len(rec['exchanges'])} exchanges")
    return 0


if __name__ == "__main__":
    sys.exit(main())
