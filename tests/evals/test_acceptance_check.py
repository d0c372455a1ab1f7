"""acceptance-check: verified by Conway's own checks, never by the model's finish.

The "model" is the offline mock policy with a script written for the seed's
tasks (names and contents are reproducible from the seed), driven through the
real loop, tools and CLI.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
from pathlib import Path

import pytest

from conway.cli.main import main
from conway.evals.acceptance_check import make_tasks

SEED = 7


def _script(tmp_path: Path, steps: list[dict], name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(steps))
    return path


def _worker_steps(seed: int = SEED) -> list[dict]:
    t = make_tasks(seed)
    py = shlex.quote(sys.executable)
    return [
        {"action": {"type": "append_file", "path": t.note_name, "text": t.note_content}},
        {"action": {"type": "read_file", "path": t.note_name}},
        {"action": {"type": "finish", "status": "DONE", "message": "written and read back"}},
        {"action": {"type": "shell", "command": f"cp {t.program_source} {t.program_copy}"}},
        {"action": {"type": "shell", "command": f"{py} {t.program_copy}"}},
        {"action": {"type": "finish", "status": "DONE", "message": "the copy ran"}},
    ]


def _check(tmp_path: Path, script: Path, *extra: str, name: str = "acc.json") -> tuple[int, dict]:
    out = tmp_path / name
    code = main(["acceptance-check", "--mock-script", str(script), "--seed", str(SEED), "--max-steps", "6",
                 "--output", str(out), *extra])
    return code, (json.loads(out.read_text()) if out.exists() else {})


def test_tasks_are_reproducible_from_the_seed():
    a, b, c = make_tasks(1), make_tasks(1), make_tasks(2)
    assert a == b and a != c
    assert a.note_name.startswith("note-") and a.note_content in a.file_task()
    assert a.program_source in a.program_task() and a.program_copy in a.program_task()


def test_a_model_that_does_the_work_is_verified(tmp_path, capsys):
    code, data = _check(tmp_path, _script(tmp_path, _worker_steps()))
    assert code == 0
    cases = {c["check"]: c for c in data["cases"]}
    assert set(cases) == {"file_roundtrip", "program_launch"}
    for c in cases.values():
        assert c["verified"] is True
        assert c["declared"]["status"] == "DONE" and c["declared"]["by"] == "model"
        assert c["stop_reason"] == "finish DONE"
    assert cases["file_roundtrip"]["details"]["exact"] is True
    assert cases["file_roundtrip"]["details"]["read_back_in_record"] is True
    assert "marker names the copy" in cases["program_launch"]["observed"]
    assert data["summary"]["verified_passed"] == 2 and data["summary"]["declared"]["DONE"] == 2
    assert data["seed"] == SEED and data["model_id"] == "conway-mock" and data["kind"] == "acceptance-check"
    assert data["parameters"]["tools"] == ["files", "shell"] and data["parameters"]["desktop"] is False
    assert any(a.startswith("shell(") for a in cases["program_launch"]["actions"])
    out = capsys.readouterr().out
    assert "2/2 verified" in out


def test_a_model_that_claims_done_without_doing_it_fails_exit_2(tmp_path, capsys):
    lazy = [{"action": {"type": "finish", "status": "DONE", "message": "all done!"}}] * 2
    code, data = _check(tmp_path, _script(tmp_path, lazy))
    assert code == 2
    for c in data["cases"]:
        assert c["declared"]["status"] == "DONE"  # what the model said ...
        assert c["verified"] is False  # ... and what Conway found, apart
    s = data["summary"]
    assert s["declared"]["DONE"] == 2 and s["verified_passed"] == 0 and s["declared_done_but_not_verified"] == 2
    assert "does not exist" in data["cases"][0]["observed"]
    assert "the copy was not launched" in data["cases"][1]["observed"]
    capsys.readouterr()
    assert main(["report", str(tmp_path / "acc.json")]) == 0
    table = capsys.readouterr().out
    assert "declared by the model: DONE 2" in table and "0 passed, 2 failed" in table


def test_work_done_without_a_finish_is_still_verified(tmp_path):
    steps = _worker_steps()[:2]  # write and read back, no finish: the session ends on its step budget
    code, data = _check(tmp_path, _script(tmp_path, steps), "--max-steps", "2", "agent.idle_backoff_start_s=0.01",
                        name="first.json")
    case = data["cases"][0]
    assert case["verified"] is True and case["declared"] is None
    assert case["stop_reason"].startswith("max-steps")
    assert code == 2  # the second task got no work done


def test_wrong_content_and_running_the_original_are_caught(tmp_path):
    t = make_tasks(SEED)
    py = shlex.quote(sys.executable)
    steps = [
        {"action": {"type": "append_file", "path": t.note_name, "text": "something else"}},
        {"action": {"type": "read_file", "path": t.note_name}},
        {"action": {"type": "finish", "status": "DONE"}},
        {"action": {"type": "shell", "command": f"cp {t.program_source} {t.program_copy}"}},
        {"action": {"type": "shell", "command": f"{py} {t.program_source}"}},
        {"action": {"type": "finish", "status": "DONE"}},
    ]
    code, data = _check(tmp_path, _script(tmp_path, steps))
    assert code == 2
    file_case, prog_case = data["cases"]
    assert file_case["verified"] is False and "not the expected text" in file_case["observed"]
    assert prog_case["verified"] is False and "the original was run instead" in prog_case["observed"]


def test_no_recursive_agents(tmp_path):
    """A nested `conway run` from the shell meets the session's own lock and is refused."""
    t = make_tasks(SEED)
    nested = f"{shlex.quote(sys.executable)} -m conway.cli.main run --mock --max-steps 1"
    steps = [{"action": {"type": "shell", "command": nested}},
             {"action": {"type": "finish", "status": "FAIL", "message": "stopping"}},
             {"action": {"type": "finish", "status": "FAIL"}}]
    code, data = _check(tmp_path, _script(tmp_path, steps), "--keep")
    assert code == 2
    log = " ".join(data["cases"][0]["actions"])
    assert "another Conway agent is running" in log
    kept = Path(data["parameters"]["kept_tempdir"])
    assert kept.is_dir() and not (kept / "file_roundtrip" / "work" / t.note_name).exists()
    assert data["cases"][0]["declared"]["status"] == "FAIL"


