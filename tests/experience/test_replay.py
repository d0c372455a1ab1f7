"""Offline replay: recorded steps → a policy's decisions, scored against labels; nothing is executed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from conway.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "export"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "recorded"
    shutil.copytree(DATA / "home", home)
    assert main(["--home", str(home), "init"]) == 0
    return home


def test_replay_scores_agreement_with_labels_and_executes_nothing(tmp_path, capsys):
    home = _home(tmp_path)
    traj = tmp_path / "traj.jsonl"
    assert main(["--home", str(home), "export", "--output", str(traj)]) == 0
    script = tmp_path / "policy.yaml"
    # step 1 is labelled correct (click 320,200); step 3 wrong, corrected to right_click (20, 370)
    script.write_text(yaml.safe_dump([
        {"action": {"type": "click", "x": 318, "y": 203}},        # agrees (within 20 px)
        {"action": {"type": "append_file", "path": "pwned.txt", "text": "x"}},  # disagrees; never executed
    ]))
    out = tmp_path / "replay.json"
    code = main(["--home", str(home), "replay", "--trajectory", str(traj), "--mock-script", str(script),
                 "--output", str(out)])
    assert code == 2
    report = json.loads(out.read_text())
    assert report["kind"] == "replay" and report["summary"]["steps"] == 2 and report["summary"]["agree"] == 1
    cases = {c["step"]: c for c in report["cases"]}
    assert cases[1]["agree"] and cases[1]["reference_source"] == "label"
    assert not cases[3]["agree"] and cases[3]["reference"]["type"] == "right_click"
    assert not list(home.rglob("pwned.txt"))  # decided, never dispatched
    assert "1/2 steps agree" in capsys.readouterr().out


def test_a_replay_report_times_the_whole_run_and_conway_report_reads_it(tmp_path, capsys):
    home = _home(tmp_path)
    traj = tmp_path / "traj.jsonl"
    assert main(["--home", str(home), "export", "--output", str(traj)]) == 0
    script = tmp_path / "policy.yaml"
    script.write_text(yaml.safe_dump([{"sleep": 0.3, "action": {"type": "click", "x": 318, "y": 203}},
                                      {"sleep": 0.3, "action": {"type": "click", "x": 20, "y": 370}}]))
    out = tmp_path / "replay.json"
    assert main(["--home", str(home), "replay", "--trajectory", str(traj), "--mock-script", str(script),
                 "--output", str(out)]) == 2
    report = json.loads(out.read_text())
    # the decisions are inside the run the report times (it was built after them)
    assert report["duration_s"] >= report["summary"]["wall_s"] > 0.5
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "summary: {" not in text and "agree 1/2 = 50.0%" in text
    assert "click (318, 203)" in text and "right_click (20, 370)" in text


def test_replay_against_recorded_actions(tmp_path):
    home = _home(tmp_path)
    traj = tmp_path / "traj.jsonl"
    assert main(["--home", str(home), "export", "--output", str(traj)]) == 0
    out = tmp_path / "replay.json"
    assert main(["--home", str(home), "replay", "--trajectory", str(traj), "--mock", "--against", "recorded",
                 "--output", str(out)]) == 2
    assert json.loads(out.read_text())["summary"]["steps"] == 7


def test_replay_of_an_unlabelled_trajectory_says_what_to_do(tmp_path, capsys):
    home = _home(tmp_path)
    (home / "labels.jsonl").unlink()
    traj = tmp_path / "traj.jsonl"
    assert main(["--home", str(home), "export", "--output", str(traj)]) == 0
    assert main(["--home", str(home), "replay", "--trajectory", str(traj), "--mock",
                 "--output", str(tmp_path / "r.json")]) == 1
    assert "conway review" in capsys.readouterr().err


def test_review_labels_a_step_from_the_command_line(tmp_path, capsys):
    home = _home(tmp_path)
    assert main(["--home", str(home), "review", "--step", "2", "--verdict", "wrong", "--action",
                 '{"type": "type", "text": "hello world"}', "--note", "typo"]) == 0
    lines = [json.loads(x) for x in (home / "labels.jsonl").read_text().splitlines()]
    assert lines[-1]["step"] == 2 and lines[-1]["source"] == "review" and lines[-1]["verdict"] == "wrong"
    assert lines[-1]["corrected_action"] == {"type": "type", "text": "hello world"}
    traj = tmp_path / "t.jsonl"
    assert main(["--home", str(home), "export", "--output", str(traj)]) == 0
    rec = json.loads(traj.read_text().splitlines()[1])
    assert rec["labels"]["verdict"] == "wrong" and rec["labels"]["note"] == "typo"
    capsys.readouterr()
    assert main(["--home", str(home), "review", "--step", "2", "--verdict", "wrong", "--action", "{nope"]) == 1
    assert "not JSON" in capsys.readouterr().err
    assert main(["--home", str(home), "review", "--step", "99", "--verdict", "correct"]) == 1


def test_interactive_review_writes_labels_until_quit(tmp_path):
    from conway.experience.labels import read_labels
    from conway.experience.review import review
    from conway.store.home import Home
    home = _home(tmp_path)
    (home / "labels.jsonl").unlink()
    answers = iter(["c", "bogus", "r", "w {\"type\": \"key\", \"key\": \"tab\"}", "q"])
    lines: list[str] = []
    n = review(Home(home), read=lambda _p: next(answers), say=lines.append)
    assert n == 3
    labels = read_labels(home / "labels.jsonl")
    verdicts = sorted((k[1], v.verdict) for k, v in labels.by_step.items())
    assert verdicts == [(1, "correct"), (2, "redundant"), (3, "wrong")]
    assert any("unknown answer" in line for line in lines)


def test_a_trajectory_is_read_record_by_record_and_a_bad_line_is_named(tmp_path):
    import pytest

    from conway.errors import UserError
    from conway.evals.replay import load_trajectory

    traj = tmp_path / "t.jsonl"
    good = [{"format": "conway-traj/1", "step": 1}, {"format": "conway-traj/1", "step": 2}]
    traj.write_text(json.dumps(good[0]) + "\n\n  \n" + json.dumps(good[1]) + "\n", encoding="utf-8")
    assert load_trajectory(traj) == good
    for body, message in (("{nope\n", f"{traj}:1 is not JSON; a trajectory is a conway-traj/1 JSONL file"),
                          ("\n[1, 2]\n", f"{traj}:2 is not a conway-traj/1 record"),
                          ('{"format": "conway-report/1"}\n', f"{traj}:1 is not a conway-traj/1 record"),
                          ("\n \n", f"trajectory {traj} is empty")):
        traj.write_text(body, encoding="utf-8")
        with pytest.raises(UserError) as err:
            load_trajectory(traj)
        assert str(err.value) == message


def test_steps_without_their_image_are_missing_screenshots_not_errors(tmp_path, capsys):
    home = _home(tmp_path)
    traj = tmp_path / "traj.jsonl"
    assert main(["--home", str(home), "export", "--output", str(traj)]) == 0
    recs = [json.loads(line) for line in traj.read_text().splitlines()]
    for rec in recs:  # what a session that kept no screenshots exports
        rec["observation"] = {**rec["observation"], "screenshot": None, "image": None}
    traj.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "replay.json"
    assert main(["--home", str(home), "replay", "--trajectory", str(traj), "--mock", "--output", str(out)]) == 2
    summary = json.loads(out.read_text())["summary"]
    assert (summary["steps"], summary["errors"], summary["missing_screenshots"]) == (2, 0, 2)
    assert "0 error(s), 2 missing screenshot(s)" in capsys.readouterr().out
