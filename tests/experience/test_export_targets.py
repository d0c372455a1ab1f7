"""`export --style F` keeps every step record; a step with no form in family F loses only its target turn
(counted), and an export that writes no target turn at all exits non-zero."""

from __future__ import annotations

import json

from helpers.loop_harness import ArchivingObserver, run_script

from conway.cli.main import main


def test_steps_without_a_uitars_form_keep_their_records(initialized_home, tmp_path, capsys):
    run_script([{"action": {"type": "list_dir", "path": "."}}, {"action": {"type": "list_dir", "path": ".."}}],
               overrides=["agent.max_steps=2"])
    out = tmp_path / "traj.jsonl"
    assert main(["export", "--style", "uitars", "--output", str(out)]) == 2
    captured = capsys.readouterr()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2] and all("target" not in r for r in records)
    assert "left out the target turn of 2 step(s) with no uitars rendering" in captured.out
    assert "no step has a uitars target turn" in captured.err
    assert main(["export", "--style", "generic", "--output", str(tmp_path / "generic.jsonl")]) == 0
    assert all("target" in json.loads(line) for line in (tmp_path / "generic.jsonl").read_text().splitlines())


def test_an_export_with_no_step_to_write_is_refused(initialized_home, tmp_path, capsys):
    run_script([{"action": {"type": "list_dir", "path": "."}}], overrides=["agent.max_steps=1"], dry_run=True)
    out = tmp_path / "traj.jsonl"
    assert main(["export", "--output", str(out)]) == 1
    assert "nothing to export" in capsys.readouterr().err and not out.exists()


def test_exports_are_private_like_reports(initialized_home, tmp_path):
    import stat

    import pytest
    pytest.importorskip("datasets")
    run_script([{"action": {"type": "list_dir", "path": "."}}], overrides=["agent.max_steps=1"],
               observer=ArchivingObserver(initialized_home))
    assert main(["export", "--output", str(tmp_path / "traj.jsonl")]) == 0
    assert stat.S_IMODE((tmp_path / "traj.jsonl").stat().st_mode) == 0o600
    assert main(["export", "--format", "hf", "--output", str(tmp_path / "ds")]) == 0
    files = [p for p in (tmp_path / "ds").rglob("*") if p.is_file()]
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