def test_temporary_directories_are_removed(tmp_path, monkeypatch):
    import tempfile
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    code, _ = _check(tmp_path, _script(tmp_path, _worker_steps()))
    assert code == 0 and list(scratch.iterdir()) == []


def test_unreachable_model_is_a_setup_error_exit_1(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "acc.json"
    code = main(["acceptance-check", "--endpoint", f"http://127.0.0.1:{port}/v1", "policy=generic",
                 "--output", str(out)])
    assert code == 1 and not out.exists()
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


@pytest.mark.parametrize("args,msg", [
    (["--max-steps", "0"], "--max-steps must be positive"),
    (["--max-seconds", "-1"], "--max-seconds must be positive"),
])
def test_bad_budgets(tmp_path, capsys, args, msg):
    assert main(["acceptance-check", "--mock", "--output", str(tmp_path / "a.json"), *args]) == 1
    assert msg in capsys.readouterr().err


def test_output_exists_or_in_home_refused(tmp_path, conway_home, capsys):
    out = tmp_path / "a.json"
    out.write_text("x")
    assert main(["acceptance-check", "--mock", "--output", str(out)]) == 1
    assert "already exists" in capsys.readouterr().err
    conway_home.mkdir(parents=True)
    assert main(["acceptance-check", "--mock", "--output", str(conway_home / "a.json")]) == 1
    assert "inside the Conway home" in capsys.readouterr().err


TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-vlm"


@pytest.mark.llama
@pytest.mark.slow
def test_real_tiny_vlm_through_the_loop_is_scored_honestly(tmp_path):
    """The random-weight VLM cannot do the work: whatever it declares, nothing is verified."""
    import importlib.util
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed ('.[llama]')")
    if not (TINY / "tiny-vlm.gguf").exists():
        pytest.skip("tiny VLM fixtures are missing (scripts/build/build_tiny_vlm.py)")
    out = tmp_path / "tiny.json"
    code = main(["acceptance-check", "--seed", "1", "--max-steps", "2", "--output", str(out), "policy=generic",
                 f"policy.model_path={TINY / 'tiny-vlm.gguf'}", f"policy.mmproj_path={TINY / 'tiny-vlm-mmproj.gguf'}",
                 "policy.max_tokens=32", "agent.recovery_backoff_start_s=0.05", "agent.idle_backoff_start_s=0.05"])
    data = json.loads(out.read_text())
    assert data["model_id"] == "tiny-vlm"
    # 32 tokens never hold a whole answer: every step is "cut off", so no valid decision ever came (exit 3)
    assert code == (3 if data["summary"]["valid_decisions"] == 0 else 2)
    if code == 3:
        assert data["status"] == "no valid decision" and set(data["summary"]["model_errors"]) <= {
            "cut off", "unparseable", "invalid action"}
    for case in data["cases"]:
        assert case["verified"] is False and 1 <= case["steps"] <= 2
        assert case["stop_reason"].startswith("max-steps") or case["stop_reason"].startswith("finish")
    assert data["summary"]["verified_passed"] == 0
