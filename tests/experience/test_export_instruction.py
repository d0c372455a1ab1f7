"""Exports carry the instruction (issue 10, item 10): each step's record, and each `--format hf` row, holds
the goals / task text the model saw at that step (the loop journals it whenever it changes)."""

from __future__ import annotations

import json

import pytest
from helpers.loop_harness import ArchivingObserver, run_script

from conway.cli.main import main


def test_jsonl_records_carry_the_goals_and_follow_a_change(conway_home, tmp_path):
    steps = [{"action": {"type": "list_dir", "path": "."}}, {"action": {"type": "list_dir", "path": "."}}]
    run = run_script(steps, overrides=["agent.max_steps=1"])
    (run.home.goals).write_text("# Goals\nTidy the inbox.\n")
    run_script(steps[:1], overrides=["agent.max_steps=1"])
    out = tmp_path / "traj.jsonl"
    assert main(["export", "--output", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2
    assert records[0]["instruction"] and "Tidy the inbox" not in records[0]["instruction"]
    assert "Tidy the inbox." in records[1]["instruction"]


def test_a_task_session_s_instruction_is_the_task(initialized_home, tmp_path):
    script = tmp_path / "mock.json"
    script.write_text(json.dumps([{"action": {"type": "finish", "status": "DONE", "message": "ok"}}]))
    assert main(["start", "--task", "Rename report.txt to final.txt", "--execute", "--mock-script", str(script),
                 "--max-steps", "2"]) == 0
    out = tmp_path / "traj.jsonl"
    assert main(["export", "--output", str(out)]) == 0
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["instruction"].startswith("Task for this session:\nRename report.txt to final.txt")


def test_hf_rows_carry_the_instruction(initialized_home, tmp_path):
    pytest.importorskip("datasets", reason="--format hf needs the train extra (datasets)")
    run_script([{"action": {"type": "list_dir", "path": "."}}], overrides=["agent.max_steps=1"],
               observer=ArchivingObserver(initialized_home))
    out = tmp_path / "hf"
    code = main(["export", "--output", str(out), "--format", "hf", "--skip-missing"])
    assert code == 0
    from datasets import load_from_disk
    rows = load_from_disk(str(out))
    assert len(rows) == 1
    assert all(r["instruction"] and "Goals" in r["instruction"] for r in rows)


def test_hf_export_with_no_row_to_write_is_refused(initialized_home, tmp_path, capsys):
    pytest.importorskip("datasets", reason="--format hf needs the train extra (datasets)")
    run_script([{"action": {"type": "list_dir", "path": "."}}], overrides=["agent.max_steps=1"])  # no screenshot
    out = tmp_path / "hf"
    assert main(["export", "--output", str(out), "--format", "hf"]) != 0
    assert "nothing to write" in capsys.readouterr().err and not out.exists()
