"""Single-session tasks: criteria declared in task files, verified by Conway after the session."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conway.cli.main import main
from conway.errors import UserError
from conway.session.acceptance import acceptance_counts
from conway.store.home import resolve_home
from conway.tasks.task_file import Criterion, parse_task, verify, verify_one

REPO = Path(__file__).resolve().parents[2]


# --- parsing ---------------------------------------------------------------------

FULL = """---
title: Write the report
acceptance:
  - file_exists: out/report.txt
  - file_contains: out/report.txt
    text: "total: 42"
  - command_exits_zero: test -s out/report.txt
    timeout_s: 5
  - url_answers_200: http://127.0.0.1:8000/health
---
Write `total: 42` into out/report.txt.
"""


def test_parse_front_matter_criteria():
    spec = parse_task(FULL, "task.md")
    assert [c.kind for c in spec.criteria] == ["file_exists", "file_contains", "command_exits_zero",
                                               "url_answers_200"]
    assert spec.criteria[1].text == "total: 42" and spec.criteria[2].timeout_s == 5.0
    assert spec.body.startswith("# Write the report\n\nWrite `total: 42`")
    prompt = spec.prompt()
    assert "Acceptance criteria" in prompt and "the file out/report.txt exists" in prompt
    assert "saying DONE does not make them true" in prompt
    assert len(spec.sha256) == 64


def test_plain_task_has_no_criteria():
    spec = parse_task("Just do it.\n---\nnot front matter\n")
    assert spec.criteria == [] and spec.prompt() == "Just do it.\n---\nnot front matter\n"


@pytest.mark.parametrize("text,msg", [
    ("---\nacceptance:\n  - file_smells_nice: a.txt\n---\nDo it.\n", "unknown check kind 'file_smells_nice'"),
    ("---\nacceptance:\n  - file_contains: a.txt\n---\nDo it.\n", "needs `text:`"),
    ("---\nacceptance:\n  - url_answers_200: https://example.com/\n---\nDo it.\n", "not a local http(s) URL"),
    ("---\nacceptance:\n  - file_exists: a\n    command_exits_zero: b\n---\nDo it.\n", "several kinds"),
    ("---\nacceptance:\n  - file_exists: a\n    timeout_s: 3\n---\nDo it.\n", "does not take timeout_s"),
    ("---\nacceptance:\n  - command_exits_zero: x\n    timeout_s: -1\n---\nDo it.\n", "timeout_s must be"),
    ("---\nacceptance:\n  - file_exists: a.txt\nDo it.\n", "never closed"),
    ("---\nacceptance:\n  - file_exists: a.txt\n---\n   \n", "no task text"),
    ("---\nacceptance: [unclosed\n---\nDo it.\n", "not valid YAML"),
    ("---\naccept:\n  - file_exists: a\n---\nDo it.\n", "unknown front matter key"),
    ("---\nacceptance: file_exists\n---\nDo it.\n", "must be a list"),
    ("---\nacceptance:\n  - just text\n---\nDo it.\n", "must be a mapping"),
])
def test_parse_refusals(text, msg):
    with pytest.raises(UserError) as err:
        parse_task(text, "t.md")
    assert msg in str(err.value)


# --- verification of each kind, passing and failing ------------------------------------


@pytest.fixture
def local_http():
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(200 if self.path == "/ok" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_file_checks(tmp_path):
    (tmp_path / "a.txt").write_text("hello total: 42\n")
    (tmp_path / "dir").mkdir()
    assert verify_one(Criterion("file_exists", "a.txt"), tmp_path)[0] is True
    assert verify_one(Criterion("file_exists", str(tmp_path / "a.txt")), Path("/"))[0] is True  # absolute paths
    ok, observed = verify_one(Criterion("file_exists", "b.txt"), tmp_path)
    assert not ok and "does not exist" in observed
    assert "not a regular file" in verify_one(Criterion("file_exists", "dir"), tmp_path)[1]
    ok, observed = verify_one(Criterion("file_contains", "a.txt", text="total: 42"), tmp_path)
    assert ok and "at byte 6" in observed
    ok, observed = verify_one(Criterion("file_contains", "a.txt", text="total: 43"), tmp_path)
    assert not ok and "does not contain" in observed


def test_command_checks(tmp_path):
    py = sys.executable
    assert verify_one(Criterion("command_exits_zero", f"{py} -c 'print(1)'"), tmp_path) == \
        (True, "exit status 0; output: 1")
    ok, observed = verify_one(Criterion("command_exits_zero", f"{py} -c 'import sys; sys.exit(3)'"), tmp_path)
    assert not ok and observed.startswith("exit status 3")
    ok, observed = verify_one(Criterion("command_exits_zero", "sleep 30", timeout_s=0.5), tmp_path)
    assert not ok and "timed out after 0.5 s" in observed
    (tmp_path / "here").write_text("x")
    assert verify_one(Criterion("command_exits_zero", "test -f here"), tmp_path)[0]  # runs in the workdir


def test_url_checks(tmp_path, local_http):
    assert verify_one(Criterion("url_answers_200", local_http + "/ok"), tmp_path) == \
        (True, f"{local_http}/ok answered HTTP 200")
    ok, observed = verify_one(Criterion("url_answers_200", local_http + "/missing"), tmp_path)
    assert not ok and "HTTP 404" in observed
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ok, observed = verify_one(Criterion("url_answers_200", f"http://127.0.0.1:{port}/"), tmp_path)
    assert not ok and "not reachable" in observed


def test_verify_records_each_check(tmp_path):
    records = verify([Criterion("file_exists", "x"), Criterion("command_exits_zero", "true")], tmp_path)
    assert [r["verified"] for r in records] == [False, True]
    assert records[0]["check"] == "1. file_exists" and records[0]["spec"] == {"kind": "file_exists", "target": "x"}


# --- `conway start` end to end (mock policy, real loop and tools) --------------------------


def _task_file(tmp_path: Path, text: str, name: str = "task.md") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


TASK = """---
acceptance:
  - file_exists: result.txt
  - file_contains: result.txt
    text: "answer: 42"
  - command_exits_zero: 'grep -q "answer: 42" result.txt'
