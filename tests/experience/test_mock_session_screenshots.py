"""A quick-start mock session keeps its screenshots like a screen session, so the viewer, `export --format hf`
and `replay` can use its steps."""

from __future__ import annotations

import json

from conway.cli.main import main


def test_a_mock_session_keeps_the_frames_its_steps_name(initialized_home, tmp_path):
    assert main(["run", "--mock", "--max-steps", "3"]) == 0
    shots = sorted((initialized_home / "screenshots").glob("*.png"))
    assert len(shots) == 1  # one unchanged synthetic frame, kept once
    traj = tmp_path / "t.jsonl"
    assert main(["export", "--output", str(traj)]) == 0
    recs = [json.loads(line) for line in traj.read_text().splitlines()]
    assert len(recs) == 3
    for rec in recs:
        named = rec["observation"]["screenshot"]
        assert named and (initialized_home / named).resolve() == shots[0].resolve()
        assert not rec["observation"].get("image_missing")


def test_keep_screenshots_0_keeps_none_for_a_mock_session_too(initialized_home):
    assert main(["run", "--mock", "--max-steps", "2", "observe.keep_screenshots=0"]) == 0
    assert not list((initialized_home / "screenshots").glob("*"))