---
Put `answer: 42` into result.txt in the working directory.
"""


def _mock(tmp_path: Path, steps: list[dict]) -> Path:
    p = tmp_path / "mock.json"
    p.write_text(json.dumps(steps))
    return p


def test_start_verifies_criteria_after_the_session(tmp_path, initialized_home, capsys):
    memory_before = "# Memory\n- an old note\n"
    (initialized_home / "memory.md").write_text(memory_before)
    script = _mock(tmp_path, [
        {"action": {"type": "append_file", "path": "result.txt", "text": "answer: 42\n"}},
        {"action": {"type": "finish", "status": "DONE", "message": "written"}}])
    out = tmp_path / "session.json"
    code = main(["start", "--task-file", str(_task_file(tmp_path, TASK)), "--execute", "--mock-script", str(script),
                 "--max-steps", "5", "--output", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    s = data["summary"]
    assert s["declared"] == {"status": "DONE", "message": "written", "by": "model"}
    assert s["verified"] is True and s["verified_passed"] == 3 and s["verified_failed"] == 0
    assert data["kind"] == "session" and data["status"] == "verified"
    assert [c["verified"] for c in data["cases"]] == [True, True, True]
    assert data["parameters"]["execute"] is True and len(data["parameters"]["criteria"]) == 3
    assert "Acceptance criteria" in data["task"]
    # memory stays intact: the session wrote into its own copy
    assert (initialized_home / "memory.md").read_text() == memory_before
    session_memory = Path(s["session_memory"])
    assert session_memory.read_text().startswith(memory_before) and "step 1" in session_memory.read_text()
    printed = capsys.readouterr().out
    assert "declared by the model: DONE (written)" in printed and "3/3 criteria passed" in printed


def test_start_declared_done_but_not_done_exit_2(tmp_path, initialized_home, capsys):
    script = _mock(tmp_path, [{"action": {"type": "finish", "status": "DONE", "message": "trust me"}}])
    code = main(["start", "--task-file", str(_task_file(tmp_path, TASK)), "--execute", "--mock-script", str(script),
                 "--max-steps", "3"])
    assert code == 2
    printed = capsys.readouterr().out
    assert "declared by the model: DONE (trust me)" in printed
    assert "FAIL  the file result.txt exists" in printed and "0/3 criteria passed" in printed
    counts = acceptance_counts(resolve_home(None))
    assert counts["declared_done"] == 1 and counts["verified_failed"] == 1 and counts["verified_passed"] == 0
    # status counts declared and verified apart
    assert main(["status"]) == 0
    status = capsys.readouterr().out
    assert "declared DONE 1" in status and "verified 0 passed, 1 failed" in status
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["task_acceptance"]["declared_done"] == 1


def test_one_passing_and_one_failing_criterion_is_not_verified(tmp_path, initialized_home, capsys):
    task = _task_file(tmp_path, "---\nacceptance:\n  - file_exists: result.txt\n  - file_contains: result.txt\n"
                                "    text: \"answer: 43\"\n---\nPut the answer into result.txt.\n")
    script = _mock(tmp_path, [
        {"action": {"type": "append_file", "path": "result.txt", "text": "answer: 42\n"}},
        {"action": {"type": "finish", "status": "DONE", "message": "written"}}])
    out = tmp_path / "session.json"
    code = main(["start", "--task-file", str(task), "--execute", "--mock-script", str(script), "--max-steps", "5",
                 "--output", str(out)])
    assert code == 2
    data = json.loads(out.read_text())
    assert [c["verified"] for c in data["cases"]] == [True, False]
    assert data["summary"]["verified"] is False and data["status"] != "verified"
    assert "1/2 criteria passed" in capsys.readouterr().out
    assert acceptance_counts(resolve_home(None))["verified_failed"] == 1


def test_plan_only_runs_no_checks(tmp_path, initialized_home, capsys):
    marker = tmp_path / "check-ran"
    task = _task_file(tmp_path, f"---\nacceptance:\n  - command_exits_zero: touch {marker}\n---\nDo nothing.\n")
    script = _mock(tmp_path, [{"action": {"type": "finish", "status": "DONE"}}])
    out = tmp_path / "plan.json"
    code = main(["start", "--task-file", str(task), "--mock-script", str(script), "--max-steps", "2",
                 "--output", str(out)])
    assert code == 0 and not marker.exists()
    data = json.loads(out.read_text())
    assert data["summary"]["verified"] is None and data["summary"]["executed"] is False
    assert "plan only" in capsys.readouterr().out
    assert acceptance_counts(resolve_home(None))["not_verified"] == 1


def test_inline_task_without_criteria(tmp_path, initialized_home, capsys):
    script = _mock(tmp_path, [{"action": {"type": "finish", "status": "FAIL", "message": "cannot"}}])
    code = main(["start", "--task", "Say hello", "--execute", "--mock-script", str(script), "--max-steps", "2"])
    assert code == 0
    out = capsys.readouterr().out
    assert "declared by the model: FAIL (cannot)" in out and "declared no acceptance criteria" in out


# --- bad input: clear message, exit 1 ------------------------------------------------------


@pytest.mark.parametrize("content,msg", [
    (None, "does not exist"),
    (b"", "is empty"),
    (b"   \n\n", "is empty"),
    ("caf\u00e9 t\u00e2che".encode("latin-1"), "is not UTF-8"),
    (b"---\nacceptance:\n  - teleport: here\n---\nDo it.\n", "unknown check kind 'teleport'"),
])
def test_start_bad_task_files(tmp_path, initialized_home, capsys, content, msg):
    path = tmp_path / "bad.md"
    if content is not None:
        path.write_bytes(content)
    code = main(["start", "--task-file", str(path), "--execute", "--mock", "--max-steps", "1"])
    assert code == 1
    assert msg in capsys.readouterr().err
    assert not (initialized_home / "state.json").exists()  # refused before any session started


def test_execute_without_a_task_refused(initialized_home, capsys):
    assert main(["start", "--execute", "--mock", "--max-steps", "1"]) == 1
    assert "--execute needs a task" in capsys.readouterr().err


def test_session_report_path_refused(tmp_path, initialized_home, capsys):
    out = initialized_home / "r.json"
    assert main(["start", "--task", "x", "--mock", "--max-steps", "1", "--output", str(out)]) == 1
    assert "inside the Conway home" in capsys.readouterr().err


def test_example_task_files_parse():
    for path in sorted((REPO / "evals" / "tasks").glob("*.md")):
        spec = parse_task(path.read_text(encoding="utf-8"), str(path))
        assert spec.body.strip()


def test_run_does_not_take_a_task(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--task", "x"])
    assert exc.value.code == 1


def test_example_run_a_script_end_to_end(tmp_path, initialized_home):
    program = "for i in range(1, 11):\n    print(i * i)\n"
    script = _mock(tmp_path, [
        {"action": {"type": "append_file", "path": "squares.py", "text": program}},
        {"action": {"type": "shell", "command": "python3 squares.py"}},
        {"action": {"type": "finish", "status": "DONE"}}])
    out = tmp_path / "squares.json"
    code = main(["start", "--task-file", str(REPO / "evals" / "tasks" / "run-a-script.md"), "--execute",
                 "--mock-script", str(script), "--max-steps", "5", "--output", str(out)])
    data = json.loads(out.read_text())
    assert code == 0 and data["summary"]["verified"] is True and data["summary"]["verified_passed"] == 3


def test_example_disposable_note_end_to_end(tmp_path, initialized_home):
    script = _mock(tmp_path, [
        {"action": {"type": "shell", "command": "mkdir -p notes"}},
        {"action": {"type": "append_file", "path": "notes/disposable.md",
                    "text": "# Disposable note\nchecked by Conway\n"}},
        {"action": {"type": "finish", "status": "DONE"}}])
    code = main(["start", "--task-file", str(REPO / "evals" / "tasks" / "disposable-note.md"), "--execute",
                 "--mock-script", str(script), "--max-steps", "5"])
    assert code == 0
